// Checked arguments of the normalization ops, shared by every backend.
#pragma once

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

struct NormArgs {
  DType dtype;          // of x, residual, out
  DType param_dtype;    // of weight and bias
  const void *x;
  RowView x_rows;
  const void *residual;  // add_rmsnorm only
  RowView residual_rows;
  void *residual_out;    // add_rmsnorm only
  RowView residual_out_rows;
  const void *weight;
  const void *bias;      // layernorm, may be null
  void *out;
  RowView out_rows;
  float epsilon;
  DType quant_dtype;    // the fused *_quant ops: out's 8-bit dtype; unknown otherwise
  float *scale;         // the fused *_quant ops: one fp32 scale per row, compact
  int64_t scale_count;  // its elements: the rows of x, also where rows hold no element
};

namespace cpu {
aiter_status rmsnorm(const NormArgs &a);
aiter_status add_rmsnorm(const NormArgs &a);
aiter_status layernorm(const NormArgs &a);
aiter_status rmsnorm_quant(const NormArgs &a);
aiter_status add_rmsnorm_quant(const NormArgs &a);
}  // namespace cpu

namespace gpu {
aiter_status rmsnorm(const NormArgs &a, const GpuCall &call);
aiter_status add_rmsnorm(const NormArgs &a, const GpuCall &call);
aiter_status layernorm(const NormArgs &a, const GpuCall &call);
aiter_status rmsnorm_quant(const NormArgs &a, const GpuCall &call);
aiter_status add_rmsnorm_quant(const NormArgs &a, const GpuCall &call);
}  // namespace gpu

}  // namespace aiter
