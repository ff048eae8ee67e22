// Arguments of the attention kernels, shared by the kernel sources and the host
// launchers (libaiter/gpu/attention*.cpp): plain data, passed by value.
//
// Both kernels work on "rows": one (query token, query head) pair each.  The
// query heads of one kv head are consecutive rows, so a block's rows share the
// key/value tiles it loads (each KV byte read once per block of rows).
#pragma once

// What every attention kernel needs to compute a row's softmax.
struct SoftmaxParams {
  float scale;    // softmax scale, folded into the query
  float softcap;  // 0: off; else logits become softcap * tanh(logits / softcap)
  float k_scale;  // dequantization scales of an fp8 cache (1 otherwise)
  float v_scale;
  int window_left;  // < 0: unlimited
  int quant;        // QuantKind of an fp8 cache (fp8 variants only)
};

// Paged decode: q [batch, q_tokens, Hq, D] (q_tokens consecutive new tokens per
// sequence, the last positions of its context), caches [num_blocks, page_size,
// Hkv, D] compact.  Grid: x = batch * splits, y = Hkv * row_blocks.
struct DecodeParams {
  SoftmaxParams sm;
  const void *q;
  void *out;                 // [batch, q_tokens, Hq, D] (splits == 1)
  float *partial_out;        // workspace [rows, splits, D] fp32 (splits > 1)
  float *partial_lse;        // workspace [rows, splits] fp32 (splits > 1)
  const void *k_cache, *v_cache;
  const int *block_table;    // [batch, max_blocks], rows `table_stride` apart
  const int *context_lens;   // [batch]
  long long q_seq_stride, q_token_stride, q_head_stride;  // elements
  long long out_seq_stride, out_token_stride, out_head_stride;
  long long table_stride;
  long long num_blocks;
  int max_blocks, page_size;
  int batch, q_tokens, q_heads, kv_heads;
  int row_blocks;            // ceil(q_tokens * group / rows a block)
  int splits, split_keys;    // key positions [s * split_keys, (s + 1) * split_keys) per split
  int vec;                   // 16-byte loads of cache rows (always possible for compact caches)
};

// Merge of split-KV partial results: one block per row (sequence, token, head).
struct DecodeMergeParams {
  const float *partial_out, *partial_lse;  // as DecodeParams
  void *out;
  long long out_seq_stride, out_token_stride, out_head_stride;
  int rows, q_tokens, q_heads, splits, head_dim;  // rows: (sequence, new token, head)
};

// Prefill over packed sequences: q [Tq, Hq, DK], k [Tk, Hkv, DK], v [Tk, Hkv, DV],
// out [Tq, Hq, DV].  Grid: x = ceil(Tq * group / rows a block), y = Hkv.
struct PrefillParams {
  SoftmaxParams sm;
  const void *q, *k, *v;
  void *out;
  float *lse;                  // [Tq, Hq] fp32 compact, or null
  const int *cu_seqlens_q, *cu_seqlens_k;  // [batch + 1]
  long long q_token_stride, q_head_stride;
  long long k_token_stride, k_head_stride;
  long long v_token_stride, v_head_stride;
  long long out_token_stride, out_head_stride;
  int total_q, total_k;        // Tq, Tk
  int batch, q_heads, kv_heads;
  int causal;
  int vec;                     // 16-byte loads of k and v rows
};
