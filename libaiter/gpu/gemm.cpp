// GPU GEMM variants (kernels/gemm/): filled in by the GEMM kernel work.
#include "ops/gemm.hpp"

namespace aiter {
namespace gpu {

VariantList<GemmArgs> gemm_variants(GemmOp) { return {}; }

}  // namespace gpu
}  // namespace aiter
