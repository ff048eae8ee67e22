/*
 * Matrix products with the weight stored as W[N, K] (the layout of nn.Linear):
 * out[M, N] = A[M, K] . W[N, K]^T (+ bias[N]).
 * A, W and out are row-major with a unit stride along their last dimension; row
 * strides may be larger than the row (a slice of a bigger matrix).
 *
 * Each op has several CPU (and GPU) kernel variants; aiter/tuning.h lists them,
 * forces one, and reports which one a call ran.
 *
 * Aliasing: out overlaps no input (aiter.h).
 */
#ifndef AITER_GEMM_H
#define AITER_GEMM_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A and W: fp32, fp16 or bf16 (the same); out: fp32, fp16 or bf16; bias: NULL,
 * fp32 or out's dtype.  Accumulates in fp32. */
AITER_API aiter_status aiter_gemm_a16w16(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                         const DLTensor *bias, void *stream);

/* A and W: both int8 (exact int32 accumulation) or both fp8 (e4m3fn, e4m3fnuz
 * or e5m2; fp32 accumulation).  a_scale: fp32 [M, 1] per token, or [1] / [1, 1]
 * per tensor; w_scale: fp32 [1, N] per channel, or [1] / [1, 1] per tensor.
 * out = (A . W^T) * a_scale * w_scale (+ bias), computed in fp32; out bf16,
 * fp16 or fp32; bias NULL, fp32 or out's dtype, [N]. */
AITER_API aiter_status aiter_gemm_a8w8(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                       const DLTensor *a_scale, const DLTensor *w_scale,
                                       const DLTensor *bias, void *stream);

/* DeepSeek-V3 style block-scaled fp8: A [M, K] and W [N, K] both e4m3fn or both
 * e4m3fnuz; a_scale: fp32 [M, ceil(K / 128)], one per token and 128-wide K
 * group; w_scale: fp32 [ceil(N / 128), ceil(K / 128)], one per 128 x 128 block
 * of W; both contiguous.  out[m, n] = sum over K groups g of
 * (sum of a[m, k] w[n, k] for k in g) * a_scale[m, g] * w_scale[n / 128, g],
 * computed in fp32 (K need not be a multiple of 128: the last group is short);
 * out bf16, fp16 or fp32 [M, N]. */
AITER_API aiter_status aiter_gemm_a8w8_blockscale(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                                  const DLTensor *a_scale, const DLTensor *w_scale, void *stream);

/* B independent products out[b] = A[b] . W[b]^T (+ bias): A [B, M, K], W
 * [B, N, K], out [B, M, N], with the dtypes of aiter_gemm_a16w16; bias NULL or
 * [N] (fp32 or out's dtype), shared by every b.  Each matrix has unit stride
 * along its rows and any row stride; the batch strides may be anything (0
 * shares one input matrix between all b), but no two elements of out may
 * overlap. */
AITER_API aiter_status aiter_batched_gemm_a16w16(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                                 const DLTensor *bias, void *stream);

/* The batched form of aiter_gemm_a8w8: A [B, M, K], W [B, N, K] (int8 or fp8,
 * the same), out [B, M, N]; a_scale fp32 [B, M, 1] per token or [1] / [1, 1]
 * per tensor; w_scale fp32 [B, 1, N] per channel or [1] / [1, 1]; bias NULL or
 * [N], shared by every b.  Layout rules as in aiter_batched_gemm_a16w16. */
AITER_API aiter_status aiter_batched_gemm_a8w8(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                               const DLTensor *a_scale, const DLTensor *w_scale,
                                               const DLTensor *bias, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_GEMM_H */
