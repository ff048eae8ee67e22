// One kernel source for NVIDIA (nvcc) and AMD (clang -x hip).  The AMD build uses
// no ROCm headers or bitcode libraries (-nogpuinc -nogpulib: Debian's ROCm 5.2
// lacks device libraries for gfx942 and newer), so this header supplies the few
// builtins the kernels use, from clang's own AMDGPU builtins.
#pragma once

#if defined(__HIP__)  // ---------------------------------------------- AMD
#define AITER_AMD 1
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __attribute__((always_inline))
#define AITER_LAUNCH_BOUNDS(threads) __attribute__((amdgpu_flat_work_group_size(1, threads)))
#define AITER_LAUNCH_BOUNDS_MIN(threads, blocks) AITER_LAUNCH_BOUNDS(threads)  // min blocks: tuned on NVIDIA only
#define AITER_KERNEL extern "C" __global__

typedef unsigned long long uint64_t;
typedef long long int64_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef signed char int8_t;

struct alignas(16) uint4 { uint32_t x, y, z, w; };
struct alignas(8) uint2 { uint32_t x, y; };

__device__ __forceinline__ unsigned thread_x() { return __builtin_amdgcn_workitem_id_x(); }
__device__ __forceinline__ unsigned block_x() { return __builtin_amdgcn_workgroup_id_x(); }
__device__ __forceinline__ unsigned block_y() { return __builtin_amdgcn_workgroup_id_y(); }
__device__ __forceinline__ unsigned block_z() { return __builtin_amdgcn_workgroup_id_z(); }
__device__ __forceinline__ unsigned block_dim_x() { return __builtin_amdgcn_workgroup_size_x(); }
__device__ __forceinline__ int warp_size() { return __builtin_amdgcn_wavefrontsize(); }
__device__ __forceinline__ void sync_block() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__device__ __forceinline__ float shfl_xor(float v, int mask) {
  const int lane = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, __builtin_bit_cast(int, v)));
}
// Lane `src` (0-31) of the caller's 32 lanes: its v (half a 64-wide wave).
__device__ __forceinline__ int shfl_from(int v, int src) {
  const int lane = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  return __builtin_amdgcn_ds_bpermute(((lane & ~31) + src) << 2, v);
}
__device__ __forceinline__ float fabsf(float x) { return __builtin_fabsf(x); }
__device__ __forceinline__ float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__device__ __forceinline__ float fminf(float a, float b) { return __builtin_fminf(a, b); }
__device__ __forceinline__ float fast_exp(float x) { return __builtin_expf(x); }
__device__ __forceinline__ float fast_rsqrt(float x) { return 1.0f / __builtin_sqrtf(x); }
__device__ __forceinline__ float fast_rint(float x) { return __builtin_rintf(x); }
__device__ __forceinline__ float fast_div(float a, float b) { return a / b; }
__device__ __forceinline__ void atomic_max_u32(uint32_t *p, uint32_t v) {
  __hip_atomic_fetch_max(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ void enter_stream_order() {}  // HIP launches kernels in stream order

#else  // ------------------------------------------------------------------ NVIDIA
#define AITER_NVIDIA 1
#include <stdint.h>
#define AITER_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
// At least `blocks` blocks of `threads` resident on an SM: caps registers a thread.
#define AITER_LAUNCH_BOUNDS_MIN(threads, blocks) __launch_bounds__(threads, blocks)
#define AITER_KERNEL extern "C" __global__

__device__ __forceinline__ unsigned thread_x() { return threadIdx.x; }
__device__ __forceinline__ unsigned block_x() { return blockIdx.x; }
__device__ __forceinline__ unsigned block_y() { return blockIdx.y; }
__device__ __forceinline__ unsigned block_z() { return blockIdx.z; }
__device__ __forceinline__ unsigned block_dim_x() { return blockDim.x; }
__device__ __forceinline__ int warp_size() { return 32; }
__device__ __forceinline__ void sync_block() { __syncthreads(); }
__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
// Lane `src` (0-31) of the caller's warp: its v.
__device__ __forceinline__ int shfl_from(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }
__device__ __forceinline__ float fast_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ float fast_rint(float x) { return rintf(x); }
__device__ __forceinline__ float fast_div(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ void atomic_max_u32(uint32_t *p, uint32_t v) { atomicMax(p, v); }
// Every kernel's first step.  On sm_90 and up the host launches kernels with
// programmatic stream serialization (libaiter/gpu/launch.hpp), so a kernel's
// blocks may start before the kernel ahead of it on the stream has finished:
// this waits until it has, and its writes are visible, before any global
// memory is touched; then it lets the next kernel's blocks launch, so that
// their launch overlaps this kernel's run instead of following its end.
__device__ __forceinline__ void enter_stream_order() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// Grid-wide counters, for kernels whose blocks wait for one another (launched
// cooperatively, so that all are resident; NVIDIA only, as is their one user,
// quant/quant_resident.cu): device-scope atomics and loads that bypass the SM's
// own cache.  arrive_release adds 1 after this thread's earlier
// writes are visible to the device; load_acquire orders the loads after it.
__device__ __forceinline__ uint32_t arrive_release(uint32_t *p) {
  uint32_t old;
  asm volatile("atom.add.release.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}
__device__ __forceinline__ uint32_t load_acquire(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint32_t load_relaxed(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed(uint32_t *p, uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void spin_pause() { __nanosleep(32); }
#endif

// A kernel named `name` that takes its argument by value (`Params p`), runs with
// at most `threads` threads a block, and after waiting for the kernel ahead of it
// (enter_stream_order) calls the rest of its arguments, `body`, on p (`body` may
// hold commas: template arguments).  Every kernel's entry is written with it, so
// that none forgets the wait, but those with other launch attributes (the norms'
// minimum blocks, the warp-specialized GEMMs' clusters), which call
// enter_stream_order first themselves.
#define AITER_ENTRY(name, threads, Params, ...)                   \
  AITER_KERNEL void AITER_LAUNCH_BOUNDS(threads) name(Params p) { \
    enter_stream_order();                                         \
    __VA_ARGS__(p);                                               \
  }

// Sum over a block of up to 1024 threads; every thread gets the total.  `scratch`
// is __shared__ float[32].  One barrier pair per call.
__device__ __forceinline__ float block_sum(float v, float *scratch) {
  const int ws = warp_size();
  for (int m = ws / 2; m > 0; m >>= 1) v += shfl_xor(v, m);
  const unsigned warp = thread_x() / ws, lane = thread_x() % ws, warps = (block_dim_x() + ws - 1) / ws;
  if (lane == 0) scratch[warp] = v;
  sync_block();
  v = lane < warps ? scratch[lane] : 0.0f;
  for (int m = ws / 2; m > 0; m >>= 1) v += shfl_xor(v, m);
  sync_block();  // scratch may be reused right after
  return v;
}

__device__ __forceinline__ float block_max(float v, float *scratch) {
  const int ws = warp_size();
  for (int m = ws / 2; m > 0; m >>= 1) v = fmaxf(v, shfl_xor(v, m));
  const unsigned warp = thread_x() / ws, lane = thread_x() % ws, warps = (block_dim_x() + ws - 1) / ws;
  if (lane == 0) scratch[warp] = v;
  sync_block();
  v = lane < warps ? scratch[lane] : 0.0f;
  for (int m = ws / 2; m > 0; m >>= 1) v = fmaxf(v, shfl_xor(v, m));
  sync_block();
  return v;
}
