// The gated activations of the fused MoE's stage 1, in fp32: act(gate) * up.
#pragma once

#include "../common/numeric.h"
#include "moe_params.h"

// g * sigmoid(a) = g / (1 + e^-a): +-0, never NaN, where e^-a overflows.
__device__ __forceinline__ float moe_times_sigmoid(float g, float a) { return fast_div(g, 1.0f + fast_exp(-a)); }

// erf(z) for z >= 0 within 1.5e-7 (Abramowitz & Stegun 7.1.26), odd extension.
__device__ __forceinline__ float moe_erf(float z) {
  const float t = fabsf(z), k = 1.0f / (1.0f + 0.3275911f * t);
  const float poly = ((((1.061405429f * k - 1.453152027f) * k + 1.421413741f) * k - 0.284496736f) * k + 0.254829592f) * k;
  const float r = 1.0f - poly * fast_exp(-t * t);
  return z < 0.0f ? -r : r;
}

__device__ __forceinline__ float moe_gated(int act, float g, float u) {
  if (act == kMoeSilu) return moe_times_sigmoid(g, g) * u;
  if (act == kMoeGelu) return 0.5f * g * (1.0f + moe_erf(g * 0.70710678118654752f)) * u;
  const float v = 0.79788456080286536f * (g + 0.044715f * g * g * g);  // 0.5 (1 + tanh v) = sigmoid(2v)
  return moe_times_sigmoid(g, 2.0f * v) * u;
}
