/*
 * Normalizations over the last dimension.
 * dtypes: x, out, residual: fp32, fp16 or bf16 (all the same); weight and bias:
 * the same dtype as x, or fp32.  Statistics are computed in fp32.
 * x [..., H]; out and residual have x's shape; weight and bias are [H].
 * Aliasing: out may be x; add_rmsnorm's residual_out may be residual; nothing
 * else may overlap (aiter.h).
 */
#ifndef AITER_NORM_H
#define AITER_NORM_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = x / sqrt(mean(x^2) + epsilon) * weight */
AITER_API aiter_status aiter_rmsnorm(DLTensor *out, const DLTensor *x, const DLTensor *weight,
                                     float epsilon, void *stream);

/* residual_out = x + residual;  out = rmsnorm(residual_out) * weight.
 * residual_out may be the same tensor as residual (in place), out may be x. */
AITER_API aiter_status aiter_add_rmsnorm(DLTensor *out, DLTensor *residual_out, const DLTensor *x,
                                         const DLTensor *residual, const DLTensor *weight,
                                         float epsilon, void *stream);

/* out = (x - mean(x)) / sqrt(var(x) + epsilon) * weight + bias;  bias may be NULL. */
AITER_API aiter_status aiter_layernorm(DLTensor *out, const DLTensor *x, const DLTensor *weight,
                                       const DLTensor *bias, float epsilon, void *stream);

/* Fused norm + dynamic per-row quantization, one pass over x: y = rmsnorm(x) *
 * weight in fp32, scale[row] = amax(|y|) / qmax (1 where 0; never below FLT_MIN),
 * out = y / scale rounded to nearest even and saturated, as in aiter_quant_*.
 * out: int8, fp8 e4m3fn, e4m3fnuz or e5m2, x's shape; scale: fp32, x's shape with
 * the last dim 1, compact. */
AITER_API aiter_status aiter_rmsnorm_quant(DLTensor *out, DLTensor *scale, const DLTensor *x,
                                           const DLTensor *weight, float epsilon, void *stream);

/* residual_out = x + residual, then aiter_rmsnorm_quant of residual_out. */
AITER_API aiter_status aiter_add_rmsnorm_quant(DLTensor *out, DLTensor *scale, DLTensor *residual_out,
                                               const DLTensor *x, const DLTensor *residual,
                                               const DLTensor *weight, float epsilon, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_NORM_H */
