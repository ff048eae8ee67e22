// The HIP runtime through dlopen("libamdhip64.so").  Only the functions below
// are resolved; their signatures are HIP's, with opaque handles as void * and
// hipError_t / hipDeviceAttribute_t as int.
//
// Never run on an AMD GPU: the machines libaiter was written on have none.  It is
// tested up to "no device" (ROCm 5.2's runtime from Debian, no GPU present).
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "gpu/amd_arch.hpp"
#include "gpu/driver_loader.hpp"

namespace aiter {
namespace gpu {
namespace {

using hipError = int;
constexpr hipError kNoDevice = 100, kOutOfMemory = 2;  // hipError_t
// hipDeviceAttribute_t.  The same numbers in ROCm 5.2 (Debian's
// /usr/include/hip/hip_runtime_api.h) and ROCm 6 and later (ROCm/rocm-systems
// include/hip/hip_runtime_api.h, which renamed an earlier entry to
// hipDeviceAttributeUnused1 but kept the order).
constexpr int kMultiprocessors = 63, kMaxSharedPerBlock = 74;

// hipDeviceProp_t is 792 bytes in ROCm 5 and 1472 in ROCm 6 (see amd_arch.cpp);
// the runtime writes the struct of its own version into this, with room to spare.
constexpr size_t kPropsBytes = 8192;

// hipIpcMemHandle_t, passed by value to hipIpcOpenMemHandle.
struct IpcHandle {
  char reserved[Driver::kIpcHandleBytes];
};
// Uncached device memory, so that flags one GPU writes are seen by another
// without cache maintenance (hipDeviceMallocUncached); peer access on open
// (hipIpcMemLazyEnablePeerAccess); copies in either direction (hipMemcpyDefault).
constexpr unsigned kMallocUncached = 3, kIpcLazyEnablePeerAccess = 1;
constexpr int kMemcpyDefault = 4;

struct HipApi {
  hipError (*hipInit)(unsigned);
  hipError (*hipGetDeviceCount)(int *);
  hipError (*hipGetDevice)(int *);
  hipError (*hipSetDevice)(int);
  hipError (*hipDeviceGetAttribute)(int *, int, int);
  hipError (*hipGetDeviceProperties)(void *, int);
  hipError (*hipModuleLoadData)(Module *, const void *);
  hipError (*hipModuleGetFunction)(Function *, Module, const char *);
  hipError (*hipModuleLaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    void *, void **, void **);
  hipError (*hipMemsetD32Async)(void *, int, size_t, void *);
  hipError (*hipStreamSynchronize)(void *);
  const char *(*hipGetErrorString)(hipError);
  // Optional: the custom all-reduce's shared buffers (libaiter/dist).
  hipError (*hipExtMallocWithFlags)(void **, size_t, unsigned);
  hipError (*hipMalloc)(void **, size_t);
  hipError (*hipFree)(void *);
  hipError (*hipIpcGetMemHandle)(void *, void *);
  hipError (*hipIpcOpenMemHandle)(void **, IpcHandle, unsigned);
  hipError (*hipIpcCloseMemHandle)(void *);
  hipError (*hipMemcpy)(void *, const void *, size_t, int);
};

class HipDriver final : public Driver {
 public:
  const char *name() const override { return "HIP runtime (libamdhip64.so)"; }

  aiter_status open() {
    // Debian and Ubuntu ship only the versioned names unless libamdhip64-dev is installed.
    std::string why;
    void *lib = open_library({"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}, &why);
    if (lib == nullptr)
      return fail(AITER_ERR_NO_DEVICE,
                  "no HIP runtime: dlopen(libamdhip64.so) failed: %s (libamdhip64.so.6 and .so.5 were tried too)",
                  why.c_str());
    // ROCm 6 renamed the entry point that fills its new hipDeviceProp_t layout;
    // hipGetDeviceProperties is the old one, kept for binaries built before.
    const bool props = resolve(lib, "hipGetDevicePropertiesR0600", &api_.hipGetDeviceProperties) ||
                       resolve(lib, "hipGetDeviceProperties", &api_.hipGetDeviceProperties);
    const bool ok = props && resolve(lib, "hipInit", &api_.hipInit) &&
                    resolve(lib, "hipGetDeviceCount", &api_.hipGetDeviceCount) &&
                    resolve(lib, "hipGetDevice", &api_.hipGetDevice) &&
                    resolve(lib, "hipSetDevice", &api_.hipSetDevice) &&
                    resolve(lib, "hipDeviceGetAttribute", &api_.hipDeviceGetAttribute) &&
                    resolve(lib, "hipModuleLoadData", &api_.hipModuleLoadData) &&
                    resolve(lib, "hipModuleGetFunction", &api_.hipModuleGetFunction) &&
                    resolve(lib, "hipModuleLaunchKernel", &api_.hipModuleLaunchKernel) &&
                    resolve(lib, "hipMemsetD32Async", &api_.hipMemsetD32Async) &&
                    resolve(lib, "hipStreamSynchronize", &api_.hipStreamSynchronize) &&
                    resolve(lib, "hipGetErrorString", &api_.hipGetErrorString);
    if (!ok) return fail(AITER_ERR_NO_DEVICE, "libamdhip64 lacks a HIP function libaiter needs: %s", dlerror());
    resolve(lib, "hipExtMallocWithFlags", &api_.hipExtMallocWithFlags);
    resolve(lib, "hipMalloc", &api_.hipMalloc);
    resolve(lib, "hipFree", &api_.hipFree);
    resolve(lib, "hipIpcGetMemHandle", &api_.hipIpcGetMemHandle);
    resolve(lib, "hipIpcOpenMemHandle", &api_.hipIpcOpenMemHandle);
    resolve(lib, "hipIpcCloseMemHandle", &api_.hipIpcCloseMemHandle);
    resolve(lib, "hipMemcpy", &api_.hipMemcpy);
    return init();
  }

  aiter_status device_count(int *count) override {
    return check(api_.hipGetDeviceCount(count), "hipGetDeviceCount");
  }

  aiter_status device_target(int device, std::string *target) override {
    std::vector<unsigned char> props(kPropsBytes, 0);
    aiter_status s = check(api_.hipGetDeviceProperties(props.data(), device), "hipGetDeviceProperties");
    if (s != AITER_OK) return s;
    *target = find_amd_arch(props.data(), props.size());
    if (target->empty())
      return fail(AITER_ERR_DEVICE, "hipGetDeviceProperties: device %d: no gcnArchName (gfx...) in what it returned",
                  device);
    return AITER_OK;
  }

  aiter_status multiprocessor_count(int device, int *count) override {
    return check(api_.hipDeviceGetAttribute(count, kMultiprocessors, device), "hipDeviceGetAttribute");
  }

  // HIP keeps one context per device behind hipSetDevice, the one PyTorch and
  // CuPy use too; the caller's current device is what gets restored.
  aiter_status enter(int device, Context *previous) override {
    int current = 0;
    aiter_status s = check(api_.hipGetDevice(&current), "hipGetDevice");
    if (s != AITER_OK) return s;
    *previous = reinterpret_cast<Context>(static_cast<intptr_t>(current));
    return current == device ? AITER_OK : check(api_.hipSetDevice(device), "hipSetDevice");
  }

  void restore(Context previous) override {
    const int device = static_cast<int>(reinterpret_cast<intptr_t>(previous));
    int current = 0;
    if (api_.hipGetDevice(&current) == 0 && current != device) api_.hipSetDevice(device);
  }

  aiter_status load_module(const void *image, Module *module) override {
    return check(api_.hipModuleLoadData(module, image), "hipModuleLoadData");
  }

  aiter_status get_function(Module module, const char *symbol, Function *function) override {
    return check(api_.hipModuleGetFunction(function, module, symbol), "hipModuleGetFunction");
  }

  // AMD kernels need no opt-in for dynamic shared memory (LDS): any amount up to
  // the device's per-block maximum (64 KiB on gfx90a and gfx942) can be launched.
  aiter_status set_max_dynamic_smem(Function, int bytes) override {
    int device = 0, most = 0;
    aiter_status s = check(api_.hipGetDevice(&device), "hipGetDevice");
    if (s == AITER_OK)
      s = check(api_.hipDeviceGetAttribute(&most, kMaxSharedPerBlock, device), "hipDeviceGetAttribute");
    if (s == AITER_OK && bytes > most)
      return fail(AITER_ERR_DEVICE, "kernel needs %d bytes of shared memory; HIP device %d has %d per block", bytes,
                  device, most);
    return s;
  }

  aiter_status launch(Function f, Dim3 g, Dim3 b, unsigned smem, void *stream, void **args, bool) override {
    return check(api_.hipModuleLaunchKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, smem, stream, args, nullptr),
                 "hipModuleLaunchKernel");
  }

  aiter_status memset_u32_async(void *dst, uint32_t value, size_t count, void *stream) override {
    return check(api_.hipMemsetD32Async(dst, static_cast<int>(value), count, stream), "hipMemsetD32Async");
  }

  aiter_status synchronize(void *stream) override {
    return check(api_.hipStreamSynchronize(stream), "hipStreamSynchronize");
  }

  aiter_status mem_alloc(size_t bytes, void **ptr) override {
    if (api_.hipExtMallocWithFlags != nullptr)
      return check(api_.hipExtMallocWithFlags(ptr, bytes, kMallocUncached), "hipExtMallocWithFlags");
    if (api_.hipMalloc == nullptr) return Driver::mem_alloc(bytes, ptr);
    return check(api_.hipMalloc(ptr, bytes), "hipMalloc");
  }

  aiter_status mem_free(void *ptr) override {
    if (api_.hipFree == nullptr) return Driver::mem_free(ptr);
    return check(api_.hipFree(ptr), "hipFree");
  }

  aiter_status ipc_get_handle(void *ptr, void *handle) override {
    if (api_.hipIpcGetMemHandle == nullptr) return Driver::ipc_get_handle(ptr, handle);
    return check(api_.hipIpcGetMemHandle(handle, ptr), "hipIpcGetMemHandle");
  }

  aiter_status ipc_open(const void *handle, void **ptr) override {
    if (api_.hipIpcOpenMemHandle == nullptr) return Driver::ipc_open(handle, ptr);
    IpcHandle h;
    std::memcpy(&h, handle, sizeof h);
    return check(api_.hipIpcOpenMemHandle(ptr, h, kIpcLazyEnablePeerAccess), "hipIpcOpenMemHandle");
  }

  aiter_status ipc_close(void *ptr) override {
    if (api_.hipIpcCloseMemHandle == nullptr) return Driver::ipc_close(ptr);
    return check(api_.hipIpcCloseMemHandle(ptr), "hipIpcCloseMemHandle");
  }

  aiter_status copy(void *dst, const void *src, size_t bytes) override {
    if (api_.hipMemcpy == nullptr) return Driver::copy(dst, src, bytes);
    return check(api_.hipMemcpy(dst, src, bytes, kMemcpyDefault), "hipMemcpy");
  }

 private:
  aiter_status check(hipError r, const char *call) {
    if (r == 0) return AITER_OK;
    return fail(r == kNoDevice ? AITER_ERR_NO_DEVICE : r == kOutOfMemory ? AITER_ERR_OUT_OF_MEMORY : AITER_ERR_DEVICE,
                "%s failed: HIP error %d: %s", call, r, text(r));
  }

  const char *text(hipError r) {
    const char *t = api_.hipGetErrorString != nullptr ? api_.hipGetErrorString(r) : nullptr;
    return t != nullptr ? t : "unknown";
  }

  // ROCm 5's hipInit fails with hipErrorInvalidDevice (101), not hipErrorNoDevice,
  // on a machine without an AMD GPU, so the device count decides what a failure
  // means; a runtime that initializes but counts no device is "no device" too.
  aiter_status init() {
    const hipError r = api_.hipInit(0);
    int count = 0;
    const hipError counted = api_.hipGetDeviceCount(&count);
    const bool none = counted == kNoDevice || (counted == 0 && count == 0);
    if (none && r != 0)
      return fail(AITER_ERR_NO_DEVICE, "no AMD GPU: hipInit failed: HIP error %d: %s (hipGetDeviceCount: %s)", r,
                  text(r), counted == 0 ? "0 devices" : text(counted));
    if (none) return fail(AITER_ERR_NO_DEVICE, "no AMD GPU: hipGetDeviceCount found none");
    return r != 0 ? check(r, "hipInit") : check(counted, "hipGetDeviceCount");
  }

  HipApi api_{};
};

}  // namespace

aiter_status open_hip_driver(Driver **driver) { return open_once<HipDriver>(driver); }

}  // namespace gpu
}  // namespace aiter
