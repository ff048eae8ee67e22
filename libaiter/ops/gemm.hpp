// Checked arguments of the GEMM ops, shared by every backend.
#pragma once

#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

// A 2-D matrix with unit stride along its rows, rows `row_stride` elements apart.
struct MatrixRef {
  const void *data;
  int64_t row_stride;
};

// out[M, N] = A[M, K] . W[N, K]^T, then times a_scale[m] * w_scale[n] (a8w8
// only), plus bias[n]; the scales and bias are fp32 / out-dtype vectors.
struct GemmArgs {
  int64_t m, n, k;
  DType in_dtype;  // of A and W: fp32, fp16, bf16, int8 or an fp8 format
  DType out_dtype;  // fp32, fp16 or bf16
  MatrixRef a;
  MatrixRef w;
  void *out;
  int64_t out_row_stride;
  const void *bias;   // null, or [N] contiguous
  DType bias_dtype;   // fp32 or out_dtype
  const float *a_scale;  // null (a16w16), or [M] (per token) / [1] (per tensor)
  bool a_scale_per_token;
  const float *w_scale;  // null (a16w16), or [N] (per channel) / [1] (per tensor)
  bool w_scale_per_channel;
};

namespace cpu {
aiter_status gemm(const GemmArgs &a);
}  // namespace cpu

}  // namespace aiter
