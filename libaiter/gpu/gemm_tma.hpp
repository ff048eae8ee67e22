// The TMA tensor maps of the warp-specialized wgmma GEMM kernels
// (kernels/gemm/gemm_wgmma_ws.cu): A and W as [batch][rows][K] tensors copied
// in boxes of 128 bytes of K by the tile's rows.
#pragma once

#include "gpu/driver.hpp"
#include "kernels/gemm/gemm_params.h"
#include "ops/gemm.hpp"

namespace aiter {
namespace gpu {

// Whether tensor maps can describe a call's A and W: extents that the kernel's
// 32-bit copy coordinates reach, byte strides under 2^40 and batches that do
// not overlap (16-byte alignment is checked with the other tensor-core kernels).
bool tma_can_copy(const GemmArgs &g);

// q = p plus the tensor maps of A (boxes of `bm` rows) and W (boxes of `w_rows` rows).
aiter_status tma_params(const GemmArgs &g, const GemmParams &p, int bm, int w_rows, Driver *driver,
                        GemmTmaParams *q);

}  // namespace gpu
}  // namespace aiter
