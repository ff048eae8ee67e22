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

using aiter::gpu::amd_code_targets;
using aiter::gpu::find_amd_arch;
using aiter::gpu::pick_code_target;

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

// Real GPUs (gcnArchName as ROCm reports it) against what a full build ships:
// their exact target, else their family's generic one, else none.
void maps_real_devices_to_code_objects() {
  const std::vector<std::string> built = {"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201", "gfx11-generic",
                                          "gfx12-generic"};
  const struct {
    const char *gpu, *arch, *expected;
  } devices[] = {
      {"MI210 / MI250X", "gfx90a:sramecc+:xnack-", "gfx90a"},
      {"MI300X / MI300A", "gfx942:sramecc+:xnack-", "gfx942"},
      {"MI300X, xnack on", "gfx942:sramecc+:xnack+", "gfx942"},
      {"MI355X", "gfx950:sramecc+:xnack-", "gfx950"},
      {"RX 7900 XTX", "gfx1100", "gfx1100"},
      {"RX 7800 XT", "gfx1101", "gfx11-generic"},
      {"RX 7600", "gfx1102", "gfx11-generic"},
      {"Radeon 780M (Phoenix)", "gfx1103", "gfx11-generic"},
      {"Ryzen AI Max+ 395 (Strix Halo)", "gfx1151", "gfx11-generic"},
      {"RX 9070 XT", "gfx1201", "gfx1201"},
      {"RX 9060 XT", "gfx1200", "gfx12-generic"},
      {"MI100", "gfx908:sramecc+:xnack-", ""},  // CDNA 1: no target, no generic one
      {"RX 6900 XT", "gfx1030", ""},            // gfx10-3-generic is not built
      {"Radeon VII", "gfx906:sramecc-:xnack-", ""},
      {"not an AMD name", "sm_90", ""},
  };
  for (const auto &d : devices) {
    const std::string got = pick_code_target(amd_code_targets(d.arch), built);
    CHECK(got == d.expected);
    if (got != d.expected) fprintf(stderr, "  %s (%s): got '%s', expected '%s'\n", d.gpu, d.arch, got.c_str(), d.expected);
  }
  // Without gfx942's own objects an MI300X takes gfx9-4-generic's; an exact
  // target always wins over a generic one, whatever the built list's order.
  CHECK(pick_code_target(amd_code_targets("gfx942:sramecc+:xnack-"), {"gfx9-4-generic"}) == "gfx9-4-generic");
  CHECK(pick_code_target(amd_code_targets("gfx1100"), {"gfx11-generic", "gfx1100"}) == "gfx1100");
  CHECK(pick_code_target(amd_code_targets("gfx1100"), {}).empty());
  CHECK(amd_code_targets("gfx").empty() && amd_code_targets("").empty());
  CHECK(amd_code_targets("gfx1036") == std::vector<std::string>({"gfx1036", "gfx10-3-generic"}));
  CHECK(amd_code_targets("gfx90a:xnack-") == std::vector<std::string>({"gfx90a"}));
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
  maps_real_devices_to_code_objects();
#ifdef HAVE_HIP_HEADER
  finds_the_arch_in_the_installed_headers_struct();
#else
  printf("no hip/hip_runtime_api.h: the installed struct is not checked\n");
#endif
  return report();
}
