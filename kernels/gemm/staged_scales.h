// The a8w8 scales of a warpgroup's 64 x BN output block, staged in shared
// memory while the block's products run.  The epilogue used to read them from
// global memory, two column scales per output pair (PairStore), behind a
// per-channel branch, each warp load using half of its 32-byte sector.
// Nsight Compute, H100, 4096 x 4096 x 512 e4m3fn on the 128 x 256 tile: 61 us
// against 39 us for the same tile in bf16, 44% of the stall cycles waiting on
// global loads (the multiplying warps load nothing else).  Here the warpgroup
// copies the block's BN column and 64 row scales with cp.async when the tile
// starts, and the epilogue reads them from shared memory with no branch
// (docs/performance_gemm.md: fp8 at M >= 1024 0.90x -> 1.07x of the peer).
#pragma once

#include "stage_copy.h"
#include "staged_store.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

// The dynamic shared memory this block was launched with.
__device__ __forceinline__ uint32_t dynamic_smem_size() {
  uint32_t bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes;
}

template <int BN>
struct StagedScales {
  static constexpr int kBytes = (BN + 64) * 4;  // BN column scales, then 64 row scales
  uint32_t base;                                // shared-memory address
  int half;                                     // the warpgroup: named barrier 1 + half

  __device__ __forceinline__ void warpgroup_sync() const {
    asm volatile("bar.sync %0, 128;" ::"r"(1 + half) : "memory");
  }

  // Starts copying the scales of the block at (row0, n0); rows and columns
  // past the matrix take the last one's.  The warpgroup first waits until the
  // last block's epilogue has read the buffer.
  __device__ __forceinline__ void copy(const GemmParams &p, long long batch, long long row0, long long n0) const {
    warpgroup_sync();
    const int t = threadIdx.x % 128;
    const float *w_scale = p.w_scale + batch * p.w_scale_batch;
#pragma unroll
    for (int c = t; c < BN; c += 128) {
      const long long n = n0 + c < p.n ? n0 + c : p.n - 1;
      copy_async_4(base + c * 4, w_scale + n * p.w_scale_step);
    }
    if (t < 64) {
      const long long m = row0 + t < p.m ? row0 + t : p.m - 1;
      copy_async_4(base + (BN + t) * 4, p.a_scale + batch * p.a_scale_batch + m * p.a_scale_step);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }

  // Until every thread's copies have landed.
  __device__ __forceinline__ void wait() const {
    asm volatile("cp.async.wait_all;" ::: "memory");
    warpgroup_sync();
  }

  __device__ __forceinline__ const float *scales() const { return static_cast<const float *>(__cvta_shared_to_generic(base)); }
};

// store_block_staged's output for a8w8 with staged scales: the products times
// the row's and the column's scale (in PairStore's order), plus the bias.
template <class O, int BN, bool BIAS>
struct StagedScalePairs {
  const GemmParams &p;
  long long batch, row0, n0;  // the warpgroup's block
  const float *scales;        // StagedScales::scales()

  __device__ __forceinline__ float row_scale(long long row) const { return scales[BN + int(row - row0)]; }

  __device__ __forceinline__ uint32_t pack(float row_scale, long long col, float v0, float v1) const {
    const int c = int(col - n0);
    v0 = v0 * row_scale * scales[c], v1 = v1 * row_scale * scales[c + 1];
    if (BIAS) v0 += bias_value(p, col), v1 += bias_value(p, col + 1);
    return pack_pair<O>(v0, v1);
  }

  __device__ __forceinline__ O *at(long long row, long long col) const {
    return static_cast<O *>(p.out) + batch * p.out_batch + row * p.ldo + col;
  }
};

// store_rows_staged for a8w8 whose scales `staged` holds (its wait() done).
template <int BN>
__device__ __forceinline__ void store_rows_staged_scales(const GemmParams &p, long long batch, long long row0,
                                                         long long n0, const float (&acc)[BN / 2],
                                                         const StagedScales<BN> &staged, uint32_t buffer) {
  const auto store = [&](const auto &out) { store_block_staged<BN>(out, row0, n0, acc, buffer); };
  const float *s = staged.scales();
  if (p.out_kind == kGemmOutBf16)
    p.bias ? store(StagedScalePairs<bf16_t, BN, true>{p, batch, row0, n0, s})
           : store(StagedScalePairs<bf16_t, BN, false>{p, batch, row0, n0, s});
  else
    p.bias ? store(StagedScalePairs<half_t, BN, true>{p, batch, row0, n0, s})
           : store(StagedScalePairs<half_t, BN, false>{p, batch, row0, n0, s});
}

#endif
