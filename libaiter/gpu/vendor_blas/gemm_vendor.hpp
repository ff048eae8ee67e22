// The vendor BLAS as GEMM kernel variants: "cublaslt.<dtype>" on NVIDIA and
// "hipblaslt.<dtype>" on AMD ("....bs" for gemm_a8w8_blockscale), one code
// path through the vendor mapping (blaslt_vendor.hpp).  A variant runs a call
// when its library opens, AITER_VENDOR_BLAS is not 0 and the library's
// heuristic has an algorithm for the call's shape, dtypes and scaling.
#pragma once

#include <vector>

#include "ops/gemm.hpp"

namespace aiter {
namespace gpu {

// The vendor variants of `op`, listed first among its GPU variants: their
// good_fit is the rule that makes the library the heuristic's choice for a shape
// without a tuned row.
std::vector<Variant<GemmArgs>> vendor_gemm_variants(GemmOp op);

}  // namespace gpu
}  // namespace aiter
