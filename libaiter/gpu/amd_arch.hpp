// Reading an AMD GPU's code-object target ("gfx942:sramecc+:xnack-") out of the
// hipDeviceProp_t that hipGetDeviceProperties fills, without knowing its layout.
#pragma once

#include <cstddef>
#include <string>

namespace aiter {
namespace gpu {

// The first string in `props` (`size` bytes) that starts at offset 0 or after a
// NUL, ends with a NUL inside `props`, and reads gfx<hex digits> followed by any
// number of :<feature>+ or :<feature>- (feature: lower-case letters, digits, '_').
// Returns "" when there is none.
std::string find_amd_arch(const void *props, size_t size);

}  // namespace gpu
}  // namespace aiter
