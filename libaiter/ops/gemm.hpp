// Checked arguments of the GEMM ops, shared by every backend.
#pragma once

#include "core/dtype.hpp"
#include "core/tensor.hpp"
#include "tuning/select.hpp"

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

  // Batched ops: `batch` independent products; matrix b of each operand starts
  // `*_batch_stride` elements after matrix b - 1 (0: shared by every b).
  int64_t batch = 1;
  int64_t a_batch_stride = 0, w_batch_stride = 0, out_batch_stride = 0;
  int64_t a_scale_batch_stride = 0, w_scale_batch_stride = 0;  // fp32 elements

  // gemm_a8w8_blockscale: a_scale is [M, ceil(K / kScaleBlock)] (one per token
  // and K group), w_scale [ceil(N / kScaleBlock), ceil(K / kScaleBlock)] (one per
  // 128 x 128 block of W, contiguous); a_scale_per_token and
  // w_scale_per_channel are unused.  a_scale[m, g] lies at
  // m * a_scale_row_stride + g * a_scale_group_stride: row-major (groups, 1),
  // or column-major (1, M), the layout F.scaled_mm and cuBLASLt take.
  bool block_scaled = false;
  int64_t a_scale_row_stride = 0, a_scale_group_stride = 1;
  bool a_scale_column_major() const { return block_scaled && a_scale_group_stride != 1; }
};

constexpr int64_t kScaleBlock = 128;

// The GEMM ops, each with its own variant lists.
enum class GemmOp { a16w16, a8w8, a8w8_blockscale, batched_a16w16, batched_a8w8 };

// The variants of `op` per backend, in heuristic order (see tuning/select.hpp).
namespace cpu {
VariantList<GemmArgs> gemm_variants(GemmOp op);
}  // namespace cpu
namespace gpu {
VariantList<GemmArgs> gemm_variants(GemmOp op);
}  // namespace gpu

// The tuned-op table of each GEMM op, and their names for aiter/tuning.h.
const TunedOp<GemmArgs> &gemm_op(GemmOp op);
std::vector<TunedOpNames> gemm_tuned_op_names();

}  // namespace aiter
