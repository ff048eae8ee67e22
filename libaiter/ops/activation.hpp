// Checked arguments of the gated activations, shared by every backend.
#pragma once

#include "aiter/activation.h"
#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

struct ActivationArgs {
  DType dtype;      // of x (and of out, except in silu_and_mul_quant)
  const void *x;    // rows of 2*d: the gate, then the up projection
  RowView x_rows;
  void *out;        // rows of d
  RowView out_rows;
  aiter_gelu_approx approx;  // gelu_and_mul only
  // silu_and_mul_quant only:
  DType quant_dtype;    // out's: int8 or an fp8 format
  float *scale;         // one per row of x, compact
  int64_t scale_count;  // rows of x, even where d is 0 (the row views count none then)
};

namespace cpu {
aiter_status silu_and_mul(const ActivationArgs &a);
aiter_status gelu_and_mul(const ActivationArgs &a);
aiter_status silu_and_mul_quant(const ActivationArgs &a);
}  // namespace cpu

namespace gpu {
aiter_status silu_and_mul(const ActivationArgs &a, const GpuCall &call);
aiter_status gelu_and_mul(const ActivationArgs &a, const GpuCall &call);
aiter_status silu_and_mul_quant(const ActivationArgs &a, const GpuCall &call);
}  // namespace gpu

}  // namespace aiter
