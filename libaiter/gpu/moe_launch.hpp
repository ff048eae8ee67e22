// Pieces the fused MoE's launchers share (defined in gpu/moe_fused.cpp): the
// kernels' argument block from the op's arguments, and how far stage 2 splits K.
#pragma once

#include <cstdint>

#include "kernels/moe/moe_params.h"
#include "ops/moe.hpp"

namespace aiter {
namespace gpu {

inline bool moe_aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// FusedMoeParams of a call (the workspace's buffers, shapes, strides, dtypes);
// splits 1, no partial rows, teams of one warp (the decode kernel's).
FusedMoeParams fused_moe_params(const FusedMoeArgs &a);

// Parts of stage 2's K (1, 2, 4 ... kMoeMaxSplits): doubled while `work`
// items times the parts stay under `wanted` and each part keeps at least
// `min_steps` of the `steps` K steps.
int moe_k_splits(int64_t work, int64_t wanted, int64_t steps, int64_t min_steps);

}  // namespace gpu
}  // namespace aiter
