/*
 * Matrix products with the weight stored as W[N, K] (the layout of nn.Linear):
 * out[M, N] = A[M, K] . W[N, K]^T (+ bias[N]).
 * A, W and out are row-major with a unit stride along their last dimension; row
 * strides may be larger than the row (a slice of a bigger matrix).
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

#ifdef __cplusplus
}
#endif
#endif /* AITER_GEMM_H */
