// What the Hopper (sm_90a) GEMM kernels share: shared-memory matrix
// descriptors, the products of one 128-byte K stage for a warpgroup's 64 rows,
// and the epilogues that scale and store those rows.  A stage holds rows of
// 128 bytes of K in the 128-byte swizzle (stage_copy.h and TMA's
// SWIZZLE_128B write the same layout), 1024-byte aligned.
#pragma once

#include "pair_store.h"
#include "wgmma.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

// A shared-memory matrix descriptor: rows of 128 bytes in 8-row (1024-byte)
// swizzle atoms, K-major; `address` is where this K step starts.
__device__ __forceinline__ uint64_t smem_descriptor(uint32_t address) {
  return uint64_t((address & 0x3FFFF) >> 4)  // start address, 16-byte units
         | uint64_t(1) << 16                 // leading byte offset: unused for swizzled K-major
         | uint64_t(1024 >> 4) << 32         // stride byte offset: one 8-row atom
         | uint64_t(1) << 62;                // 128-byte swizzle
}

// Issues acc (+)= 64 rows of A at `a` times BN rows of W at `w` over one
// 128-byte K stage (four 32-byte steps) as one wgmma group; `accumulate` false
// starts from zero.  The caller waits for the group (wgmma_wait).
// (A descriptor's start address field is address >> 4 in its low 14 bits, and
// shared addresses stay below 256 KiB: the descriptor of a step 32 bytes on is
// the descriptor plus 2, one add rather than building it again.)
template <class T, int BN>
__device__ __forceinline__ void issue_stage(uint32_t a, uint32_t w, float (&acc)[BN / 2], bool accumulate) {
  const uint64_t a_desc = smem_descriptor(a), w_desc = smem_descriptor(w);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int step = 0; step < 4; ++step)
    WgmmaInstruction<T, BN>::run(acc, a_desc + 2 * step, w_desc + 2 * step, step > 0 || accumulate);
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Keeps the compiler from moving reads or writes of these registers across
// this point (FlashAttention-3 fences a product's accumulators likewise).
template <int N>
__device__ __forceinline__ void fence_registers(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Waits until at most N of this warpgroup's wgmma groups are in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Stores a warpgroup's 64 x BN accumulators, rows from `row0`.  Accumulator i
// of a thread: n8 block i / 4, row +8 for i % 4 >= 2, column pair
// (lane % 4) * 2 + i % 2; rows 16 per warp of the warpgroup.  Tiles whose
// columns fit take the pair store, rows past M skipped one by one (few rows
// of A, M = 32 say, make every tile such a tile).
template <int BN>
__device__ __forceinline__ void store_rows(const GemmParams &p, long long batch, long long row0, long long n0,
                                           const float (&acc)[BN / 2], bool scaled) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  if (row0 >= p.m) return;  // all 64 rows are past the matrix
  if (pairs_fit(p, row0 + 1, n0 + BN)) {
    const long long row = row0 + warp * 16 + lane / 4, col = n0 + (lane % 4) * 2;
    const bool in[2] = {row < p.m, row + 8 < p.m};
    with_pair_store(p, batch, scaled, [&](const auto &out) {
      const float row_scale[2] = {out.row_scale(in[0] ? row : row0), out.row_scale(in[1] ? row + 8 : row0)};
#pragma unroll
      for (int i = 0; i < BN / 2; i += 2)
        if (in[i % 4 / 2]) out.put(row + (i % 4 / 2) * 8, row_scale[i % 4 / 2], col + (i / 4) * 8, acc[i], acc[i + 1]);
    });
    return;
  }
  row0 += warp * 16 + lane / 4;
#pragma unroll
  for (int i = 0; i < BN / 2; i += 2) {
    const long long m = row0 + (i % 4 / 2) * 8, n = n0 + (i / 4) * 8 + (lane % 4) * 2;
    if (m < p.m && n < p.n) store_output_pair(p, batch, m, n, acc[i], acc[i + 1], scaled);
  }
}

// Block-scaled: a K group's combined scales a_scale[m, g] * w_scale[n / 128, g]
// for a thread's two rows; BN = 128 keeps one W block.  Loaded before the
// group's products are waited for, so the loads overlap them.
struct GroupScales {
  float row[2];
};
__device__ __forceinline__ GroupScales group_scales(const GemmParams &p, long long batch, long long row0,
                                                    long long n0, int group) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const float ws = p.w_scale[batch * p.w_scale_batch + (n0 / 128) * p.kgroups + group];
  GroupScales s;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    long long m = row0 + warp * 16 + lane / 4 + h * 8;
    m = m < p.m ? m : p.m - 1;
    s.row[h] = p.a_scale[batch * p.a_scale_batch + m * p.kgroups + group] * ws;
  }
  return s;
}

// total += one K group's sums (a stage is one 128-byte group of fp8) times its scales.
__device__ __forceinline__ void promote_rows(const GroupScales &s, const float (&sums)[64], float (&total)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) total[i] += sums[i] * s.row[i % 4 / 2];
}

#endif
