// The GPU driver as libaiter sees it: a handful of entry points resolved with
// dlopen at first GPU use (libcuda.so.1 for kDLCUDA tensors, libamdhip64.so for
// kDLROCM), so the library links no GPU runtime and loads on any machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "aiter/aiter.h"

namespace aiter {
namespace gpu {

using Module = void *;
using Function = void *;
using Context = void *;

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// A 3-D tiled TMA copy description (CUDA's cuTensorMapEncodeTiled): a tensor
// [dims[2]][dims[1]][dims[0]] of `element_bytes` elements whose dimension 1 and
// 2 strides are byte_strides[0] and [1], copied in boxes of box[0..2] elements
// into shared memory with the 128-byte swizzle; elements past the tensor read
// as zero.
struct TensorMapSpec {
  const void *base;
  int element_bytes;
  uint64_t dims[3];
  uint64_t byte_strides[2];
  uint32_t box[3];
};

// One vendor's driver.  Every call returns AITER_OK or AITER_ERR_DEVICE with the
// driver's own message in the last error.
class Driver {
 public:
  virtual ~Driver() = default;
  virtual const char *name() const = 0;
  virtual aiter_status device_count(int *count) = 0;
  // The code-object target of a device: "sm_90", "gfx942:sramecc+:xnack-", ...
  virtual aiter_status device_target(int device, std::string *target) = 0;
  virtual aiter_status multiprocessor_count(int device, int *count) = 0;
  // Makes the device's primary context current on this thread (what PyTorch,
  // CuPy and JAX use), remembering the caller's so restore() can put it back.
  // HIP has one context per device: there it is the current device that changes.
  virtual aiter_status enter(int device, Context *previous) = 0;
  virtual void restore(Context previous) = 0;
  virtual aiter_status load_module(const void *image, Module *module) = 0;
  virtual aiter_status get_function(Module module, const char *symbol, Function *function) = 0;
  virtual aiter_status set_max_dynamic_smem(Function function, int bytes) = 0;
  // programmatic: the kernel may start before the one ahead of it on the stream
  // has finished (it waits for it itself: enter_stream_order in
  // kernels/common/vendor.h); drivers without programmatic launch ignore it.
  virtual aiter_status launch(Function function, Dim3 grid, Dim3 block, unsigned smem, void *stream, void **args,
                              bool programmatic) = 0;
  virtual aiter_status memset_u32_async(void *dst, uint32_t value, size_t count, void *stream) = 0;
  virtual aiter_status synchronize(void *stream) = 0;
  // Writes the 128-byte descriptor of `spec` to `map`; drivers without TMA refuse.
  virtual aiter_status encode_tensor_map(const TensorMapSpec &spec, void *map);
  // How many clusters of `cluster` blocks of a kernel with compile-time cluster
  // dimensions can run at once: a cluster's blocks share one GPC, so this can
  // be fewer than multiprocessors / cluster (an H100: 30 clusters of four, not
  // 33).  Drivers without clusters refuse.
  virtual aiter_status max_active_clusters(Function function, unsigned cluster, unsigned block, unsigned smem,
                                           int *count);
  // Kernels whose blocks wait for one another: the most dynamic shared memory
  // a block may opt into on `device`, and a launch that makes every block
  // resident at once or fails (never a partial launch that could hang).
  // Drivers without cooperative launch refuse both.  programmatic: as for launch.
  virtual aiter_status max_block_smem(int device, int *bytes);
  virtual aiter_status launch_cooperative(Function function, Dim3 grid, Dim3 block, unsigned smem, void *stream,
                                          void **args, bool programmatic);
  // Device memory shared between processes (libaiter/dist: the custom
  // all-reduce's buffers), on the current device: plain allocations (IPC handles
  // need them), their 64-byte IPC handles, and a peer's buffer opened from its
  // handle (with peer access enabled).  Drivers without IPC refuse.
  static constexpr size_t kIpcHandleBytes = 64;
  virtual aiter_status mem_alloc(size_t bytes, void **ptr);
  virtual aiter_status mem_free(void *ptr);
  virtual aiter_status ipc_get_handle(void *ptr, void *handle);
  virtual aiter_status ipc_open(const void *handle, void **ptr);
  virtual aiter_status ipc_close(void *ptr);
  // A synchronous copy of `bytes` between host and device memory, either way.
  virtual aiter_status copy(void *dst, const void *src, size_t bytes);
};

// The driver for tensors of this device type, loaded once; AITER_ERR_NO_DEVICE
// (with the dlopen message) when the runtime library or a device is missing.
aiter_status driver_for(DLDeviceType type, Driver **driver);

}  // namespace gpu
}  // namespace aiter
