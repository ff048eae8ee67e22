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

namespace aiter {
namespace gpu {

// LLVM's generic processors (AMDGPUUsage, "Generic Processor Versioning"): a
// code object for one runs on every processor of its list, with what the whole
// family shares (no gfx90a in gfx9-generic: its packed-fp32 and AGPR layout
// differ; gfx908 likewise).  Loading one needs ROCm 6.1 or later.
std::string amd_generic_target(const std::string &processor) {
  static const struct {
    const char *generic;
    const char *members[9];
  } families[] = {
      {"gfx9-generic", {"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}},
      {"gfx9-4-generic", {"gfx940", "gfx941", "gfx942", "gfx950"}},
      {"gfx10-1-generic", {"gfx1010", "gfx1011", "gfx1012", "gfx1013"}},
      {"gfx10-3-generic", {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}},
      {"gfx11-generic", {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"}},
      {"gfx12-generic", {"gfx1200", "gfx1201"}},
  };
  for (const auto &family : families)
    for (const char *member : family.members)
      if (member != nullptr && processor == member) return family.generic;
  return "";
}

std::string pick_code_target(const std::vector<std::string> &candidates, const std::vector<std::string> &built) {
  for (const std::string &candidate : candidates)
    for (const std::string &target : built)
      if (candidate == target) return candidate;
  return "";
}

std::vector<std::string> amd_code_targets(const std::string &device_arch) {
  const std::string processor = device_arch.substr(0, device_arch.find(':'));
  if (processor.rfind("gfx", 0) != 0 || processor.size() == 3) return {};
  std::vector<std::string> targets{processor};
  const std::string generic = amd_generic_target(processor);
  if (!generic.empty()) targets.push_back(generic);
  return targets;
}

}  // namespace gpu
}  // namespace aiter
