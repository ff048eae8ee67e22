// The fused MoE's expert stages as Triton kernels (kernels/triton/moe.py,
// built ahead of time for sm_90a and the AMD targets): the prefill path,
// chosen by gpu/moe_fused.cpp for many rows an expert where the manifest has them.
#pragma once

#include "ops/moe.hpp"

namespace aiter {
namespace gpu {

// Whether both Triton stages of this call's dtypes are built for the device and
// the call has what they were compiled to assume (64-row tiles inside the
// sorting's blocks, K a multiple of the kernels' K step, 16-byte aligned rows).
bool triton_moe_fits(const FusedMoeArgs &a, const GpuCall &call);

// Stage 1 (gate/up product and activation into inter_buf) or stage 2 (down
// product into pair_out), reading the sorted rows from the workspace; for fp8
// weights the stage's input is its per-row quantized copy (xq / hq).
aiter_status triton_moe_stage(const FusedMoeArgs &a, int stage, const GpuCall &call);

}  // namespace gpu
}  // namespace aiter
