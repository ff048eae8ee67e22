// Checked arguments of the 8-bit quantization ops, shared by every backend.
#pragma once

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

struct QuantArgs {
  DType x_dtype;    // fp32, fp16 or bf16
  DType out_dtype;  // int8 or an fp8 format
  const void *x;
  RowView x_rows;
  void *out;
  RowView out_rows;
  float *scale;           // dynamic ops: written, one value or one per row of x
  int64_t scale_count;    // values in scale (per token: x's rows, even where a row is empty)
  const float *scale_in;  // the static op: read, one value (its value checked only for CPU tensors)
};

namespace cpu {
aiter_status quant_per_tensor_dynamic(const QuantArgs &a);
aiter_status quant_per_token_dynamic(const QuantArgs &a);
aiter_status quant_per_tensor_static(const QuantArgs &a);
}  // namespace cpu

namespace gpu {
aiter_status quant_per_tensor_dynamic(const QuantArgs &a, const GpuCall &call);
aiter_status quant_per_token_dynamic(const QuantArgs &a, const GpuCall &call);
aiter_status quant_per_tensor_static(const QuantArgs &a, const GpuCall &call);
}  // namespace gpu

}  // namespace aiter
