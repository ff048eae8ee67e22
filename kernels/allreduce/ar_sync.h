// Flags between GPUs of one machine: release stores and acquire loads at system
// scope (the peers' memory is mapped through CUDA/HIP IPC), and a clock for the
// waits' time limit; the push kernels' loads of what peers write and their call
// counter.  AMD's code is compile-checked only (no AMD GPU here).
#pragma once

#include "../common/vendor.h"
#include "allreduce_params.h"

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
// 16 bytes a peer may be writing, read afresh from memory (each word atomic).
__device__ __forceinline__ uint4 load_words_volatile(const uint4 *p) {
  const unsigned *w = reinterpret_cast<const unsigned *>(p);
  uint4 v;
  v.x = __hip_atomic_load(w, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
  v.y = __hip_atomic_load(w + 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
  v.z = __hip_atomic_load(w + 2, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
  v.w = __hip_atomic_load(w + 3, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
  return v;
}
// A counter in this GPU's memory that an earlier kernel may have changed.
__device__ __forceinline__ unsigned counter_load(const unsigned *p) {
  return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ unsigned counter_add(unsigned *p) {
  return __hip_atomic_fetch_add(p, 1u, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
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
__device__ __forceinline__ uint4 load_words_volatile(const uint4 *p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ unsigned counter_load(const unsigned *p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned counter_add(unsigned *p) { return atomicAdd(p, 1u); }
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

// Whether a word of v is still kArPushEmpty (allreduce_params.h): not all of it has arrived.
__device__ __forceinline__ bool words_pending(const uint4 &v) {
  return v.x == kArPushEmpty || v.y == kArPushEmpty || v.z == kArPushEmpty || v.w == kArPushEmpty;
}

// The 16 bytes a peer pushes to *slot, `first` its value as read once already:
// waits until all have arrived (or the wait's time limit has passed), then
// empties the slot again for the call after next.
__device__ __forceinline__ uint4 take_pushed(uint4 *slot, uint4 first) {
  uint4 v = first;
  if (words_pending(v)) {
    const unsigned long long start = clock_ns();
    do {
      flag_pause();
      v = load_words_volatile(slot);
    } while (words_pending(v) && clock_ns() - start <= kArWaitLimitNs);
  }
  *slot = uint4{kArPushEmpty, kArPushEmpty, kArPushEmpty, kArPushEmpty};
  return v;
}
