// The fused MoE's expert stages as Triton kernels (kernels/triton/moe.py,
// built ahead of time for sm_90a and the AMD targets): the prefill path,
// chosen by gpu/moe_fused.cpp for many rows an expert where the manifest has them.
#pragma once

#include "ops/moe.hpp"

namespace aiter {
namespace gpu {

// Which of the built tiles a call takes (kernels/triton/moe_aot.py): the
// widest, or the narrowest (on NVIDIA fp8: half as wide, two blocks an SM, for
// decode); where one width is built both name it.
enum class TritonTiles { wide, narrow };

// Whether both Triton stages of this call's dtypes are built for the device and
// the call has what they were compiled to assume (64-row tiles inside the
// sorting's blocks, K a multiple of the kernels' K step, 16-byte aligned rows).
bool triton_moe_fits(const FusedMoeArgs &a, TritonTiles tiles, const GpuCall &call);

// What stage 2 does with its rows: store each pair's row in pair_out (the
// combine kernel sums them: deterministic; the default), or add weight * row to
// the token's fp32 sums at the start of pair_out ([tokens, hidden], zeroed
// beforehand; needs topk >= 2 for the room) with fp32 atomics, whose order
// varies from run to run (bit-reproducible only where a token has at most 2
// pairs); AITER_MOE_COMBINE=sums, slower where measured (gpu/moe_fused.cpp).
enum class TritonCombine { pair_rows, fp32_sums };

// Stage 1 (gate/up product and activation into inter_buf) or stage 2 (down
// product, as `combine` says; or with splits > 1 K in that many parts, each
// part's fp32 rows in a.partials), reading the sorted rows from the workspace;
// for fp8 weights the stage's input is its per-row quantized copy (xq / hq).
aiter_status triton_moe_stage(const FusedMoeArgs &a, int stage, TritonTiles tiles, TritonCombine combine,
                              int splits, const GpuCall &call);

// The columns of hidden a stage-2 tile of this call's kernel has (0: none built).
int triton_moe_stage2_width(const FusedMoeArgs &a, TritonTiles tiles, const GpuCall &call);

}  // namespace gpu
}  // namespace aiter
