// The Triton paged-prefill kernel (kernels/triton/paged_prefill.py, compiled
// ahead of time where meson's Python imports triton): the matrix-core prefill
// over a paged cache of the AMD targets (MFMA / WMMA), and of sm_90a when
// AITER_PAGED_PREFILL_KERNEL=triton (read at every call, as the launcher's
// =portable is).
#pragma once

#include "gpu/attention_common.hpp"
#include "gpu/launch.hpp"

namespace aiter {
namespace gpu {

// Launches the kernel where it takes the call (*taken true): on AMD, or on
// NVIDIA when forced, for 16-bit q with caches of q's dtype, head dims 64 and
// 128, caches on 16-byte boundaries, where this build has it.  Nothing is
// launched otherwise (*taken false), except that AITER_PAGED_PREFILL_KERNEL=triton
// in a build without the Triton kernels is an error, so a test of the kernel
// cannot silently test another.
aiter_status paged_prefill_triton(const DecodeArgs &a, const GpuCall &call, bool *taken);

}  // namespace gpu
}  // namespace aiter
