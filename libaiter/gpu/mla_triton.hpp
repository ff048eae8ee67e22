// The Triton MLA decode kernel (kernels/triton/mla.py, compiled ahead of time
// where meson's Python imports triton): the matrix-core MLA decode of the CDNA
// targets (MFMA), and of sm_90a when AITER_MLA_KERNEL=triton.  mla_decode.cpp
// plans the splits and combines them; this launches the kernel in their place.
#pragma once

#include "gpu/launch.hpp"
#include "kernels/mla/mla_params.h"
#include "ops/mla.hpp"

namespace aiter {
namespace gpu {

// Rows (new token, query head) a program (mla_aot.py's BM).
constexpr int64_t kMlaTritonRows = 16;

// Whether the Triton kernel takes this call: on AMD, or on NVIDIA when
// AITER_MLA_KERNEL=triton, where this build has the kernel for the call's
// dtypes (bf16 q; caches of q's dtype or the target's fp8 format), with q,
// the cache and out on 16-byte boundaries.  AITER_MLA_KERNEL=portable: never.
// AITER_MLA_KERNEL=triton in a build without the Triton MLA kernels: an error
// (status set), so a test of the kernel cannot silently test another.
aiter_status mla_triton_chosen(const MlaDecodeArgs &a, const GpuCall &call, bool *chosen);

// Launches it with the plan's parameters (rows a program: kMlaTritonRows).
aiter_status mla_decode_triton(const MlaDecodeArgs &a, const MlaDecodeParams &p, const GpuCall &call);

}  // namespace gpu
}  // namespace aiter
