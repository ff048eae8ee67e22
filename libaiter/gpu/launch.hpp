// Launching a kernel for the device a tensor lives on: find (and on first use
// load) its code object, make the device's primary context current, launch on
// the caller's stream, restore the caller's context.  No synchronization and no
// allocation, so launches can be captured into CUDA graphs.
#pragma once

#include <string>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "gpu/driver.hpp"
#include "gpu/registry.hpp"

namespace aiter {
namespace gpu {

// `params` is the kernel's single by-value argument.
template <class Params>
aiter_status launch(const GpuCall &call, const char *op, const std::string &variant, Dim3 grid, unsigned block,
                    const Params &params) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return AITER_OK;  // nothing to do
  Driver *driver = nullptr;
  aiter_status s = driver_for(call.device.device_type, &driver);
  if (s != AITER_OK) return s;
  Context previous = nullptr;
  s = driver->enter(call.device.device_id, &previous);
  if (s != AITER_OK) return s;
  Kernel kernel;
  s = find_kernel(driver, call.device.device_id, op, variant, &kernel);
  if (s == AITER_OK && int(block) > kernel.max_block)
    s = fail(AITER_ERR_INTERNAL, "%s/%s: block of %u threads exceeds the kernel's bound %d", op, variant.c_str(),
             block, kernel.max_block);
  if (s == AITER_OK) {
    void *args[] = {const_cast<Params *>(&params)};
    s = driver->launch(kernel.function, grid, Dim3{block, 1, 1}, unsigned(kernel.smem), call.stream, args);
  }
  driver->restore(previous);
  return s;
}

// Fills `count` 32-bit words of device memory on the caller's stream.
inline aiter_status memset_u32(const GpuCall &call, void *dst, uint32_t value, size_t count) {
  if (count == 0) return AITER_OK;
  Driver *driver = nullptr;
  aiter_status s = driver_for(call.device.device_type, &driver);
  if (s != AITER_OK) return s;
  Context previous = nullptr;
  s = driver->enter(call.device.device_id, &previous);
  if (s != AITER_OK) return s;
  s = driver->memset_u32_async(dst, value, count, call.stream);
  driver->restore(previous);
  return s;
}

}  // namespace gpu
}  // namespace aiter
