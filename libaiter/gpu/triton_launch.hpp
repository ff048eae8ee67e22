// Launching a Triton kernel compiled ahead of time (kernels/triton/build.py):
// its arguments are offered by name and packed in the order the manifest's
// args column records (triton_args.hpp); its block and shared memory come from
// the manifest too.
#pragma once

#include <string>

#include "gpu/launch.hpp"
#include "gpu/triton_args.hpp"

namespace aiter {
namespace gpu {

// Whether the manifest has `op`/`variant` for the call's device (no loading).
bool triton_kernel_built(const GpuCall &call, const char *op, const std::string &variant);

aiter_status launch_triton(const GpuCall &call, const char *op, const std::string &variant, Dim3 grid,
                           const NamedArg *values, int value_count);

}  // namespace gpu
}  // namespace aiter
