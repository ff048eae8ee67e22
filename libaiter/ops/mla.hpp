// Checked arguments of the MLA ops (aiter_mla_decode, aiter_concat_and_cache_mla),
// shared by every backend, and the split plan both the size query and the
// launchers follow.  Index values (block ids, context lengths, slots) in host
// memory were validated before these are built; GPU kernels bounds-check the
// values they read from device memory themselves.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

constexpr int64_t kMlaLatentDim = 576;  // a cached row: compressed KV + rotated key part
constexpr int64_t kMlaValueDim = 512;   // the values: a row's first 512 elements
constexpr int64_t kMlaRopeDim = kMlaLatentDim - kMlaValueDim;
constexpr int64_t kMlaMaxNewTokens = 4;

// The split plan.  Rows (new token, query head) of a sequence go to the GPU in
// tiles of up to kMlaRowTile; a split covers at least kMlaMinSplitKeys positions.
// The automatic plan never exceeds mla_max_splits, which depends on the shapes
// only (so a caller sizes the workspace once for any device): enough splits for
// kMlaTargetBlocks blocks.
constexpr int64_t kMlaRowTile = 32;
constexpr int64_t kMlaMinSplitKeys = 256;
constexpr int64_t kMlaMaxSplits = 128;
constexpr int64_t kMlaTargetBlocks = 512;

inline int64_t mla_row_tiles(int64_t rows_per_seq) { return (rows_per_seq + kMlaRowTile - 1) / kMlaRowTile; }

// `capacity`: positions a block-table row can address (max_blocks * page_size).
inline int64_t mla_max_splits(int64_t batch, int64_t rows_per_seq, int64_t capacity) {
  const int64_t blocks = batch * mla_row_tiles(rows_per_seq);
  if (blocks <= 0) return 1;
  int64_t splits = (kMlaTargetBlocks + blocks - 1) / blocks;
  const int64_t by_length = (capacity + kMlaMinSplitKeys - 1) / kMlaMinSplitKeys;
  if (splits > by_length) splits = by_length;
  if (splits > kMlaMaxSplits) splits = kMlaMaxSplits;
  return splits < 1 ? 1 : splits;
}

// Room for fp32 partial outputs [rows, splits, 512] then the log-sum-exps
// [rows, splits], fp32.  (The GPU kernels store the partial outputs in out's
// 16-bit type, in the first half of that room: less traffic, the same size.)
inline size_t mla_workspace_bytes(int64_t rows, int64_t splits) {
  return splits <= 1 ? 0 : size_t(rows) * size_t(splits) * size_t(kMlaValueDim + 1) * sizeof(float);
}

struct MlaDecodeArgs {
  DType dtype;        // of q and out: f16 or bf16
  DType cache_dtype;  // q's dtype, e4m3fn or e4m3fnuz
  const void *q;      // [batch, q_tokens, q_heads, 576] compact
  void *out;          // [batch, q_tokens, q_heads, 512] compact
  float *lse;         // [batch, q_tokens, q_heads] fp32 compact, or null
  const void *kv_cache;  // [num_blocks, page_size, 576] compact
  int64_t num_blocks, page_size;
  const int32_t *block_table;  // [batch, max_blocks], validated on the host
  int64_t block_table_stride;  // elements between rows
  int64_t max_blocks;
  const int32_t *context_lens;  // [batch]
  int64_t batch, q_tokens, q_heads;
  float softmax_scale, kv_scale;  // kv_scale 1 unless the cache is fp8
  int64_t requested_splits;       // params.num_splits: 0 automatic
  int64_t max_splits;             // what the workspace holds (1: no split)
  void *workspace;
};

struct MlaCacheWriteArgs {
  DType dtype;        // of kv_c and k_pe
  DType cache_dtype;  // kv_c's dtype, e4m3fn or e4m3fnuz
  const void *kv_c, *k_pe;
  int64_t kv_c_stride, k_pe_stride;  // elements between tokens
  void *kv_cache;
  int64_t tokens;
  int64_t num_slots;  // num_blocks * page_size
  const void *slot_mapping;
  bool slots_are_int64;
  float scale;  // fp8 caches store x / scale
};

namespace cpu {
aiter_status mla_decode(const MlaDecodeArgs &a);
aiter_status concat_and_cache_mla(const MlaCacheWriteArgs &a);
}  // namespace cpu

namespace gpu {
aiter_status mla_decode(const MlaDecodeArgs &a, const GpuCall &call);
aiter_status mla_device_ready(const MlaDecodeArgs &a, const GpuCall &call);  // opens the device, runs nothing
aiter_status concat_and_cache_mla(const MlaCacheWriteArgs &a, const GpuCall &call);
}  // namespace gpu

}  // namespace aiter
