// find_amd_arch: the gcnArchName inside a hipDeviceProp_t of either layout.
// Where HIP's header is installed (Debian's libamdhip64-dev), the real struct is
// filled too, and the layout numbers that libaiter/gpu/amd_arch.cpp states for
// that ROCm version are checked against it.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../c/harness.h"
#include "gpu/amd_arch.hpp"

#if __has_include(<hip/hip_runtime_api.h>)
#define __HIP_PLATFORM_AMD__ 1
#include <cstddef>

#include <hip/hip_runtime_api.h>
#define HAVE_HIP_HEADER 1
#endif

using aiter::gpu::find_amd_arch;

namespace {

using Bytes = std::vector<unsigned char>;

void put(Bytes &b, size_t at, const char *s) { std::memcpy(b.data() + at, s, std::strlen(s) + 1); }

// What a ROCm 6 runtime writes (hipDeviceProp_tR0600: 1472 bytes, gcnArchName at
// 1160, per ROCm/rocm-systems include/hip/hip_runtime_api.h), with the fields a
// scan could trip on: the marketing name first, then UUID bytes, then numbers.
Bytes rocm6_props(const char *name, const char *arch) {
  Bytes b(8192, 0);
  put(b, 0, name);
  for (int i = 0; i < 16; ++i) b[256 + i] = static_cast<unsigned char>(0x9e * (i + 1) + 0x37);
  const uint64_t memory = 192ull << 30;
  std::memcpy(b.data() + 296, &memory, sizeof memory);
  put(b, 1160, arch);
  const uint64_t pointer = 0x7f3a12345678ull;
  std::memcpy(b.data() + 1440, &pointer, sizeof pointer);
  return b;
}

void finds_the_arch_in_a_rocm6_layout() {
  Bytes b = rocm6_props("AMD Instinct MI300X", "gfx942:sramecc+:xnack-");
  CHECK(find_amd_arch(b.data(), b.size()) == "gfx942:sramecc+:xnack-");
  b = rocm6_props("AMD Radeon RX 7900 XTX", "gfx1100");  // no feature suffix on RDNA
  CHECK(find_amd_arch(b.data(), b.size()) == "gfx1100");
  // A target at the end of the name is not a field of its own.
  b = rocm6_props("Engineering sample gfx1030", "gfx90a:sramecc-:xnack+");
  CHECK(find_amd_arch(b.data(), b.size()) == "gfx90a:sramecc-:xnack+");
}

void rejects_what_is_not_an_arch() {
  for (const char *bad : {"gfx", "gfxzz", "GFX942", "gfx942:", "gfx942:xnack", "gfx942:Xnack+", "gfx942 ", "gfx942:+",
                          "gfx9.4.2"}) {
    Bytes b = rocm6_props("AMD Instinct MI300X", bad);
    const std::string got = find_amd_arch(b.data(), b.size());
    CHECK(got.empty());
    if (!got.empty()) fprintf(stderr, "  \"%s\" was taken as %s\n", bad, got.c_str());
  }
  Bytes zero(1472, 0);
  CHECK(find_amd_arch(zero.data(), zero.size()).empty());
  CHECK(find_amd_arch(zero.data(), 0).empty());
}

void needs_the_terminating_nul_inside_the_buffer() {
  Bytes b(64, 0);
  std::memcpy(b.data() + 56, "gfx942:x", 8);  // runs off the end
  CHECK(find_amd_arch(b.data(), b.size()).empty());
  std::memcpy(b.data() + 56, "gfx1201", 8);  // ends on the last byte
  CHECK(find_amd_arch(b.data(), b.size()) == "gfx1201");
}

#ifdef HAVE_HIP_HEADER
void finds_the_arch_in_the_installed_headers_struct() {
  hipDeviceProp_t props;
  std::memset(&props, 0, sizeof props);
  std::strcpy(props.name, "AMD Instinct MI210");
  std::strcpy(props.gcnArchName, "gfx90a:sramecc+:xnack-");
  props.multiProcessorCount = 104;
  props.totalGlobalMem = size_t(64) << 30;
  props.maxThreadsPerBlock = 1024;
  CHECK(find_amd_arch(&props, sizeof props) == "gfx90a:sramecc+:xnack-");
#if HIP_VERSION_MAJOR < 6
  CHECK(offsetof(hipDeviceProp_t, gcnArchName) == 396 && sizeof(hipDeviceProp_t) == 792);
#else
  CHECK(offsetof(hipDeviceProp_t, gcnArchName) == 1160 && sizeof(hipDeviceProp_t) == 1472);
#endif
}
#endif

}  // namespace

int main() {
  finds_the_arch_in_a_rocm6_layout();
  rejects_what_is_not_an_arch();
  needs_the_terminating_nul_inside_the_buffer();
#ifdef HAVE_HIP_HEADER
  finds_the_arch_in_the_installed_headers_struct();
#else
  printf("no hip/hip_runtime_api.h: the installed struct is not checked\n");
#endif
  return report();
}
