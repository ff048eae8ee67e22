// Flags between GPUs of one machine: release stores and acquire loads at system
// scope (the peers' memory is mapped through CUDA/HIP IPC), and a clock for the
// waits' time limit.  AMD's code is compile-checked only (no AMD GPU here).
#pragma once

#include "../common/vendor.h"

#if defined(AITER_AMD)
__device__ __forceinline__ void flag_store(unsigned *p, unsigned v) {
  __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
}
__device__ __forceinline__ unsigned flag_load(const unsigned *p) {
  return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
}
// The constant 100 MHz clock of every AMD GPU libaiter builds for.
__device__ __forceinline__ unsigned long long clock_ns() { return __builtin_readsteadycounter() * 10ull; }
__device__ __forceinline__ void flag_pause() { __builtin_amdgcn_s_sleep(1); }
__device__ __forceinline__ unsigned grid_dim_x() {
  return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
}
#else
__device__ __forceinline__ void flag_store(unsigned *p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned flag_load(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long clock_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void flag_pause() {}
__device__ __forceinline__ unsigned grid_dim_x() { return gridDim.x; }
#endif

// A peer that never comes (ranks that made different calls) must not hang the
// GPU: a wait gives up after this long, leaving the output unspecified.
constexpr unsigned long long kArWaitLimitNs = 10ull * 1000 * 1000 * 1000;

// Waits until *flag == value.
__device__ __forceinline__ void wait_flag(const unsigned *flag, unsigned value) {
  if (flag_load(flag) == value) return;
  const unsigned long long start = clock_ns();
  while (flag_load(flag) != value) {
    if (clock_ns() - start > kArWaitLimitNs) return;
    flag_pause();
  }
}
