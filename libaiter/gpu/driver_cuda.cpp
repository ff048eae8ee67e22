// The CUDA driver API through dlopen("libcuda.so.1").  Only the functions below
// are resolved; their signatures are the driver API's, with opaque handles as void *.
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "gpu/driver_loader.hpp"

namespace aiter {
namespace gpu {
namespace {

using CUresult = int;
constexpr int kComputeMajor = 75, kComputeMinor = 76, kMultiprocessors = 16;  // CUdevice_attribute
constexpr int kMaxSmemOptIn = 97;                                            // CUdevice_attribute
constexpr int kMaxDynamicSmem = 8;                                           // CUfunction_attribute
// CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill
constexpr int kTensorMapUint8 = 0, kTensorMapUint16 = 1;
constexpr int kInterleaveNone = 0, kSwizzle128B = 3, kL2Promote256B = 3, kOobFillZero = 0;

// CUipcMemHandle, passed by value to cuIpcOpenMemHandle.
struct IpcHandle {
  char reserved[Driver::kIpcHandleBytes];
};
constexpr unsigned kIpcLazyEnablePeerAccess = 1;  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS

struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(int *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(Context *, int);
  CUresult (*cuCtxGetCurrent)(Context *);
  CUresult (*cuCtxSetCurrent)(Context);
  CUresult (*cuModuleLoadData)(Module *, const void *);
  CUresult (*cuModuleGetFunction)(Function *, Module, const char *);
  CUresult (*cuFuncSetAttribute)(Function, int, int);
  CUresult (*cuLaunchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             void *, void **, void **);
  CUresult (*cuMemsetD32Async)(uint64_t, unsigned, size_t, void *);
  CUresult (*cuStreamSynchronize)(void *);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  // Optional (CUDA 12 drivers and later): only the TMA and cluster kernels need them.
  CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int, int, int, int);
  CUresult (*cuOccupancyMaxActiveClusters)(int *, Function, const void *);
  CUresult (*cuLaunchKernelEx)(const void *, Function, void **, void **);
  CUresult (*cuLaunchCooperativeKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        void *, void **);
  // Optional: the custom all-reduce's shared buffers (libaiter/dist).
  CUresult (*cuMemAlloc)(uint64_t *, size_t);
  CUresult (*cuMemFree)(uint64_t);
  CUresult (*cuIpcGetMemHandle)(void *, uint64_t);
  CUresult (*cuIpcOpenMemHandle)(uint64_t *, IpcHandle, unsigned);
  CUresult (*cuIpcCloseMemHandle)(uint64_t);
  CUresult (*cuMemcpy)(uint64_t, uint64_t, size_t);
};

// CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte union of values.
struct alignas(8) LaunchAttribute {
  int id;
  int pad;
  int value[16];
};
constexpr int kCooperative = 2, kProgrammaticStreamSerialization = 6;  // CUlaunchAttributeID

// CUlaunchConfig, as cuLaunchKernelEx and cuOccupancyMaxActiveClusters read it
// (no cluster attribute: the kernels carry their cluster dimensions).
struct LaunchConfig {
  unsigned grid[3], block[3], smem;
  void *stream;
  LaunchAttribute *attrs;
  unsigned attr_count;
};

class CudaDriver final : public Driver {
 public:
  const char *name() const override { return "CUDA driver (libcuda.so.1)"; }

  aiter_status open() {
    std::string why;
    void *lib = open_library({"libcuda.so.1"}, &why);
    if (lib == nullptr)
      return fail(AITER_ERR_NO_DEVICE, "no CUDA driver: dlopen(libcuda.so.1) failed: %s", why.c_str());
    // _v2 are the names of the 64-bit-pointer versions in every driver since CUDA 4.
    const bool ok = resolve(lib, "cuInit", &api_.cuInit) && resolve(lib, "cuDeviceGetCount", &api_.cuDeviceGetCount) &&
                    resolve(lib, "cuDeviceGet", &api_.cuDeviceGet) &&
                    resolve(lib, "cuDeviceGetAttribute", &api_.cuDeviceGetAttribute) &&
                    resolve(lib, "cuDevicePrimaryCtxRetain", &api_.cuDevicePrimaryCtxRetain) &&
                    resolve(lib, "cuCtxGetCurrent", &api_.cuCtxGetCurrent) &&
                    resolve(lib, "cuCtxSetCurrent", &api_.cuCtxSetCurrent) &&
                    resolve(lib, "cuModuleLoadData", &api_.cuModuleLoadData) &&
                    resolve(lib, "cuModuleGetFunction", &api_.cuModuleGetFunction) &&
                    resolve(lib, "cuFuncSetAttribute", &api_.cuFuncSetAttribute) &&
                    resolve(lib, "cuLaunchKernel", &api_.cuLaunchKernel) &&
                    resolve(lib, "cuMemsetD32Async", &api_.cuMemsetD32Async) &&
                    resolve(lib, "cuStreamSynchronize", &api_.cuStreamSynchronize) &&
                    resolve(lib, "cuGetErrorString", &api_.cuGetErrorString);
    if (!ok) return fail(AITER_ERR_NO_DEVICE, "libcuda.so.1 lacks a driver API function libaiter needs: %s", dlerror());
    resolve(lib, "cuTensorMapEncodeTiled", &api_.cuTensorMapEncodeTiled);
    resolve(lib, "cuOccupancyMaxActiveClusters", &api_.cuOccupancyMaxActiveClusters);
    resolve(lib, "cuLaunchKernelEx", &api_.cuLaunchKernelEx);
    resolve(lib, "cuLaunchCooperativeKernel", &api_.cuLaunchCooperativeKernel);
    resolve(lib, "cuMemAlloc_v2", &api_.cuMemAlloc);
    resolve(lib, "cuMemFree_v2", &api_.cuMemFree);
    resolve(lib, "cuIpcGetMemHandle", &api_.cuIpcGetMemHandle);
    if (!resolve(lib, "cuIpcOpenMemHandle_v2", &api_.cuIpcOpenMemHandle))
      resolve(lib, "cuIpcOpenMemHandle", &api_.cuIpcOpenMemHandle);
    resolve(lib, "cuIpcCloseMemHandle", &api_.cuIpcCloseMemHandle);
    resolve(lib, "cuMemcpy", &api_.cuMemcpy);
    return check(api_.cuInit(0), "cuInit");
  }

  aiter_status device_count(int *count) override { return check(api_.cuDeviceGetCount(count), "cuDeviceGetCount"); }

  aiter_status device_target(int device, std::string *target) override {
    int dev, major, minor;
    aiter_status s = check(api_.cuDeviceGet(&dev, device), "cuDeviceGet");
    if (s == AITER_OK) s = check(api_.cuDeviceGetAttribute(&major, kComputeMajor, dev), "cuDeviceGetAttribute");
    if (s == AITER_OK) s = check(api_.cuDeviceGetAttribute(&minor, kComputeMinor, dev), "cuDeviceGetAttribute");
    if (s == AITER_OK) *target = "sm_" + std::to_string(major * 10 + minor);
    return s;
  }

  aiter_status multiprocessor_count(int device, int *count) override {
    int dev;
    aiter_status s = check(api_.cuDeviceGet(&dev, device), "cuDeviceGet");
    return s == AITER_OK ? check(api_.cuDeviceGetAttribute(count, kMultiprocessors, dev), "cuDeviceGetAttribute") : s;
  }

  aiter_status enter(int device, Context *previous) override {
    Context primary = nullptr;
    int dev;
    aiter_status s = check(api_.cuCtxGetCurrent(previous), "cuCtxGetCurrent");
    if (s == AITER_OK) s = check(api_.cuDeviceGet(&dev, device), "cuDeviceGet");
    if (s == AITER_OK) s = primary_context(dev, &primary);
    if (s == AITER_OK && primary != *previous) s = check(api_.cuCtxSetCurrent(primary), "cuCtxSetCurrent");
    return s;
  }

  void restore(Context previous) override {
    Context current = nullptr;
    if (api_.cuCtxGetCurrent(&current) == 0 && current != previous) api_.cuCtxSetCurrent(previous);
  }

  aiter_status load_module(const void *image, Module *module) override {
    return check(api_.cuModuleLoadData(module, image), "cuModuleLoadData");
  }

  aiter_status get_function(Module module, const char *symbol, Function *function) override {
    return check(api_.cuModuleGetFunction(function, module, symbol), "cuModuleGetFunction");
  }

  aiter_status set_max_dynamic_smem(Function function, int bytes) override {
    return check(api_.cuFuncSetAttribute(function, kMaxDynamicSmem, bytes), "cuFuncSetAttribute");
  }

  aiter_status launch(Function f, Dim3 g, Dim3 b, unsigned smem, void *stream, void **args,
                      bool programmatic) override {
    if (!programmatic || api_.cuLaunchKernelEx == nullptr)
      return check(api_.cuLaunchKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, smem, stream, args, nullptr), "cuLaunchKernel");
    LaunchAttribute overlap{kProgrammaticStreamSerialization, 0, {1}};
    const LaunchConfig config{{g.x, g.y, g.z}, {b.x, b.y, b.z}, smem, stream, &overlap, 1};
    return check(api_.cuLaunchKernelEx(&config, f, args, nullptr), "cuLaunchKernelEx");
  }

  aiter_status max_block_smem(int device, int *bytes) override {
    int dev;
    aiter_status s = check(api_.cuDeviceGet(&dev, device), "cuDeviceGet");
    return s == AITER_OK ? check(api_.cuDeviceGetAttribute(bytes, kMaxSmemOptIn, dev), "cuDeviceGetAttribute") : s;
  }

  aiter_status launch_cooperative(Function f, Dim3 g, Dim3 b, unsigned smem, void *stream, void **args,
                                  bool programmatic) override {
    if (programmatic && api_.cuLaunchKernelEx != nullptr) {
      LaunchAttribute attrs[2] = {{kCooperative, 0, {1}}, {kProgrammaticStreamSerialization, 0, {1}}};
      const LaunchConfig config{{g.x, g.y, g.z}, {b.x, b.y, b.z}, smem, stream, attrs, 2};
      return check(api_.cuLaunchKernelEx(&config, f, args, nullptr), "cuLaunchKernelEx (cooperative)");
    }
    if (api_.cuLaunchCooperativeKernel == nullptr)
      return Driver::launch_cooperative(f, g, b, smem, stream, args, programmatic);
    return check(api_.cuLaunchCooperativeKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, smem, stream, args),
                 "cuLaunchCooperativeKernel");
  }

  aiter_status memset_u32_async(void *dst, uint32_t value, size_t count, void *stream) override {
    return check(api_.cuMemsetD32Async(reinterpret_cast<uint64_t>(dst), value, count, stream), "cuMemsetD32Async");
  }

  aiter_status synchronize(void *stream) override {
    return check(api_.cuStreamSynchronize(stream), "cuStreamSynchronize");
  }

  aiter_status mem_alloc(size_t bytes, void **ptr) override {
    if (api_.cuMemAlloc == nullptr) return Driver::mem_alloc(bytes, ptr);
    uint64_t p = 0;
    const aiter_status s = check(api_.cuMemAlloc(&p, bytes), "cuMemAlloc");
    *ptr = reinterpret_cast<void *>(p);
    return s;
  }

  aiter_status mem_free(void *ptr) override {
    if (api_.cuMemFree == nullptr) return Driver::mem_free(ptr);
    return check(api_.cuMemFree(reinterpret_cast<uint64_t>(ptr)), "cuMemFree");
  }

  aiter_status ipc_get_handle(void *ptr, void *handle) override {
    if (api_.cuIpcGetMemHandle == nullptr) return Driver::ipc_get_handle(ptr, handle);
    return check(api_.cuIpcGetMemHandle(handle, reinterpret_cast<uint64_t>(ptr)), "cuIpcGetMemHandle");
  }

  aiter_status ipc_open(const void *handle, void **ptr) override {
    if (api_.cuIpcOpenMemHandle == nullptr) return Driver::ipc_open(handle, ptr);
    IpcHandle h;
    std::memcpy(&h, handle, sizeof h);
    uint64_t p = 0;
    const aiter_status s = check(api_.cuIpcOpenMemHandle(&p, h, kIpcLazyEnablePeerAccess), "cuIpcOpenMemHandle");
    *ptr = reinterpret_cast<void *>(p);
    return s;
  }

  aiter_status ipc_close(void *ptr) override {
    if (api_.cuIpcCloseMemHandle == nullptr) return Driver::ipc_close(ptr);
    return check(api_.cuIpcCloseMemHandle(reinterpret_cast<uint64_t>(ptr)), "cuIpcCloseMemHandle");
  }

  aiter_status copy(void *dst, const void *src, size_t bytes) override {
    if (api_.cuMemcpy == nullptr) return Driver::copy(dst, src, bytes);
    return check(api_.cuMemcpy(reinterpret_cast<uint64_t>(dst), reinterpret_cast<uint64_t>(src), bytes), "cuMemcpy");
  }

  aiter_status max_active_clusters(Function f, unsigned cluster, unsigned block, unsigned smem,
                                   int *count) override {
    if (api_.cuOccupancyMaxActiveClusters == nullptr) return Driver::max_active_clusters(f, cluster, block, smem, count);
    const LaunchConfig config{{cluster, 1, 1}, {block, 1, 1}, smem, nullptr, nullptr, 0};
    return check(api_.cuOccupancyMaxActiveClusters(count, f, &config), "cuOccupancyMaxActiveClusters");
  }

  aiter_status encode_tensor_map(const TensorMapSpec &spec, void *map) override {
    if (api_.cuTensorMapEncodeTiled == nullptr) return Driver::encode_tensor_map(spec, map);
    const int type = spec.element_bytes == 1 ? kTensorMapUint8 : kTensorMapUint16;
    const unsigned unit_steps[3] = {1, 1, 1};
    return check(api_.cuTensorMapEncodeTiled(map, type, 3, const_cast<void *>(spec.base), spec.dims, spec.byte_strides,
                                             spec.box, unit_steps, kInterleaveNone, kSwizzle128B, kL2Promote256B,
                                             kOobFillZero),
                 "cuTensorMapEncodeTiled");
  }

 private:
  aiter_status check(CUresult r, const char *call) {
    if (r == 0) return AITER_OK;
    const char *text = nullptr;
    if (api_.cuGetErrorString == nullptr || api_.cuGetErrorString(r, &text) != 0 || text == nullptr) text = "unknown";
    return fail(r == 100 ? AITER_ERR_NO_DEVICE : r == 2 ? AITER_ERR_OUT_OF_MEMORY : AITER_ERR_DEVICE,
                "%s failed: CUDA error %d: %s", call, r, text);
  }

  // Retained once per device and never released: the context outlives every call.
  aiter_status primary_context(int dev, Context *ctx) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (dev < 0 || dev >= kMaxDevices)
      return fail(AITER_ERR_INVALID_ARGUMENT, "device id %d: expected 0..%d", dev, kMaxDevices - 1);
    if (contexts_[dev] == nullptr) {
      aiter_status s = check(api_.cuDevicePrimaryCtxRetain(&contexts_[dev], dev), "cuDevicePrimaryCtxRetain");
      if (s != AITER_OK) return s;
    }
    *ctx = contexts_[dev];
    return AITER_OK;
  }

  static constexpr int kMaxDevices = 64;
  CudaApi api_{};
  std::mutex mutex_;
  Context contexts_[kMaxDevices] = {};
};

}  // namespace

aiter_status open_cuda_driver(Driver **driver) { return open_once<CudaDriver>(driver); }

}  // namespace gpu
}  // namespace aiter
