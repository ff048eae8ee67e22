// Which driver serves which tensors.
#include "gpu/launch.hpp"

#include "core/caller_values.hpp"
#include "core/error.hpp"

namespace aiter {
namespace gpu {

aiter_status open_cuda_driver(Driver **driver);
aiter_status open_hip_driver(Driver **driver);

aiter_status Driver::encode_tensor_map(const TensorMapSpec &, void *) {
  return fail(AITER_ERR_NO_KERNEL, "%s has no TMA tensor maps", name());
}

aiter_status Driver::max_active_clusters(Function, unsigned, unsigned, unsigned, int *) {
  return fail(AITER_ERR_NO_KERNEL, "%s has no thread-block clusters", name());
}

aiter_status Driver::max_block_smem(int, int *) {
  return fail(AITER_ERR_NO_KERNEL, "%s: no cooperative launch in libaiter", name());
}

aiter_status Driver::launch_cooperative(Function, Dim3, Dim3, unsigned, void *, void **, bool) {
  return fail(AITER_ERR_NO_KERNEL, "%s: no cooperative launch in libaiter", name());
}

static aiter_status no_ipc(const Driver *d) {
  return fail(AITER_ERR_NO_KERNEL, "%s: no IPC memory in libaiter", d->name());
}
aiter_status Driver::mem_alloc(size_t, void **) { return no_ipc(this); }
aiter_status Driver::mem_free(void *) { return no_ipc(this); }
aiter_status Driver::ipc_get_handle(void *, void *) { return no_ipc(this); }
aiter_status Driver::ipc_open(const void *, void **) { return no_ipc(this); }
aiter_status Driver::ipc_close(void *) { return no_ipc(this); }
aiter_status Driver::copy(void *, const void *, size_t) { return no_ipc(this); }

aiter_status driver_for(DLDeviceType type, Driver **driver) {
  if (type == kDLCUDA) return open_cuda_driver(driver);
  if (type == kDLROCM) return open_hip_driver(driver);
  return fail(AITER_ERR_INVALID_ARGUMENT, "device type %d is not a GPU libaiter can run", int(type));
}

}  // namespace gpu
}  // namespace aiter

extern "C" AITER_API aiter_status aiter_synchronize(DLDevice device, void *stream) {
  return aiter::guard("aiter_synchronize", [&] {
    const int32_t type = aiter::device_type_code(device);  // any int may arrive from C
    if (type == kDLCPU) return AITER_OK;
    if (!aiter::runnable_device_type(type))
      return aiter::fail(AITER_ERR_INVALID_ARGUMENT,
                         "aiter_synchronize: device: device type %d is not supported (expected cpu, cuda or rocm)",
                         int(type));
    aiter::gpu::DeviceScope scope(device);
    return scope.status() != AITER_OK ? scope.status() : scope.driver()->synchronize(stream);
  });
}
