// The fused MoE's sort (gpu/moe.cpp): moe_sorting's layout, from many pairs in
// two kernels of many blocks (kernels/moe/routing.cu: moe_sort_count, then
// moe_sort_scatter) where the workspace lends scratch for their counts, and the
// zeroing of the fp32 sums of the Triton stage 2 in the first of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/moe.hpp"

namespace aiter {
namespace gpu {

struct SortExtras {
  void *scratch = nullptr;  // free memory for the block counts (fused_moe: inter_buf, unused until stage 1)
  size_t scratch_bytes = 0;
  void *zero = nullptr;     // 16-byte aligned bytes to zero, or null
  int64_t zero_bytes = 0;
  bool one_block = false;   // the one-block kernel anyway (AITER_MOE_SORT=single: timing, tests)
};

// Sorts a's pairs into its outputs as moe_sorting does and zeroes extras.zero.
aiter_status moe_sorting_fused(const SortingArgs &a, const SortExtras &extras, const GpuCall &call);

}  // namespace gpu
}  // namespace aiter
