// The Triton paged decode kernel (kernels/triton/decode.py, compiled ahead of
// time where meson's Python imports triton): the matrix-core decode of the AMD
// targets (MFMA / WMMA), and of sm_90a when AITER_DECODE_KERNEL=triton.
// attention_decode.cpp plans the splits and merges them; this launches the
// kernel in their place.
#pragma once

#include "gpu/attention_common.hpp"
#include "gpu/launch.hpp"

namespace aiter {
namespace gpu {

// Rows (new token, query head) a program of the kernel (decode_aot.py's BM).
constexpr int kDecodeTritonRows = 16;
// Keys a tile (the larger of decode_aot.py's BN): splits start on its multiples.
constexpr int64_t kDecodeTritonKeys = 64;

// Whether the Triton kernel takes this call: on AMD, or on NVIDIA when
// AITER_DECODE_KERNEL=triton, for 16-bit queries, caches of their dtype or
// the target's fp8 format, head dims 64 and 128, caches on 16-byte boundaries,
// where this build has the kernel.  AITER_DECODE_KERNEL=portable: never.
// AITER_DECODE_KERNEL=triton in a build without the Triton decode kernels: an
// error (status set), so a test of the kernel cannot silently test another.
aiter_status decode_triton_chosen(const DecodeArgs &a, const GpuCall &call, bool *chosen);

// Launches it with the plan's parameters (rows a program: kDecodeTritonRows).
aiter_status paged_decode_triton(const DecodeArgs &a, const DecodeParams &p, const GpuCall &call);

}  // namespace gpu
}  // namespace aiter
