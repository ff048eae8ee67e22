/*
 * Mixture-of-experts: routing (top-k of softmax or sigmoid scores, grouped
 * DeepSeek-style selection), sorting of the token-expert pairs by expert, and
 * the fused two-stage expert MLP.
 *
 * Tie rule of every routing op: experts are ranked by their selection value,
 * larger first, equal values going to the lower expert id (groups: the lower
 * group id); NaN ranks below every number.  Without a correction bias the
 * selection value is the logit itself (softmax and sigmoid are increasing, so
 * this is the order of the scores, and it is exact: CPU and GPU choose the same
 * experts bit for bit).  With a bias it is float(sigmoid(logit)) + bias, the
 * sigmoid computed in double precision and rounded once on both backends (they
 * can differ only where a sigmoid lies within 2^-50 of a float rounding point).
 * Aliasing: outputs overlap no input and no other output; index tensors
 * (topk_ids, expert_mask, sorted ids) are read once (aiter.h).
 */
#ifndef AITER_MOE_H
#define AITER_MOE_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gating [T, E] fp32/fp16/bf16 -> softmax over E, then the k largest
 * probabilities (k = topk_weights.shape[1], 1 <= k <= E) in descending order,
 * ties going to the lower expert id.  topk_weights [T, k] fp32, topk_ids [T, k]
 * int32.  With renormalize != 0 the k weights of a token are divided by their sum. */
AITER_API aiter_status aiter_topk_softmax(DLTensor *topk_weights, DLTensor *topk_ids,
                                          const DLTensor *gating, int32_t renormalize,
                                          void *stream);

/* As aiter_topk_softmax with sigmoid(gating) as the scores (no normalization
 * over the experts). */
AITER_API aiter_status aiter_topk_sigmoid(DLTensor *topk_weights, DLTensor *topk_ids,
                                          const DLTensor *gating, int32_t renormalize,
                                          void *stream);

typedef enum aiter_moe_scoring {
  AITER_MOE_SCORE_SOFTMAX = 0,
  AITER_MOE_SCORE_SIGMOID = 1
} aiter_moe_scoring;

/* Grouped top-k (DeepSeek-V2/V3, vLLM's grouped_topk).  The E experts of gating
 * [T, E] form num_expert_group groups of E / num_expert_group consecutive
 * experts.  scores = softmax or sigmoid of gating (fp32).  Without
 * correction_bias a group ranks by its largest score; with correction_bias [E]
 * (fp32 or gating's dtype; sigmoid scoring only) an expert's choice value is
 * score + bias and a group ranks by the sum of its two largest choice values
 * (its one value for groups of one expert).  The topk_group best groups are
 * kept, then the k best experts within them by choice value (the score where
 * there is no bias), in descending order.  topk_weights are the chosen
 * experts' scores (without the bias), divided by their sum if renormalize,
 * then times routed_scaling_factor.  Needs E % num_expert_group == 0,
 * 1 <= topk_group <= num_expert_group, 1 <= k <= topk_group * E / num_expert_group. */
AITER_API aiter_status aiter_grouped_topk(DLTensor *topk_weights, DLTensor *topk_ids,
                                          const DLTensor *gating, const DLTensor *correction_bias,
                                          int32_t num_expert_group, int32_t topk_group,
                                          int32_t scoring, int32_t renormalize,
                                          float routed_scaling_factor, void *stream);

/* ---- sorting ----------------------------------------------------------------
 * The T * k token-expert pairs of topk_ids [T, k] (pair p = t * k + j) grouped
 * by expert, each expert's rows padded to a multiple of block_size, so that a
 * block of block_size rows holds pairs of one expert.  Upper bound of the rows:
 *   aiter_moe_sorting_max_rows(T, k, E, block_size)
 *     = round_down(T*k + min(E, T*k) * (block_size - 1), block_size)
 * (0 for T*k = 0), so callers allocate once for a fixed T.
 * Outputs: sorted_ids [R] int32 (R >= the bound): the pair of each row, T*k on
 * padding rows and on every row past num_valid; block_experts [R / block_size]
 * int32: the expert of each block (its index among the local experts with an
 * expert mask), -1 past num_valid; num_valid [1] int32: the rows in use (a
 * multiple of block_size).  Experts appear in increasing order; within one
 * expert the CPU lists pairs in increasing order, the GPU in an unspecified
 * order (the same set).
 * E <= 65536 (1024 on the GPU).
 * expert_mask [E] (int32 or uint8; optional): nonzero for the experts of
 * this rank (expert parallelism); pairs of other experts are dropped, and
 * block_experts count local experts only (the rank's w1/w2 hold those).
 * Ids outside [0, E): the CPU fails with AITER_ERR_INVALID_ARGUMENT; the GPU,
 * which cannot look at the values without a host sync, drops those pairs. */
AITER_API int64_t aiter_moe_sorting_max_rows(int64_t tokens, int64_t topk, int64_t experts,
                                             int64_t block_size);
AITER_API aiter_status aiter_moe_sorting(DLTensor *sorted_ids, DLTensor *block_experts,
                                         DLTensor *num_valid, const DLTensor *topk_ids,
                                         const DLTensor *expert_mask, int32_t num_experts,
                                         int32_t block_size, void *stream);

/* ---- fused MoE ----------------------------------------------------------------
 * out[t] = sum_j w[t, j] * down(e_j, act(gate(e_j, x[t])) * up(e_j, x[t])) with
 * e_j = topk_ids[t, j], w = topk_weights [T, k] (fp32), x [T, H], w1 [E, 2I, H]
 * (rows 0..I-1 gate, I..2I-1 up), w2 [E, H, I], out [T, H]; x, w1, w2 and out
 * bf16 or fp16, one dtype.  Stage 1 rounds act(gate) * up to that dtype, stage 2
 * each expert's output row; the weighted sum of a token's k rows is in fp32, in
 * j order (deterministic).  With weights_on_input x[t] * w[t, j] (rounded to
 * the dtype) enters the expert and the outputs are summed with weight 1
 * (Llama 4).  Shared experts: extra columns of topk_ids naming them, weight 1.
 * Pairs of experts outside expert_mask (optional, [E] over the global experts;
 * w1/w2 then hold the local experts only, in order) add nothing.
 * workspace: uint8 [aiter_fused_moe_workspace_size(...)] bytes, 16-byte aligned
 * (256 is best), its contents anything on entry.  Graph-capturable: no allocation, no host sync. */
typedef enum aiter_moe_activation {
  AITER_MOE_ACT_SILU = 0,
  AITER_MOE_ACT_GELU = 1,      /* exact (erf) GELU */
  AITER_MOE_ACT_GELU_TANH = 2
} aiter_moe_activation;

typedef struct aiter_fused_moe_params {
  size_t struct_size;          /* sizeof(aiter_fused_moe_params) */
  int32_t activation;          /* aiter_moe_activation */
  int32_t weights_on_input;    /* nonzero: routing weights scale the input (Llama 4) */
  int32_t block_size;          /* rows per expert block; 0: 64 (the GPU kernels' tile) */
  int32_t variant;             /* 0: the library's choice; 1: portable GPU kernel; 2: tensor-core kernel */
} aiter_fused_moe_params;

/* The defaults: struct_size set, SiLU, weights on the output, block 64, auto variant. */
AITER_API void aiter_fused_moe_params_init(aiter_fused_moe_params *params);

/* Bytes of workspace for T tokens of k pairs, E experts (global count, the
 * width of expert_mask when given), hidden H, intermediate I, weights of
 * elem_bytes bytes an element (2: bf16/fp16, aiter_fused_moe; 1: fp8,
 * aiter_fused_moe_fp8); params may be NULL (defaults). */
AITER_API size_t aiter_fused_moe_workspace_size(int64_t tokens, int64_t topk, int64_t experts,
                                                int64_t hidden, int64_t inter, int64_t elem_bytes,
                                                const aiter_fused_moe_params *params);
AITER_API aiter_status aiter_fused_moe(DLTensor *out, DLTensor *workspace, const DLTensor *x,
                                       const DLTensor *w1, const DLTensor *w2,
                                       const DLTensor *topk_weights, const DLTensor *topk_ids,
                                       const DLTensor *expert_mask,
                                       const aiter_fused_moe_params *params, void *stream);

/* fp8 experts: w1 [E, 2I, H] and w2 [E, H, I] both e4m3fn or both e4m3fnuz
 * (weight value = code * scale); x [T, H] and out bf16 or fp16.  Scales, fp32:
 *  - per channel: w1_scale [E, 2I], w2_scale [E, H]; each stage's input row is
 *    quantized with one dynamic scale (amax / 448 or / 240; 1 for a zero row);
 *  - block-scaled (DeepSeek-V3), chosen by 3-dim scales: w1_scale
 *    [E, 2I/128, H/128], w2_scale [E, H/128, I/128] (128 x 128 weight blocks);
 *    the input rows quantized per 1 x 128 group; needs H and I multiples of 128.
 * The stage inputs: each pair's input row (x[t], times its routing weight with
 * weights_on_input, in fp32) and stage 1's output row (after rounding to x's
 * dtype).  Products of the codes summed in fp32 (per 128-wide K group when
 * block-scaled), times the row / group and weight scales; otherwise as
 * aiter_fused_moe.  Workspace: aiter_fused_moe_workspace_size with elem_bytes 1. */
AITER_API aiter_status aiter_fused_moe_fp8(DLTensor *out, DLTensor *workspace, const DLTensor *x,
                                           const DLTensor *w1, const DLTensor *w2,
                                           const DLTensor *w1_scale, const DLTensor *w2_scale,
                                           const DLTensor *topk_weights, const DLTensor *topk_ids,
                                           const DLTensor *expert_mask,
                                           const aiter_fused_moe_params *params, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_MOE_H */
