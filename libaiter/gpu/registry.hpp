// Code objects built ahead of time, found through the manifest the build writes
// (manifest.tsv: target, op, variant, file, symbol, block, smem[, args]), and loaded
// lazily: once per device, the first time one of their kernels is asked for.
#pragma once

#include <string>
#include <vector>

#include "gpu/driver.hpp"
#include "gpu/triton_args.hpp"

namespace aiter {
namespace gpu {

struct Kernel {
  Function function = nullptr;
  int max_block = 0;  // the kernel's launch bound
  int smem = 0;       // dynamic shared memory it needs, bytes
  int smem_allowed = 0;  // dynamic shared memory the driver has been told a launch may give it
  bool programmatic = false;  // launched to overlap the kernel ahead of it (programmatic_launch)
  // A Triton kernel's parameters in order (the manifest's args column); null
  // for kernels that take one by-value struct.  Lives as long as the manifest.
  const std::vector<TritonParam> *params = nullptr;
};

// The kernel `op`/`variant` for the device `where` lives on.  AITER_ERR_NO_KERNEL
// names the device's target and the targets that were built.
aiter_status find_kernel(Driver *driver, int device, const char *op, const std::string &variant, Kernel *kernel);

// Lets launches of `op`/`variant` (found before) give it up to `bytes` of dynamic
// shared memory: the driver is asked once, the kernel remembers it.
aiter_status allow_dynamic_smem(Driver *driver, int device, const char *op, const std::string &variant, int bytes,
                                Kernel *kernel);

// The built target whose code objects run on `device` ("sm_90a" on an H100).
aiter_status code_target(Driver *driver, int device, std::string *target);

// Whether the manifest has `op`/`variant` for the device's target (no loading).
bool has_kernel(Driver *driver, int device, const char *op, const std::string &variant);

// Where code objects were found ("" if nowhere) and the targets they cover.
std::string kernel_directory();
std::vector<std::string> built_targets();

}  // namespace gpu
}  // namespace aiter
