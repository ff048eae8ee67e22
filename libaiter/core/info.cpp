// Version, build and backend information, and the GPU fallback message.
#include <cstring>
#include <string>
#include <utility>

#include "aiter/aiter.h"
#include "aiter_config.h"
#include "core/backend.hpp"
#include "core/parallel.hpp"
#include "cpu/isa.hpp"
#include "cpu/vendor.hpp"
#include "gpu/registry.hpp"

namespace aiter {

aiter_status no_gpu_backend(const char *op, const DLTensor *where) {
  return fail(AITER_ERR_NO_DEVICE,
              "%s: the tensors are on a GPU (device type %d, id %d), but this libaiter has no GPU backend "
              "for this op; use CPU tensors",
              op, int(where->device.device_type), int(where->device.device_id));
}

// GPU backends that can run: CUDA when NVIDIA code objects are present, HIP when
// AMD ones are (both runtimes are loaded at first use; neither is checked here).
static uint32_t gpu_backends() {
  uint32_t bits = 0;
  for (const std::string &t : gpu::built_targets()) {
    if (t.rfind("sm_", 0) == 0) bits |= AITER_BACKEND_CUDA;
    if (t.rfind("gfx", 0) == 0) bits |= AITER_BACKEND_HIP;
  }
  return bits;
}

static const std::string &gpu_targets() {
  static const std::string joined = [] {
    std::string s;
    for (const std::string &t : gpu::built_targets()) s += (s.empty() ? "" : ",") + t;
    return s;
  }();
  return joined;
}

}  // namespace aiter

extern "C" {

AITER_API void aiter_version(int *major, int *minor, int *patch) {
  if (major) *major = AITER_VERSION_MAJOR;
  if (minor) *minor = AITER_VERSION_MINOR;
  if (patch) *patch = AITER_VERSION_PATCH;
}

AITER_API const char *aiter_version_string(void) { return AITER_VERSION_STRING; }

AITER_API aiter_status aiter_get_library_info(aiter_library_info *info) {
  return aiter::guard("aiter_get_library_info", [&] {
    if (info == nullptr)
      return aiter::fail(AITER_ERR_INVALID_ARGUMENT, "aiter_get_library_info: info: expected a pointer, got NULL");
    if (info->struct_size < sizeof(size_t))
      return aiter::fail(AITER_ERR_INVALID_ARGUMENT,
                         "aiter_get_library_info: info->struct_size: expected sizeof(aiter_library_info), got %zu",
                         info->struct_size);
    aiter_library_info full{};
    full.struct_size = info->struct_size;
    full.version_major = AITER_VERSION_MAJOR;
    full.version_minor = AITER_VERSION_MINOR;
    full.version_patch = AITER_VERSION_PATCH;
    full.backends = AITER_BACKEND_CPU | aiter::gpu_backends();
    full.gpu_targets = aiter::gpu_targets().c_str();
    full.build_config = AITER_BUILD_CONFIG;
    full.cpu_threads = aiter::cpu_threads();
    static const std::string kernel_dir = aiter::gpu::kernel_directory();
    full.kernel_dir = kernel_dir.c_str();
    full.cpu_isa = aiter::cpu::cpu_isa_description();
    static const std::string libraries = [] {
      std::string found;
      for (const auto &[name, where] : {std::pair<const char *, std::string>{"openblas", aiter::cpu::openblas_location()},
                                        {"onednn", aiter::cpu::onednn_location()}})
        if (!where.empty()) found += (found.empty() ? "" : ",") + std::string(name) + "=" + where;
      return found;
    }();
    full.cpu_libraries = libraries.c_str();
    // Copy only what the caller's (possibly older, smaller) struct has room for.
    std::memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
    return AITER_OK;
  });
}

}  // extern "C"
