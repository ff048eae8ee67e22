/*
 * Attention over packed variable-length sequences (prefill) and over a paged KV
 * cache (decode), and the write of new keys and values into that cache.
 *
 * Heads: Hq query heads share Hkv key/value heads (Hq % Hkv == 0: MHA, GQA, MQA);
 * query head h reads kv head h / (Hq / Hkv).  Head dim D is 64 or 128 (prefill:
 * also 256, and 192 for q and k with 128 for v).
 * q, k, v, out: fp32, fp16 or bf16 (the same), unit stride along D; token and
 * head strides may be anything (q, k and v are often views into one QKV buffer).
 * Softmax is computed in fp32.
 *
 * Paged cache: k_cache, v_cache [num_blocks, page_size, Hkv, D], compact.  Token
 * t of sequence b lives in block block_table[b, t / page_size], row t % page_size.
 * The cache dtype is q's dtype, or fp8 (e4m3fn, e4m3fnuz, e5m2) holding
 * value / scale with the scales given in the params.
 *
 * Aliasing: the index tensors (cu_seqlens_q/k, block_table, context_lens,
 * slot_mapping) share no byte with an output (out, k_cache, v_cache): such a
 * call is refused on every device.  out overlaps no input (aiter.h).
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
  /* Fields added later; a caller whose struct_size ends before one gets its default. */
  DLTensor *lse;       /* prefill: NULL, or an fp32 [Tq, Hq] compact output that receives
                          each query row's log-sum-exp of its scaled (and capped) logits,
                          natural log; -inf for a row that sees no key */
  float softcap;       /* > 0: logits become softcap * tanh(logits / softcap) (Gemma 2);
                          0: off */
} aiter_attention_params;

/* Fills params with the defaults: scale 1/sqrt(D), causal, no window, scales 1,
 * no lse output, no soft-cap. */
AITER_API void aiter_attention_params_init(aiter_attention_params *params);

/* Prefill.  q [Tq, Hq, D], k [Tk, Hkv, D], v [Tk, Hkv, Dv], out [Tq, Hq, Dv]:
 * (D, Dv) is (64, 64), (128, 128), (256, 256) or (192, 128).
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

/* Decode with split-KV (flash-decoding): each sequence's context is cut into
 * splits that run in parallel, and their partial results are merged, so that a
 * few long sequences fill a GPU.  The splits' partial results live in
 * `workspace` (any dtype, compact, 16-byte aligned, on q's device, at least the
 * bytes aiter_paged_decode_attention_workspace_size gives; its contents on entry
 * do not matter).  The number of splits depends on the shapes and the device
 * only, never on the values of block_table or context_lens, so a call can be
 * captured into a CUDA/HIP graph and replayed with new contents.
 * q may also be [B, Nq, Hq, D] with 1 <= Nq <= 8 new tokens per sequence (out
 * the same shape): the last Nq positions of each context, each seeing the
 * positions up to its own (speculative decoding).  Otherwise as
 * aiter_paged_decode_attention, which is this op with no split. */
AITER_API aiter_status aiter_paged_decode_attention_split_kv(DLTensor *out, const DLTensor *q,
                                                             const DLTensor *k_cache,
                                                             const DLTensor *v_cache,
                                                             const DLTensor *block_table,
                                                             const DLTensor *context_lens,
                                                             DLTensor *workspace,
                                                             const aiter_attention_params *params,
                                                             void *stream);

/* Prefill over a paged cache (chunked prefill, prefix caching): q [Tq, Hq, D]
 * packed by cu_seqlens_q [B + 1] (int32, from 0 to Tq, non-decreasing), out
 * [Tq, Hq, D]; sequence b's Lq = cu_seqlens_q[b + 1] - cu_seqlens_q[b] new tokens
 * are the last Lq positions of its context of context_lens[b] positions (so
 * Lq <= context_lens[b]), whose keys and values, the new ones included (written
 * first with aiter_reshape_and_cache), are read from the caches through
 * block_table [B, max_blocks] as in decode.  params: causal (new tokens see the
 * context up to their own position; 0: the whole context), window_left,
 * softcap, fp8 scales and lse ([Tq, Hq]) as for prefill.  On a GPU, where the
 * host cannot read cu_seqlens_q, block_table or context_lens, a length is
 * clamped to the table's capacity, a block id out of range masks its keys, a new
 * token whose position would fall before its context gets zeros, and rows of a
 * sequence with impossible cu_seqlens_q bounds are left unwritten. */
AITER_API aiter_status aiter_paged_prefill_attention(DLTensor *out, const DLTensor *q, const DLTensor *k_cache,
                                                     const DLTensor *v_cache, const DLTensor *block_table,
                                                     const DLTensor *context_lens,
                                                     const DLTensor *cu_seqlens_q,
                                                     const aiter_attention_params *params, void *stream);

/* The workspace bytes aiter_paged_decode_attention_split_kv needs for q ([B, Hq, D]
 * or [B, Nq, Hq, D]), k_cache and block_table of these shapes (their data is not
 * read, but they must be on one device this process can open; 0 when no split
 * can help). */
AITER_API aiter_status aiter_paged_decode_attention_workspace_size(size_t *bytes, const DLTensor *q,
                                                                   const DLTensor *k_cache,
                                                                   const DLTensor *block_table);

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
