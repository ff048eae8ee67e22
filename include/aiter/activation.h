/*
 * Gated activations of feed-forward layers.
 * x [..., 2*d] holds the gate in its first half and the up projection in its
 * second; out [..., d].  dtypes: fp32, fp16, bf16 (x and out the same).
 * Aliasing: out and scale overlap neither x nor each other (aiter.h).
 */
#ifndef AITER_ACTIVATION_H
#define AITER_ACTIVATION_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aiter_gelu_approx {
  AITER_GELU_EXACT = 0, /* 0.5 x (1 + erf(x / sqrt 2)) */
  AITER_GELU_TANH = 1   /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
} aiter_gelu_approx;

/* out = silu(x[..., :d]) * x[..., d:]   with silu(g) = g / (1 + exp(-g)) */
AITER_API aiter_status aiter_silu_and_mul(DLTensor *out, const DLTensor *x, void *stream);

/* out = gelu(x[..., :d]) * x[..., d:] */
AITER_API aiter_status aiter_gelu_and_mul(DLTensor *out, const DLTensor *x,
                                          aiter_gelu_approx approx, void *stream);

/* Fused silu_and_mul + dynamic per-row quantization: y = silu(x[..., :d]) *
 * x[..., d:] in fp32, then scale and out as in aiter_rmsnorm_quant (norm.h).
 * out [..., d] int8 / fp8 e4m3fn / e4m3fnuz / e5m2; scale [..., 1] fp32, compact. */
AITER_API aiter_status aiter_silu_and_mul_quant(DLTensor *out, DLTensor *scale, const DLTensor *x,
                                                void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_ACTIVATION_H */
