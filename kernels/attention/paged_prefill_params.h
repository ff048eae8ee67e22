// Arguments of the paged-prefill kernels (paged_prefill.cu, paged_prefill_mma.cu),
// shared with their launcher (libaiter/gpu/attention_paged_prefill.cpp): plain
// data, passed by value.
#pragma once

#include "attention_params.h"

// Prefill over a paged cache: q and out [Tq, Hq, D] packed by cu_seqlens_q;
// sequence b's Lq new tokens are the last positions of its context of
// context_lens[b] positions, whose keys and values are read from the caches
// [num_blocks, page_size, Hkv, D] (compact) through block_table row b.
//
// Grid: x = tiles (paged_rows.h: a tile never straddles sequences), y = Hq
// (tensor-core kernel: a tile is 64 tokens of one query head) or Hkv (portable
// kernel: a tile is 16 rows (token, query head) of one kv head).
struct PagedPrefillParams {
  SoftmaxParams sm;
  const void *q;
  void *out;
  float *lse;  // [Tq, Hq] fp32 compact, or null
  const void *k_cache, *v_cache;
  const int *block_table;   // [batch, max_blocks], rows `table_stride` apart
  const int *context_lens;  // [batch]
  const int *cu_seqlens_q;  // [batch + 1]
  long long q_token_stride, q_head_stride;  // elements
  long long out_token_stride, out_head_stride;
  long long table_stride;
  long long num_blocks;
  int max_blocks, page_size;
  int batch, total_q, q_heads, kv_heads;
  int causal;
  int vec;  // 16-byte loads of cache rows (portable kernel)
};
