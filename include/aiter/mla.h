/*
 * Multi-head latent attention (MLA, DeepSeek-V2/V3/R1, Kimi K2, GLM-4.5): decode
 * over a paged cache of latent vectors, and the write of new latents into it.
 *
 * Every cached token is one latent row of 576 elements: the compressed KV (512)
 * followed by the rotated key part (64).  Keys are the whole rows, values their
 * first 512 elements, shared by every query head (the up-projections are absorbed
 * into the query and the output by the caller).
 *
 * Paged latent cache: kv_cache [num_blocks, page_size, 576], compact, in q's dtype
 * (fp16 or bf16) or fp8 (e4m3fn, e4m3fnuz) holding latent / kv_scale.  Token t of
 * sequence b lives in block block_table[b, t / page_size], row t % page_size.
 *
 * Aliasing: the index tensors (block_table, context_lens, slot_mapping) share no
 * byte with an output (out, lse, workspace, kv_cache): such a call is refused.
 */
#ifndef AITER_MLA_H
#define AITER_MLA_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aiter_mla_params {
  size_t struct_size;  /* sizeof(aiter_mla_params) */
  float softmax_scale; /* the logits' scale, > 0; the caller's (DeepSeek-V3: its
                          mscale^2 / sqrt(192)); aiter_mla_params_init leaves 0,
                          which a call refuses */
  float kv_scale;      /* fp8 cache: latent = stored * kv_scale (ignored otherwise) */
  DLTensor *lse;       /* NULL, or an fp32 [B, s_q, Hq] compact output receiving each
                          row's log-sum-exp of its scaled logits (natural log; -inf
                          for a row that sees no position) */
  int32_t num_splits;  /* 0: chosen from the shapes and the device; else 1 to 128
                          splits of each context (the workspace sized for it) */
} aiter_mla_params;

/* Fills params with the defaults: no scale (must be set), kv_scale 1, no lse
 * output, automatic splits. */
AITER_API void aiter_mla_params_init(aiter_mla_params *params);

/* Decode: q [B, s_q, Hq, 576] (fp16 or bf16, compact) holds s_q = 1 to 4 new
 * tokens of each sequence (multi-token prediction), the last s_q positions of its
 * context: new token i of sequence b is at position context_lens[b] - s_q + i and
 * sees the positions up to its own.  out [B, s_q, Hq, 512], q's dtype, compact.
 * block_table [B, max_blocks] int32 (unit last stride), context_lens [B] int32 in
 * [0, max_blocks * page_size]; every block id a sequence uses must lie in
 * [0, num_blocks).  A row that sees no position gets zeros (and lse -inf).
 *
 * Split-KV: each context is cut into splits that run in parallel and are merged,
 * so that a few long sequences fill a GPU; their partial results live in
 * `workspace` (any dtype, compact, 16-byte aligned, on q's device, at least the
 * bytes aiter_mla_decode_workspace_size gives; contents on entry do not matter).
 * workspace may be NULL when that size is 0.  The split count depends on the
 * shapes, params.num_splits and the device only, never on the values of
 * block_table or context_lens, so a call can be captured into a CUDA/HIP graph
 * and replayed with new contents.  No allocation, no host synchronization. */
AITER_API aiter_status aiter_mla_decode(DLTensor *out, const DLTensor *q, const DLTensor *kv_cache,
                                        const DLTensor *block_table, const DLTensor *context_lens,
                                        DLTensor *workspace, const aiter_mla_params *params, void *stream);

/* The workspace bytes aiter_mla_decode needs for q, kv_cache and block_table of
 * these shapes and `num_splits` (as params.num_splits: 0 automatic).  Their data
 * is not read, but they must be on one device this process can open. */
AITER_API aiter_status aiter_mla_decode_workspace_size(size_t *bytes, const DLTensor *q,
                                                       const DLTensor *kv_cache,
                                                       const DLTensor *block_table, int32_t num_splits);

/* Writes kv_c[t] ([T, 512]) and k_pe[t] ([T, 64]), both fp16 or bf16 of one
 * dtype with unit last stride, as one 576-wide row at slot slot_mapping[t] =
 * block * page_size + row of kv_cache [num_blocks, page_size, 576] (kv_c's dtype,
 * or fp8 storing x / scale rounded to nearest and saturated).  slot_mapping [T]
 * int32 or int64, compact; a negative slot skips the token.  A slot >= num_blocks
 * * page_size is an error on the CPU (nothing is written); on the GPU, where the
 * host cannot read the slots, such a token is skipped like a negative one. */
AITER_API aiter_status aiter_concat_and_cache_mla(DLTensor *kv_cache, const DLTensor *kv_c,
                                                  const DLTensor *k_pe, const DLTensor *slot_mapping,
                                                  float scale, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_MLA_H */
