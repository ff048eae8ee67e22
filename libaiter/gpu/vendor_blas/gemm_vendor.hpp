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

// How the warp-specialized tiles libaiter's heuristic takes for `g` (no block
// scales) cover an H100: `tiles` work items of bm x bn, one per multiprocessor
// at a time (`sms`), in `waves` rounds, the last holding `last_wave` tiles.
// Defined in gemm.cpp beside the heuristic; the vendor rule for fp8 reads it.
struct TileWaves {
  int bm, bn;
  int64_t tiles, sms, waves, last_wave;
};
TileWaves heuristic_tile_waves(const GemmArgs &g);

}  // namespace gpu
}  // namespace aiter
