#include "cpu/isa.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define AITER_CPU_X86 1
#endif
#if defined(AITER_CPU_X86) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace aiter {
namespace cpu {
namespace {

struct Features {
  bool avx2 = false, avx512 = false, avx512_bf16 = false, avx512_vnni = false, avx_vnni = false, amx = false;
  bool amx_allowed = false;  // the OS lets this process use the tile registers
};

#ifdef AITER_CPU_X86
bool bit(uint32_t word, int n) { return (word >> n) & 1u; }

// Linux hands out the AMX tile data state (8 KB a thread) only to a process
// that asks, once (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA);
// without it the first tile instruction faults.  Refused (an old kernel, a
// sandbox): no AMX level.
bool request_tiles() {
#ifdef __linux__
  constexpr int kReqXcompPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
#else
  return false;
#endif
}

// XCR0: which register states the OS saves on a context switch.
uint64_t xcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

Features detect() {
  Features f;
  uint32_t a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = bit(c, 12), osxsave = bit(c, 27), avx = bit(c, 28);
  if (!osxsave || !avx) return f;
  const uint64_t xcr = xcr0();
  const bool ymm_saved = (xcr & 0x6) == 0x6, zmm_saved = (xcr & 0xe6) == 0xe6;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm_saved && fma && bit(b, 5);
  f.avx512 = zmm_saved && f.avx2 && bit(b, 16) && bit(b, 17) && bit(b, 30) && bit(b, 31);  // F, DQ, BW, VL
  f.avx512_vnni = f.avx512 && bit(c, 11);
  f.amx = bit(d, 24) && bit(d, 22) && bit(d, 25);  // AMX-TILE, AMX-BF16, AMX-INT8
  const uint32_t subleaves = a;
  if (subleaves >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = f.avx512 && bit(a, 5);
    f.avx_vnni = f.avx2 && bit(a, 4);
  }
  f.amx_allowed = f.amx && (xcr & (3ull << 17)) == (3ull << 17) && request_tiles();
  return f;
}
#else
Features detect() { return Features{}; }
#endif

const Features &features() {
  static const Features f = detect();
  return f;
}

Isa machine_isa() {
  const Features &f = features();
  if (f.avx512_bf16 && f.avx512_vnni && f.amx_allowed) return Isa::amx;
  if (f.avx512_bf16 && f.avx512_vnni) return Isa::avx512_bf16;
  if (f.avx512) return Isa::avx512;
  if (f.avx2) return Isa::avx2;
  return Isa::portable;
}

// The cap AITER_CPU_ISA asks for; an unknown name caps nothing.
Isa requested_cap() {
  const char *text = std::getenv("AITER_CPU_ISA");
  if (text == nullptr) return Isa::amx;
  if (std::strcmp(text, "portable") == 0 || std::strcmp(text, "baseline") == 0) return Isa::portable;
  if (std::strcmp(text, "avx2") == 0) return Isa::avx2;
  if (std::strcmp(text, "avx512") == 0) return Isa::avx512;
  if (std::strcmp(text, "avx512_bf16") == 0) return Isa::avx512_bf16;
  return Isa::amx;
}

}  // namespace

Isa cpu_isa() {
  static const Isa level = Isa(std::min(int(machine_isa()), int(requested_cap())));
  return level;
}

const char *isa_name(Isa level) {
  switch (level) {
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512_bf16: return "avx512_bf16";
    case Isa::amx: return "amx";
    default: return "portable";
  }
}

const char *cpu_isa_description() {
  static const std::string text = [] {
    const Features &f = features();
    std::string has;
    const std::pair<bool, const char *> named[] = {{f.avx2, "avx2"},
                                                   {f.avx512, "avx512"},
                                                   {f.avx512_bf16, "avx512_bf16"},
                                                   {f.avx512_vnni, "avx512_vnni"},
                                                   {f.avx_vnni, "avx_vnni"},
                                                   {f.amx, "amx"}};
    for (const auto &[present, name] : named)
      if (present) has += (has.empty() ? "" : " ") + std::string(name);
    return std::string(isa_name(cpu_isa())) + " (cpu has " + (has.empty() ? std::string("none of avx2 avx512") : has) +
           (f.amx && !f.amx_allowed ? "; the OS refused the AMX tiles" : "") + ")";
  }();
  return text.c_str();
}

}  // namespace cpu
}  // namespace aiter
