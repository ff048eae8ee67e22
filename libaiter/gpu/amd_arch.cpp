// Why a scan and not an offset: hipDeviceProp_t has had two layouts.  ROCm 5 and
// earlier fill the "R0000" struct (gcnArchName at byte 396 of 792); ROCm 6 made
// hipGetDeviceProperties a macro for hipGetDevicePropertiesR0600, whose struct
// is 1472 bytes with gcnArchName at byte 1160, and kept the old symbol for old
// binaries.  libaiter resolves the function with dlsym, against whichever
// runtime is installed, so it cannot take the layout from a header.  In both
// layouts gcnArchName is the only field that holds a "gfx..." string (name,
// first, holds the marketing name, "AMD Instinct MI300X"; the rest are numbers,
// flags, a UUID and pointers), so the first such string is the target.
#include "gpu/amd_arch.hpp"

#include <cstring>

namespace aiter {
namespace gpu {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
bool is_feature_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// Whether s (NUL-terminated) is gfx<hex>+ (:<feature>[+-])*.
bool is_arch(const char *s) {
  if (std::strncmp(s, "gfx", 3) != 0 || !is_hex(s[3])) return false;
  s += 3;
  while (is_hex(*s)) ++s;
  while (*s == ':') {
    const char *feature = ++s;
    while (is_feature_char(*s)) ++s;
    if (s == feature || (*s != '+' && *s != '-')) return false;
    ++s;
  }
  return *s == '\0';
}

}  // namespace

std::string find_amd_arch(const void *props, size_t size) {
  const char *bytes = static_cast<const char *>(props);
  for (size_t at = 0; at < size; ++at) {
    if (at > 0 && bytes[at - 1] != '\0') continue;
    const void *end = std::memchr(bytes + at, '\0', size - at);
    if (end != nullptr && is_arch(bytes + at)) return std::string(bytes + at, static_cast<const char *>(end));
  }
  return "";
}

}  // namespace gpu
}  // namespace aiter
