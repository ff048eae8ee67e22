// What the CUDA and HIP drivers share: opening the vendor's runtime library,
// resolving its functions with dlsym, and opening a driver once per process.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <mutex>
#include <string>

#include "core/error.hpp"
#include "gpu/driver.hpp"

namespace aiter {
namespace gpu {

template <class F>
bool resolve(void *lib, const char *symbol, F *fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, symbol));
  return *fn != nullptr;
}

// The first of `names` that opens, preferring one already loaded into the process:
// a framework (PyTorch on ROCm bundles its own libamdhip64.so.6) must share its
// runtime with libaiter, or the streams and memory it hands over would belong to
// another runtime's copy.  nullptr when none opens; `error` then holds the
// dlerror() of the first name, the one a message should show.
inline void *open_library(std::initializer_list<const char *> names, std::string *error) {
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return lib;
  for (const char *name : names) {
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    const char *why = dlerror();
    if (error->empty()) *error = why ? why : "unknown error";
  }
  return nullptr;
}

// The process's one instance of driver D, opened (D::open()) at the first call.
// A failed open is remembered, and its status and message are given again to
// every later caller, without retrying.
template <class D>
aiter_status open_once(Driver **driver) {
  static D instance;
  static aiter_status status = AITER_ERR_INTERNAL;
  static std::string message;
  static std::once_flag once;
  std::call_once(once, [] {
    status = instance.open();
    message = aiter_last_error();
  });
  if (status != AITER_OK) return fail(status, "%s", message.c_str());
  *driver = &instance;
  return AITER_OK;
}

}  // namespace gpu
}  // namespace aiter
