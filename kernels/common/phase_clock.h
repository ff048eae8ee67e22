// Phase clock of the kernels whose blocks are all resident (profiling only):
// built with -DAITER_PHASE_CLOCK by benchmarks/profile_*_phases.py, which points
// `phase_clock` at kPhaseStamps stamps a block; thread 0 of each block writes
// %globaltimer there at the end of each phase.  In the library's builds
// stamp_phase compiles to nothing.
#pragma once

constexpr int kPhaseStamps = 8;

#if defined(AITER_PHASE_CLOCK) && defined(AITER_NVIDIA)
__device__ unsigned long long *phase_clock;
__device__ __forceinline__ void stamp_phase(int phase) {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  if (threadIdx.x == 0) phase_clock[blockIdx.x * kPhaseStamps + phase] = now;
}
#else
__device__ __forceinline__ void stamp_phase(int) {}
#endif
