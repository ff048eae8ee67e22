// Opening NCCL / RCCL with dlopen (see nccl.hpp).
#include "dist/nccl.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/error.hpp"

namespace aiter {
namespace dist {
namespace {

template <class F>
bool resolve(void *lib, const char *symbol, F *fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, symbol));
  return *fn != nullptr;
}

// One library per vendor, opened at its first use; a failure is remembered.
struct Loaded {
  NcclApi api{};
  aiter_status status = AITER_ERR_INTERNAL;
  std::string message, path;
  std::once_flag once;
};

aiter_status open_into(Loaded *l, bool rccl) {
  const char *env = std::getenv("AITER_NCCL_LIBRARY");
  const char *kind = rccl ? "RCCL" : "NCCL";
  l->path = env && *env ? env : rccl ? "librccl.so.1" : "libnccl.so.2";
  // Already in the process (PyTorch's own NCCL) first, so that one copy serves both.
  void *lib = dlopen(l->path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen(l->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char *why = dlerror();
    return fail(AITER_ERR_NO_DEVICE, "no %s: dlopen(%s) failed: %s (install %s, or set AITER_NCCL_LIBRARY)", kind,
                l->path.c_str(), why ? why : "unknown error", rccl ? "RCCL" : "NCCL (libnccl2)");
  }
  NcclApi &a = l->api;
  a.library = l->path.c_str();
  a.rccl = rccl;
  const bool ok = resolve(lib, "ncclGetUniqueId", &a.GetUniqueId) && resolve(lib, "ncclCommInitRank", &a.CommInitRank) &&
                  resolve(lib, "ncclCommDestroy", &a.CommDestroy) && resolve(lib, "ncclAllReduce", &a.AllReduce) &&
                  resolve(lib, "ncclAllGather", &a.AllGather) && resolve(lib, "ncclReduceScatter", &a.ReduceScatter) &&
                  resolve(lib, "ncclGetErrorString", &a.GetErrorString);
  if (!ok) return fail(AITER_ERR_NO_DEVICE, "no %s: %s lacks a function libaiter needs: %s", kind, l->path.c_str(), dlerror());
  resolve(lib, "ncclGetLastError", &a.GetLastError);
  return AITER_OK;
}

}  // namespace

aiter_status nccl_api(int32_t device_type, const NcclApi **api) {
  static Loaded loaded[2];
  if (device_type != kDLCUDA && device_type != kDLROCM)
    return fail(AITER_ERR_INVALID_ARGUMENT, "device type %d: expected a GPU (cuda %d or rocm %d)", int(device_type),
                int(kDLCUDA), int(kDLROCM));
  const bool rccl = device_type == kDLROCM;
  Loaded &l = loaded[rccl];
  std::call_once(l.once, [&] {
    l.status = open_into(&l, rccl);
    l.message = aiter_last_error();
  });
  if (l.status != AITER_OK) return fail(l.status, "%s", l.message.c_str());
  *api = &l.api;
  return AITER_OK;
}

aiter_status nccl_check(const NcclApi &api, NcclResult result, const char *call, NcclComm comm) {
  if (result == 0) return AITER_OK;
  const char *text = api.GetErrorString ? api.GetErrorString(result) : nullptr;
  const char *last = api.GetLastError ? api.GetLastError(comm) : nullptr;
  return fail(AITER_ERR_DEVICE, "%s failed: %s error %d: %s%s%s", call, api.rccl ? "RCCL" : "NCCL", result,
              text ? text : "unknown", last && *last ? ": " : "", last && *last ? last : "");
}

}  // namespace dist
}  // namespace aiter
