// Grid-stride loops whose first step runs before the loop.
//
// Written as a plain `for (i = first; i < end; i += step)` over 64-bit indices,
// such a loop had ptxas set up its strides (the step times each row stride)
// before the first step's loads: a stand-alone copy of the gated SiLU kernel
// issued its first load after 59 instructions, with the first step peeled off
// after 25, and its single-call CUDA-graph replay after an L2 flush took 5.60
// against 5.79 us (1 x 4096 bf16, H100, torch.compile 5.50; 2026-11-24,
// docs/performance.md "Few-token kernels").
#pragma once

#include "vendor.h"

// f(i) for i = first, first + step, ... below end.
template <class F>
__device__ __forceinline__ void for_strided(long long first, long long end, long long step, F &&f) {
  if (first >= end) return;
  f(first);
  for (long long i = first + step; i < end; i += step) f(i);
}
