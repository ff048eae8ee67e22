/*
 * Attention over packed variable-length sequences (prefill) and over a paged KV
 * cache (decode), and the write of new keys and values into that cache.
 *
 * Heads: Hq query heads share Hkv key/value heads (Hq % Hkv == 0: MHA, GQA, MQA);
 * query head h reads kv head h / (Hq / Hkv).  Head dim D is 64 or 128.
 * q, k, v, out: fp32, fp16 or bf16 (the same), unit stride along D; token and
 * head strides may be anything (q, k and v are often views into one QKV buffer).
 * Softmax is computed in fp32.
 *
 * Paged cache: k_cache, v_cache [num_blocks, page_size, Hkv, D], compact.  Token
 * t of sequence b lives in block block_table[b, t / page_size], row t % page_size.
 * The cache dtype is q's dtype, or fp8 (e4m3fn, e4m3fnuz, e5m2) holding
 * value / scale with the scales given in the params.
 */
#ifndef AITER_ATTENTION_H
#define AITER_ATTENTION_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aiter_attention_params {
  size_t struct_size;  /* sizeof(aiter_attention_params) */
  float softmax_scale; /* 0 means 1 / sqrt(D) */
  int32_t causal;      /* prefill: nonzero masks keys after the query, the two
                          sequences aligned at their ends (bottom-right) */
  int32_t window_left; /* < 0: unlimited; else key j is seen by query position i
                          only if i - j <= window_left (sliding window) */
  float k_scale;       /* fp8 cache: key = stored * k_scale (1 otherwise) */
  float v_scale;       /* fp8 cache: value = stored * v_scale (1 otherwise) */
} aiter_attention_params;

/* Fills params with the defaults: scale 1/sqrt(D), causal, no window, scales 1. */
AITER_API void aiter_attention_params_init(aiter_attention_params *params);

/* Prefill.  q [Tq, Hq, D], k and v [Tk, Hkv, D], out [Tq, Hq, D].
 * cu_seqlens_q, cu_seqlens_k [B + 1] int32, non-decreasing from 0 to Tq / Tk:
 * sequence b owns query rows [cu_q[b], cu_q[b+1]) and key rows [cu_k[b], cu_k[b+1]).
 * A query that sees no key gets zeros.  params may be NULL for the defaults. */
AITER_API aiter_status aiter_prefill_attention(DLTensor *out, const DLTensor *q,
                                               const DLTensor *k, const DLTensor *v,
                                               const DLTensor *cu_seqlens_q,
                                               const DLTensor *cu_seqlens_k,
                                               const aiter_attention_params *params,
                                               void *stream);

/* Decode: one new query token per sequence over its cached context.
 * q [B, Hq, D], out [B, Hq, D]; block_table [B, max_blocks] int32;
 * context_lens [B] int32 in [0, max_blocks * page_size]; every block id a
 * sequence uses must lie in [0, num_blocks).  The query is the last position of
 * its context (the window counts back from it).  A context of 0 gives zeros. */
AITER_API aiter_status aiter_paged_decode_attention(DLTensor *out, const DLTensor *q,
                                                    const DLTensor *k_cache,
                                                    const DLTensor *v_cache,
                                                    const DLTensor *block_table,
                                                    const DLTensor *context_lens,
                                                    const aiter_attention_params *params,
                                                    void *stream);

/* Writes key[t], value[t] ([T, Hkv, D], q's dtype rules) to cache slot
 * slot_mapping[t] = block * page_size + row; a negative slot skips the token
 * (padding).  A slot >= num_blocks * page_size is an error on the CPU (nothing
 * is written); on the GPU, where the host cannot read the slots, such a token
 * is skipped like a negative one and the others are written.  slot_mapping [T]
 * int32 or int64, compact.  For an fp8 cache the stored value is key / k_scale
 * (value / v_scale), rounded to nearest and saturated. */
AITER_API aiter_status aiter_reshape_and_cache(DLTensor *k_cache, DLTensor *v_cache,
                                               const DLTensor *key, const DLTensor *value,
                                               const DLTensor *slot_mapping, float k_scale,
                                               float v_scale, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_ATTENTION_H */
