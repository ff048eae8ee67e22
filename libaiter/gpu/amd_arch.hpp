// Reading an AMD GPU's code-object target ("gfx942:sramecc+:xnack-") out of the
// hipDeviceProp_t that hipGetDeviceProperties fills, without knowing its layout.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace aiter {
namespace gpu {

// The first string in `props` (`size` bytes) that starts at offset 0 or after a
// NUL, ends with a NUL inside `props`, and reads gfx<hex digits> followed by any
// number of :<feature>+ or :<feature>- (feature: lower-case letters, digits, '_').
// Returns "" when there is none.
std::string find_amd_arch(const void *props, size_t size);

// The code-object targets that run on an AMD device, best first: its processor
// without feature suffixes ("gfx942:sramecc+:xnack-" -> "gfx942"), then the
// generic target LLVM defines for its family ("gfx9-4-generic"), if any.
// Empty when `device_arch` is not a gfx name.
std::vector<std::string> amd_code_targets(const std::string &device_arch);

// The first of `candidates` (best first) that was built, or "" if none was.
std::string pick_code_target(const std::vector<std::string> &candidates, const std::vector<std::string> &built);

// The generic target covering `processor` ("gfx1101" -> "gfx11-generic"), or "".
std::string amd_generic_target(const std::string &processor);

}  // namespace gpu
}  // namespace aiter
