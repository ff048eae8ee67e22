// Arguments of the MLA kernels, shared by the kernel sources (kernels/mla/) and
// the host launchers (libaiter/gpu/mla_*.cpp): plain data, passed by value.
//
// Decode works on "rows": (new token, query head) pairs of one sequence, row
// r = token * q_heads + head, consecutive in q and out.  A block takes a tile of
// rows of one sequence over one split of its context, so every latent byte it
// loads serves all of its rows.
#pragma once

// The most dynamic shared memory a block of the tensor-core decode
// (mla_mma.cu, its fp8 m32 variant; static_asserts there) asks for: devices
// that grant less (sm_80's 163 KB) run the portable kernel instead.
constexpr int kMlaMmaMaxSmem = 231424;
// Blocks an SM of its fp8 variant for 16-row tiles (a smaller ring: mla_mma.cu
// Ring), which the launcher's split plan counts.
constexpr int kMlaMmaFp8M16PerSm = 2;

// Decode: q [batch, rows, 576], out [batch, rows, 512], cache [num_blocks,
// page_size, 576], all compact.  Grid: x = batch * splits, y = row tiles.
struct MlaDecodeParams {
  const void *q;
  void *out;                 // splits == 1
  float *lse;                // [batch, rows] or null (splits == 1)
  void *partial_out;         // workspace [batch * rows, splits, 512] of q's type (splits > 1)
  float *partial_lse;        // workspace [batch * rows, splits] (splits > 1)
  const void *kv_cache;
  const int *block_table;    // [batch, max_blocks], rows `table_stride` apart
  const int *context_lens;   // [batch]
  long long table_stride;
  long long num_blocks;
  int max_blocks, page_size;
  int q_tokens, q_heads, rows;  // rows = q_tokens * q_heads
  int splits, split_keys;    // key positions [s * split_keys, (s + 1) * split_keys) per split
  float logit_scale;         // log2(e) * softmax scale * the cache's dequantization factor
  float value_scale;         // the cache's dequantization factor, applied to the output
  int quant;                 // QuantKind of an fp8 cache (fp8 variants only)
};

// Merge of the splits' partial results: a block per 128 columns of a row of the whole batch.
struct MlaCombineParams {
  const void *partial_out;   // [total rows, splits, 512] of out's type
  const float *partial_lse;  // [total rows, splits]
  void *out;                 // [total rows, 512]
  float *lse;                // [total rows] or null
  int splits;
};

// concat_and_cache_mla: one block per token.
struct MlaCacheParams {
  const void *kv_c, *k_pe;   // [tokens, 512], [tokens, 64], unit stride along the last dim
  void *kv_cache;            // [num_blocks, page_size, 576] compact
  const void *slot_mapping;  // [tokens] int32 or int64; values not checked on the host
  long long kv_c_stride, k_pe_stride;
  long long num_slots;
  float scale;               // fp8 caches store x / scale
  int slots_int64;
  int quant;                 // QuantKind of an fp8 cache (fp8 variants only)
};
