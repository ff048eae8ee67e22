// Launching a kernel for the device a tensor lives on: find (and on first use
// load) its code object, make the device's primary context current, launch on
// the caller's stream, restore the caller's context.  No synchronization and no
// allocation, so launches can be captured into CUDA graphs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "gpu/driver.hpp"
#include "gpu/registry.hpp"

namespace aiter {
namespace gpu {

// Runs fn(driver) with the device's primary context current, then restores the
// caller's context.
template <class F>
aiter_status with_device(const GpuCall &call, F &&fn) {
  Driver *driver = nullptr;
  aiter_status s = driver_for(call.device.device_type, &driver);
  if (s != AITER_OK) return s;
  Context previous = nullptr;
  s = driver->enter(call.device.device_id, &previous);
  if (s != AITER_OK) return s;
  s = fn(driver);
  driver->restore(previous);
  return s;
}

// `params` is the kernel's single by-value argument.
template <class Params>
aiter_status launch(const GpuCall &call, const char *op, const std::string &variant, Dim3 grid, unsigned block,
                    const Params &params) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return AITER_OK;  // nothing to do
  return with_device(call, [&](Driver *driver) {
    Kernel kernel;
    aiter_status s = find_kernel(driver, call.device.device_id, op, variant, &kernel);
    if (s == AITER_OK && int(block) > kernel.max_block)
      s = fail(AITER_ERR_INTERNAL, "%s/%s: block of %u threads exceeds the kernel's bound %d", op, variant.c_str(),
               block, kernel.max_block);
    if (s != AITER_OK) return s;
    void *args[] = {const_cast<Params *>(&params)};
    return driver->launch(kernel.function, grid, Dim3{block, 1, 1}, unsigned(kernel.smem), call.stream, args);
  });
}

// Fills `count` 32-bit words at `dst` (device memory) with `value`, on the caller's stream.
inline aiter_status memset_u32(const GpuCall &call, void *dst, uint32_t value, size_t count) {
  if (count == 0) return AITER_OK;
  return with_device(call, [&](Driver *driver) { return driver->memset_u32_async(dst, value, count, call.stream); });
}

// The device's multiprocessor count, for sizing grid-stride launches; asked of
// the driver once per device.
inline aiter_status multiprocessors(const GpuCall &call, int *count) {
  static std::atomic<int> known[2][64] = {};  // [CUDA, other][device id]
  const int id = call.device.device_id;
  const bool cacheable = id >= 0 && id < 64;
  std::atomic<int> *slot = cacheable ? &known[call.device.device_type == kDLCUDA ? 0 : 1][id] : nullptr;
  if (slot && (*count = slot->load(std::memory_order_relaxed)) > 0) return AITER_OK;
  Driver *driver = nullptr;
  aiter_status s = driver_for(call.device.device_type, &driver);
  if (s == AITER_OK) s = driver->multiprocessor_count(id, count);
  if (s == AITER_OK && slot) slot->store(*count, std::memory_order_relaxed);
  return s;
}

}  // namespace gpu
}  // namespace aiter
