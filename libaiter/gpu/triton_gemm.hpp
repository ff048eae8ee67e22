// The Triton GEMM kernels (kernels/triton/gemm.py) as GEMM variants named
// triton_<dtype>.<BM>x<BN>x<BK>[.bs]: on AMD targets the matrix-core path, on
// sm_90a the same sources, tested there.
#pragma once

#include <vector>

#include "ops/gemm.hpp"

namespace aiter {
namespace gpu {

// Adds the Triton variants that `op` can use to `list`, before its portable
// ("generic.") variants, so the heuristic prefers them where they are built.
void add_triton_gemm_variants(GemmOp op, std::vector<Variant<GemmArgs>> *list);

}  // namespace gpu
}  // namespace aiter
