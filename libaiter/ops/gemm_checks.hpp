// Argument checks shared by the GEMM entry points (ops/gemm.cpp,
// gemm_batched.cpp, gemm_blockscale.cpp).  Each fills the GemmArgs fields it
// checked; later checks see c.ok() false and do nothing.
#pragma once

#include <initializer_list>

#include "core/tensor.hpp"
#include "ops/gemm.hpp"

namespace aiter {

constexpr std::initializer_list<DType> kFloatInputs = {DType::f32, DType::f16, DType::bf16};
constexpr std::initializer_list<DType> kQuantInputs = {DType::i8, DType::e4m3fn, DType::e4m3fnuz, DType::e5m2};

// A [M, K] and W [N, K] of one of `in_dtypes` (the same), out [M, N] of fp32,
// fp16 or bf16, bias NULL or [N]; with `batched`, one leading batch dim B on
// A, W and out.  Unit stride along the rows, extents that agree, one device,
// no two elements of out in one place.  Fills everything in `g` but the scales.
void check_operands(ArgCheck &c, GemmArgs &g, DLTensor *out, const DLTensor *a, const DLTensor *w,
                    const DLTensor *bias, std::initializer_list<DType> in_dtypes, bool batched);

// The shape a scale must have: `ndim` extents, written `names` in messages
// ("[M, 1]") and `kind` after them ("per token").
struct ScaleShape {
  int ndim;
  int64_t dims[3];
  const char *names;
  const char *kind;
};

// An fp32 contiguous scale on a's device shaped `expected`, or, when
// `per_tensor_allowed`, [1] / [1, 1] (then *per_element is false).  Returns its
// data, null after a failure.
const float *check_scale(ArgCheck &c, const DLTensor *s, const char *name, const ScaleShape &expected,
                         bool per_tensor_allowed, const DLTensor *a, bool *per_element);

}  // namespace aiter
