// Opening cuBLASLt / hipBLASLt: the library, every function of
// blaslt_functions.def under the vendor's names, and the two runtime functions
// the workspace needs.  Once per vendor and process; a failure is remembered.
#include "gpu/vendor_blas/blaslt_api.hpp"

#include <mutex>
#include <string>

#include "gpu/driver_loader.hpp"

namespace aiter {
namespace gpu {
namespace blas {
namespace {

struct Opened {
  BlasLtApi api{};
  bool ok = false;
  std::string reason;
};

void *open_first(const char *const *names, std::string *why) {
  for (int i = 0; i < 4 && names[i] != nullptr; ++i)
    if (void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return lib;
  for (int i = 0; i < 4 && names[i] != nullptr; ++i) {
    if (void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) return lib;
    const char *e = dlerror();
    if (why->empty()) *why = e ? e : "unknown error";
  }
  return nullptr;
}

// Every function of the table; the first missing one names the failure.
bool resolve_all(void *lib, const Vendor &v, BlasLtApi *api, std::string *why) {
#define BLASLT_FN(field, cuda_name, hip_name)                           \
  if (!resolve(lib, v.hip_names ? hip_name : cuda_name, &api->field)) { \
    *why = std::string(v.hip_names ? hip_name : cuda_name) + " is missing"; \
    return false;                                                        \
  }
#include "gpu/vendor_blas/blaslt_functions.def"
#undef BLASLT_FN
  return true;
}

Opened open_vendor(const Vendor &v) {
  Opened o;
  std::string why;
  void *lib = open_first(v.libraries, &why);
  if (lib == nullptr) {
    o.reason = std::string(v.name) + " not found: " + why;
    return o;
  }
  if (!resolve_all(lib, v, &o.api, &why)) {
    o.reason = std::string(v.name) + ": " + why;
    return o;
  }
  why.clear();
  void *runtime = open_first(v.runtime_libraries, &why);
  if (runtime == nullptr || !resolve(runtime, v.malloc_name, &o.api.device_malloc) ||
      !resolve(runtime, v.stream_capturing_name, &o.api.stream_capturing)) {
    o.reason = std::string(v.name) + ": the GPU runtime's allocation functions are missing " + why;
    return o;
  }
  o.ok = true;
  return o;
}

Opened &opened(const Vendor &v) {
  static Opened cuda, hip;
  static std::once_flag cuda_once, hip_once;
  const bool is_hip = v.device_type == kDLROCM;
  std::call_once(is_hip ? hip_once : cuda_once, [&] { (is_hip ? hip : cuda) = open_vendor(v); });
  return is_hip ? hip : cuda;
}

}  // namespace

const BlasLtApi *blaslt_api(const Vendor &vendor) {
  const Opened &o = opened(vendor);
  return o.ok ? &o.api : nullptr;
}

const char *unavailable_reason(const Vendor &vendor) { return opened(vendor).reason.c_str(); }

const Vendor *vendor_for(DLDeviceType type) {
  if (type == kDLCUDA) return &kCublasLt;
  if (type == kDLROCM) return &kHipblasLt;
  return nullptr;
}

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
