// Checked arguments of the attention ops, shared by every backend.  Every index
// the kernels use to address memory (cu_seqlens, block ids, context lengths,
// slots) has been validated against the tensors' extents before these are built,
// when the index tensors are in host memory; GPU kernels bounds-check the values
// they read from device memory themselves.
#pragma once

#include <cstdint>

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

// Element strides of a [tokens, heads, D] tensor (unit stride along D).
struct TokenHeadStrides {
  int64_t token = 0;
  int64_t head = 0;
};

// Sizes and softmax settings common to prefill and decode.
struct AttentionShape {
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;        // of q and k
  int64_t v_head_dim = 0;      // of v and out (head_dim, or 128 for a 192 head_dim)
  float softmax_scale = 0.0f;  // resolved: never 0
  int32_t window_left = -1;    // < 0: unlimited
  float softcap = 0.0f;        // > 0: logits -> softcap * tanh(logits / softcap)
};

struct PrefillArgs {
  DType dtype;  // of q, k, v, out
  AttentionShape shape;
  bool causal;
  const void *q, *k, *v;
  void *out;
  TokenHeadStrides q_strides, k_strides, v_strides, out_strides;
  const int32_t *cu_seqlens_q;  // [batch + 1], validated
  const int32_t *cu_seqlens_k;
  int64_t batch;
  int64_t total_q, total_k;  // Tq, Tk
  float *lse;                // [Tq, Hq] fp32 compact, or null
};

// A compact [num_blocks, page_size, Hkv, D] key/value cache pair.
struct PagedCache {
  DType dtype;  // q's dtype or an fp8 format
  const void *k, *v;
  int64_t num_blocks;
  int64_t page_size;
  float k_scale, v_scale;  // dequantization scales; 1 unless the cache is fp8
};

struct DecodeArgs {
  DType dtype;  // of q and out
  AttentionShape shape;
  const void *q;
  void *out;
  TokenHeadStrides q_strides, out_strides;  // a "token" is one new token of a sequence
  int64_t q_seq_stride, out_seq_stride;     // elements between sequences
  int64_t q_tokens;                         // new tokens a sequence (1 to 8), the last of its context
  PagedCache cache;
  const int32_t *block_table;  // [batch, max_blocks], validated
  int64_t block_table_stride;  // elements between rows
  int64_t max_blocks;
  const int32_t *context_lens;  // [batch], validated
  int64_t batch;
  void *workspace;        // split-KV scratch, or null: no split
  size_t workspace_bytes;
  // Prefill over the paged cache (aiter_paged_prefill_attention): sequence b's new
  // tokens are q rows [cu_seqlens_q[b], cu_seqlens_q[b + 1]), the last positions of
  // its context; null for decode (q_tokens new tokens every sequence).
  const int32_t *cu_seqlens_q = nullptr;
  int64_t total_q = 0;
  bool causal = true;
  float *lse = nullptr;  // [Tq, Hq] fp32 compact, or null (paged prefill only)
};

// Split-KV decode: at most this many splits of at least kDecodeMinSplitKeys
// positions each, over a context of up to `capacity` positions (max_blocks *
// page_size).  The workspace holds every split's partial output and its
// log-sum-exp, fp32, per (sequence, new token, query head).  Shapes only: the
// same on every device, so that a caller can size the workspace once.
constexpr int64_t kDecodeMinSplitKeys = 256;
constexpr int64_t kDecodeMaxSplits = 64;
inline int64_t decode_max_splits(int64_t capacity) {
  const int64_t splits = capacity / kDecodeMinSplitKeys;
  return splits < 1 ? 1 : splits > kDecodeMaxSplits ? kDecodeMaxSplits : splits;
}
inline size_t decode_workspace_bytes(int64_t rows, int64_t v_head_dim, int64_t capacity) {
  const int64_t splits = decode_max_splits(capacity);
  return splits == 1 || rows == 0 ? 0 : size_t(rows) * size_t(splits) * size_t(v_head_dim + 1) * sizeof(float);
}

struct CacheWriteArgs {
  DType dtype;        // of key and value
  DType cache_dtype;  // key's dtype or an fp8 format
  const void *key, *value;
  TokenHeadStrides key_strides, value_strides;
  void *k_cache, *v_cache;
  int64_t tokens, kv_heads, head_dim;
  int64_t num_slots;         // num_blocks * page_size
  const void *slot_mapping;  // [tokens] int32 or int64, compact; values validated on the host only
  bool slots_are_int64;
  float k_scale, v_scale;  // fp8 caches store x / scale
};

namespace cpu {
aiter_status prefill_attention(const PrefillArgs &a);
aiter_status paged_decode_attention(const DecodeArgs &a);
aiter_status paged_prefill_attention(const DecodeArgs &a);
aiter_status reshape_and_cache(const CacheWriteArgs &a);
}  // namespace cpu

namespace gpu {
aiter_status prefill_attention(const PrefillArgs &a, const GpuCall &call);
aiter_status paged_decode_attention(const DecodeArgs &a, const GpuCall &call);
aiter_status decode_device_ready(const DecodeArgs &a, const GpuCall &call);  // opens the device, runs nothing
aiter_status paged_prefill_attention(const DecodeArgs &a, const GpuCall &call);
aiter_status reshape_and_cache(const CacheWriteArgs &a, const GpuCall &call);
}  // namespace gpu

}  // namespace aiter
