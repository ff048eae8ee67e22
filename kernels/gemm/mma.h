// Warp-level tensor-core products on NVIDIA (mma.sync, sm_80+; fp8 needs
// sm_89+).  16-bit inputs use m16n8k16 and 8-bit inputs m16n8k32: in bytes both
// consume 32 bytes of K per row, and their fragments have the same byte layout,
// so the GEMM kernels treat a K step as 32 bytes whatever the element type.
//   A fragment (rows of W or A, "row"): regs {row g, k lo}, {row g+8, k lo},
//     {row g, k hi}, {row g+8, k hi}; B fragment ("col"): {k lo}, {k hi} of column g;
//   with g = lane / 4 and each register holding the 4 bytes at offset 4 * (lane % 4)
//   of the 16-byte lo / hi half.  C: {row g: cols 2t, 2t+1}, {row g+8: cols 2t, 2t+1}.
#pragma once

#include "gemm_elements.h"

#if defined(AITER_NVIDIA)

template <class T> struct MmaOf;

// The 16-bit products: m16n8k16, fp32 accumulators.
#define AITER_MMA_16BIT(T, fmt)                                                                              \
  template <> struct MmaOf<T> {                                                                              \
    using Acc = float;                                                                                       \
    static __device__ __forceinline__ void run(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,          \
                                               uint32_t a3, uint32_t b0, uint32_t b1) {                      \
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." fmt "." fmt ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
                   "{%8,%9}, {%0,%1,%2,%3};"                                                                 \
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                          \
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                                 \
    }                                                                                                        \
  };
AITER_MMA_16BIT(bf16_t, "bf16")
AITER_MMA_16BIT(half_t, "f16")

template <> struct MmaOf<int8_t> {
  using Acc = int;
  static __device__ __forceinline__ void run(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};

// fp8 products exist from sm_89; the manifest lists these kernels only for
// targets that have them (min_sm=89), so the trap below never runs.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890
#define AITER_FP8_MMA(fmt)                                                                                  \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." fmt "." fmt ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
               "{%8,%9}, {%0,%1,%2,%3};"                                                                    \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                             \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
#else
#define AITER_FP8_MMA(fmt) __trap()
#endif

template <> struct MmaOf<e4m3fn_t> {
  using Acc = float;
  static __device__ __forceinline__ void run(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
    AITER_FP8_MMA("e4m3");
  }
};

template <> struct MmaOf<e5m2_t> {
  using Acc = float;
  static __device__ __forceinline__ void run(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
    AITER_FP8_MMA("e5m2");
  }
};

// 16 bytes from global memory that are read once (weights): skip L1, and ask
// L2 to fetch 256 bytes around them.  A warp's load covers 64 bytes of each of
// 8 rows, so without the hint DRAM sees requests of 64-128 bytes (H100, fp8
// skinny kernels at M <= 16: 2.5% less time in the median shape, 37 of 38
// faster; the same hint on the contiguous loads of the memory-bound ops
// changed nothing; docs/performance_gemm.md).
__device__ __forceinline__ uint4 load_stream(const void *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ uint4 load_cached(const void *p) { return __ldg(static_cast<const uint4 *>(p)); }

#endif  // AITER_NVIDIA
