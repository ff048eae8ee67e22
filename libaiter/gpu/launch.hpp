// Launching a kernel for the device a tensor lives on: find (and on first use
// load) its code object, make the device's primary context current, launch on
// the caller's stream, restore the caller's context.  No synchronization and no
// allocation, so launches can be captured into CUDA graphs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "gpu/driver.hpp"
#include "gpu/registry.hpp"

namespace aiter {
namespace gpu {

// The short dtype names in the kernels' symbols and variant names ("bf16", "e4m3fn").
inline const char *dtype_tag(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i8: return "i8";
    case DType::e4m3fn: return "e4m3fn";
    case DType::e4m3fnuz: return "e4m3fnuz";
    default: return "e5m2";
  }
}

// The driver of a device with its primary context current, for one scope;
// the caller's context is restored when the scope ends.
class DeviceScope {
 public:
  explicit DeviceScope(DLDevice device) {
    status_ = driver_for(device.device_type, &driver_);
    if (status_ == AITER_OK) status_ = driver_->enter(device.device_id, &previous_);
    entered_ = status_ == AITER_OK;
  }
  ~DeviceScope() {
    if (entered_) driver_->restore(previous_);
  }
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;

  aiter_status status() const { return status_; }
  Driver *driver() const { return driver_; }

 private:
  Driver *driver_ = nullptr;
  Context previous_ = nullptr;
  aiter_status status_ = AITER_OK;
  bool entered_ = false;
};

// The kernel `op`/`variant` for the scope's device, checked to take `block` threads.
inline aiter_status find_for_block(const DeviceScope &scope, const GpuCall &call, const char *op,
                                   const std::string &variant, unsigned block, Kernel *kernel) {
  if (scope.status() != AITER_OK) return scope.status();
  aiter_status s = find_kernel(scope.driver(), call.device.device_id, op, variant, kernel);
  if (s == AITER_OK && int(block) > kernel->max_block)
    return fail(AITER_ERR_INTERNAL, "%s/%s: block of %u threads exceeds the kernel's bound %d", op, variant.c_str(),
                block, kernel->max_block);
  return s;
}

// `params` is the kernel's single by-value argument.
template <class Params>
aiter_status launch(const GpuCall &call, const char *op, const std::string &variant, Dim3 grid, unsigned block,
                    const Params &params) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return AITER_OK;  // nothing to do
  DeviceScope scope(call.device);
  Kernel kernel;
  aiter_status s = find_for_block(scope, call, op, variant, block, &kernel);
  if (s != AITER_OK) return s;
  void *args[] = {const_cast<Params *>(&params)};
  return scope.driver()->launch(kernel.function, grid, Dim3{block, 1, 1}, unsigned(kernel.smem), call.stream, args,
                                kernel.programmatic);
}

// Launches `op`/`variant` with every block resident at once, so that its blocks
// may wait for one another, `smem` bytes of dynamic shared memory a block (opted
// into on the first launch that needs more than the manifest's: past the
// driver's default, a cooperative launch fails with "too many blocks").  Fails
// rather than launching fewer blocks.
template <class Params>
aiter_status launch_cooperative(const GpuCall &call, const char *op, const std::string &variant, Dim3 grid,
                                unsigned block, unsigned smem, const Params &params) {
  DeviceScope scope(call.device);
  Kernel kernel;
  aiter_status s = find_for_block(scope, call, op, variant, block, &kernel);
  if (s == AITER_OK && int(smem) > kernel.smem_allowed)
    s = allow_dynamic_smem(scope.driver(), call.device.device_id, op, variant, int(smem), &kernel);
  if (s != AITER_OK) return s;
  void *args[] = {const_cast<Params *>(&params)};
  return scope.driver()->launch_cooperative(kernel.function, grid, Dim3{block, 1, 1}, smem, call.stream, args,
                                            kernel.programmatic);
}

// Fills `count` 32-bit words of device memory on the caller's stream.
inline aiter_status memset_u32(const GpuCall &call, void *dst, uint32_t value, size_t count) {
  if (count == 0) return AITER_OK;
  DeviceScope scope(call.device);
  if (scope.status() != AITER_OK) return scope.status();
  return scope.driver()->memset_u32_async(dst, value, count, call.stream);
}

// Per-device caches keep one slot per GPU: CUDA devices 0..63, then ROCm devices
// 0..63 (a process may hold both, and their ids overlap); -1 past 64 devices.
constexpr int kDeviceSlots = 128;
inline int device_slot(DLDevice device) {
  if (device.device_id < 0 || device.device_id >= kDeviceSlots / 2) return -1;
  return (device.device_type == kDLCUDA ? 0 : kDeviceSlots / 2) + device.device_id;
}

// The device's multiprocessor count, for sizing grid-stride launches; asked of
// the driver once per device.
inline aiter_status multiprocessors(const GpuCall &call, int *count) {
  static std::atomic<int> known[kDeviceSlots] = {};
  const int index = device_slot(call.device);
  std::atomic<int> *slot = index >= 0 ? &known[index] : nullptr;
  if (slot && (*count = slot->load(std::memory_order_relaxed)) > 0) return AITER_OK;
  Driver *driver = nullptr;
  aiter_status s = driver_for(call.device.device_type, &driver);
  if (s == AITER_OK) s = driver->multiprocessor_count(call.device.device_id, count);
  if (s == AITER_OK && slot) slot->store(*count, std::memory_order_relaxed);
  return s;
}

// The most dynamic shared memory a block of a cooperatively launched kernel may
// use on the call's device, asked of the driver once per device; 0 where the
// driver has no cooperative launch (the caller then takes another path).
inline aiter_status cooperative_smem_limit(const GpuCall &call, int *bytes) {
  static std::atomic<int> known[kDeviceSlots] = {};  // bytes + 1; 0: not asked yet
  const int index = device_slot(call.device);
  std::atomic<int> *slot = index >= 0 ? &known[index] : nullptr;
  const int seen = slot ? slot->load(std::memory_order_relaxed) : 0;
  if (seen > 0) return *bytes = seen - 1, AITER_OK;
  Driver *driver = nullptr;
  aiter_status s = driver_for(call.device.device_type, &driver);
  if (s != AITER_OK) return s;
  if (driver->max_block_smem(call.device.device_id, bytes) != AITER_OK) {
    clear_error();  // no cooperative launch
    *bytes = 0;
  }
  if (slot) slot->store(*bytes + 1, std::memory_order_relaxed);
  return AITER_OK;
}

// How many clusters of `cluster` blocks of `op`/`variant` run at once on the
// call's device (persistent clustered kernels size their grid by it: a cluster
// launched past it waits for a whole cluster to finish); asked of the driver
// once per loaded kernel, then read under a lock without allocating.  Drivers
// without the query: multiprocessors / cluster.
inline aiter_status active_clusters(const GpuCall &call, const char *op, const std::string &variant,
                                    unsigned cluster, unsigned block, int *count) {
  static std::mutex lock;
  static std::unordered_map<Function, int> known;  // loaded kernels are per device
  int sms = 0;
  aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  DeviceScope scope(call.device);
  if (scope.status() != AITER_OK) return scope.status();
  Kernel kernel;
  s = find_kernel(scope.driver(), call.device.device_id, op, variant, &kernel);
  if (s != AITER_OK) return s;
  {
    std::lock_guard<std::mutex> guard(lock);
    const auto found = known.find(kernel.function);
    if (found != known.end()) return *count = found->second, AITER_OK;
  }
  if (scope.driver()->max_active_clusters(kernel.function, cluster, block, unsigned(kernel.smem), count) != AITER_OK ||
      *count <= 0) {
    clear_error();  // no answer: the multiprocessors' share
    *count = sms / int(cluster);
  }
  std::lock_guard<std::mutex> guard(lock);
  known[kernel.function] = *count;
  return AITER_OK;
}

// True where environment variable `name` is `value`: the switches that force a
// kernel or path for tests and timing.  Launchers read them once (a static).
inline bool env_is(const char *name, const char *value) {
  const char *env = std::getenv(name);
  return env != nullptr && std::strcmp(env, value) == 0;
}

// `name` says "portable": a launcher with a tensor-core kernel then runs its
// portable one (the AMD targets') on NVIDIA too, so that kernel is tested and
// timed where no AMD GPU is at hand.
inline bool portable_requested(const char *name) { return env_is(name, "portable"); }

}  // namespace gpu
}  // namespace aiter
