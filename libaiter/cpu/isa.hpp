// The instruction sets the CPU kernels may use, found once per process with
// CPUID (and XGETBV: the OS must save the AVX-512 registers).  The library is
// built for baseline x86-64 (or aarch64); faster kernels carry their own
// target attributes and are picked at run time from cpu_isa().
//
// AITER_CPU_ISA caps the level (portable, avx2, avx512, avx512_bf16, amx), so that
// tests and benchmarks can run every level a machine has; "baseline" is an old
// name for portable.  A cap above what the CPU has changes nothing.
#pragma once

namespace aiter {
namespace cpu {

enum class Isa : int {
  portable = 0,     // plain C++ (GCC vector types, whatever the compiler does at baseline)
  avx2 = 1,         // AVX2 + FMA
  avx512 = 2,       // AVX-512 F, BW, VL (+ DQ): fp32 FMA, int16 pair products (vpmaddwd)
  avx512_bf16 = 3,  // the above + AVX512_BF16 (vdpbf16ps) + AVX512_VNNI (vpdpwssd)
  amx = 4,          // the above + AMX-TILE, AMX-BF16, AMX-INT8, with Linux's leave to use the tiles
};

// The level the kernels use: the CPU's, capped by AITER_CPU_ISA.
Isa cpu_isa();
inline bool isa_at_least(Isa level) { return int(cpu_isa()) >= int(level); }

// "avx512_bf16" and so on.
const char *isa_name(Isa level);

// What the kernels use and what the CPU has, for aiter_library_info, e.g.
// "avx512_bf16 (cpu has avx2 avx512 avx512_bf16 avx512_vnni)".
const char *cpu_isa_description();

}  // namespace cpu
}  // namespace aiter
