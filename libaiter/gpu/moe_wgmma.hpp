// The fused MoE's fp8 stages (per channel and block-scaled) as Hopper
// warp-specialized TMA + wgmma kernels (kernels/moe/moe_wgmma.cu, sm_90a): chosen by gpu/moe_fused.cpp
// over the Triton stages where both run (measured faster: docs/performance_moe.md).
#pragma once

#include "ops/moe.hpp"

namespace aiter {
namespace gpu {

// Whether both stages can run this call: an NVIDIA device with the sm_90a code
// objects, e4m3fn weights with per-channel scales or 128 x 128 block scales
// (hidden and inter multiples of 128), bf16 or f16 outputs, sorting
// blocks of a multiple of 64 rows and at most kMoeWgmmaMaxTiles of 64 in the
// rows' bound (the kernel's tile list), hidden and inter multiples of 16 (the
// TMA maps' 16-byte row strides) and at least 128, the copies' operands 16-byte
// aligned.
bool wgmma_moe_fits(const FusedMoeArgs &a, const GpuCall &call);

// Stage 1 (gate/up products and activation into inter_buf, from xq) or stage 2
// (down products into pair_out's pair rows, from hq).
aiter_status wgmma_moe_stage(const FusedMoeArgs &a, int stage, const GpuCall &call);

}  // namespace gpu
}  // namespace aiter
