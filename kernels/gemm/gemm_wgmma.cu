// GEMM for many rows of A on Hopper (sm_90a): warpgroup tensor-core products
// (wgmma.h) read both operands straight from shared memory, which the stages of
// stage_copy.h already lay out in the 128-byte swizzle wgmma expects.  A block
// of two warpgroups computes a 128 x BN tile, each warpgroup 64 rows; K moves in
// 128-byte stages through a STAGES-deep cp.async ring, so loads of later stages
// overlap the products of the current one.  Requires K * element size, the row
// strides and the pointers to be multiples of 16 bytes (the launcher checks).
// Block-scaled fp8 (DeepSeek-V3) sums each stage, one 128-wide K group, apart
// and adds it times its scales (promote).
#include "wgmma.h"

namespace {

// A shared-memory matrix descriptor: rows of 128 bytes in 8-row (1024-byte)
// swizzle atoms, K-major; `address` is where this K step starts.
__device__ __forceinline__ uint64_t smem_descriptor(uint32_t address) {
  return uint64_t((address & 0x3FFFF) >> 4)  // start address, 16-byte units
         | uint64_t(1) << 16                 // leading byte offset: unused for swizzled K-major
         | uint64_t(1024 >> 4) << 32         // stride byte offset: one 8-row atom
         | uint64_t(1) << 62;                // 128-byte swizzle
}

template <class T, int BN> struct Product;
template <> struct Product<bf16_t, 128> { static constexpr auto run = wgmma_bf16_n128; };
template <> struct Product<bf16_t, 256> { static constexpr auto run = wgmma_bf16_n256; };
template <> struct Product<half_t, 128> { static constexpr auto run = wgmma_f16_n128; };
template <> struct Product<half_t, 256> { static constexpr auto run = wgmma_f16_n256; };
template <> struct Product<e4m3fn_t, 128> { static constexpr auto run = wgmma_e4m3_n128; };
template <> struct Product<e4m3fn_t, 256> { static constexpr auto run = wgmma_e4m3_n256; };
template <> struct Product<e5m2_t, 128> { static constexpr auto run = wgmma_e5m2_n128; };
template <> struct Product<e5m2_t, 256> { static constexpr auto run = wgmma_e5m2_n256; };

template <class T, int BN, int STAGES, bool BLOCK_SCALED = false>
struct Wgmma {
  static constexpr int BM = 128, kThreads = 256, kRegs = BN / 2;
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;
  static constexpr int kStageElems = kRowBytes / int(sizeof(T));

  // acc (+)= this warpgroup's 64 rows of the stage times its BN rows of W;
  // `fresh` starts acc from zero instead.
  static __device__ __forceinline__ void multiply_stage(uint32_t stage, int warpgroup, float (&acc)[kRegs],
                                                        bool fresh) {
    const uint32_t a = stage + warpgroup * 64 * kRowBytes, w = stage + BM * kRowBytes;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int step = 0; step < 4; ++step)
      Product<T, BN>::run(acc, smem_descriptor(a + step * 32), smem_descriptor(w + step * 32),
                          step > 0 || !fresh);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    // Waiting for this batch at once: with products left in flight across the loop
    // (wait_group 1) ptxas serializes every single wgmma instead (warning C7515).
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }

  // Accumulator i of a thread: n8 block i / 4, row +8 for i % 4 >= 2, column
  // pair (lane % 4) * 2 + i % 2; rows 16 per warp of the warpgroup.
  static __device__ __forceinline__ void store(const GemmParams &p, long long batch, long long m0, long long n0,
                                               int warpgroup, const float (&acc)[kRegs], bool scaled) {
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const long long row0 = m0 + warpgroup * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int i = 0; i < kRegs; ++i) {
      const long long m = row0 + (i % 4 / 2) * 8, n = n0 + (i / 4) * 8 + (lane % 4) * 2 + i % 2;
      if (m < p.m && n < p.n) store_output(p, batch, m, n, acc[i], scaled);
    }
  }

  // Block-scaled: total += one K group's sums (a stage is one 128-byte group of
  // fp8) times a_scale[m, g] * w_scale[n / 128, g]; BN = 128 keeps one W block.
  static __device__ __forceinline__ void promote(const GemmParams &p, long long batch, long long m0, long long n0,
                                                 int group, const float (&sums)[kRegs], float (&total)[kRegs]) {
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32, warpgroup = threadIdx.x / 128;
    const float ws = p.w_scale[batch * p.w_scale_batch + (n0 / 128) * p.kgroups + group];
    float as[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      long long m = m0 + warpgroup * 64 + warp * 16 + lane / 4 + h * 8;
      m = m < p.m ? m : p.m - 1;
      as[h] = p.a_scale[batch * p.a_scale_batch + m * p.kgroups + group] * ws;
    }
#pragma unroll
    for (int i = 0; i < kRegs; ++i) total[i] += sums[i] * as[i % 4 / 2];
  }

  static __device__ __forceinline__ void run(const GemmParams &p) {
    extern __shared__ __align__(1024) unsigned char ring[];
    const uint32_t base = (smem_address(ring) + 1023u) & ~1023u;  // the manifest asks 1 KiB extra
    const long long batch = blockIdx.z;
    long long m0, n0;
    tile_origin<BM, BN>(p, &m0, &n0);
    const char *a = static_cast<const char *>(p.a) + batch * p.a_batch * (long long)sizeof(T);
    const char *w = static_cast<const char *>(p.w) + batch * p.w_batch * (long long)sizeof(T);
    const int stages_k = int((p.k + kStageElems - 1) / kStageElems);
    const StageCopier<T, BM, BN, kThreads> copier(p, a, w, m0, n0);
    constexpr int kAhead = STAGES - 1;  // stages in flight while one is multiplied
#pragma unroll
    for (int s = 0; s < kAhead; ++s) {
      if (s < stages_k) copier.copy((long long)s * kStageElems, base + s * kStageBytes);
      copy_async_commit();
    }
    float acc[kRegs] = {};
    float total[BLOCK_SCALED ? kRegs : 1] = {};
    for (int kt = 0; kt < stages_k; ++kt) {
      copy_async_wait<kAhead - 1>();
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // cp.async data -> wgmma's async proxy
      __syncthreads();  // stage kt landed for every thread; stage kt - 1 is no longer read
      const int next = kt + kAhead;
      if (next < stages_k) copier.copy((long long)next * kStageElems, base + (next % STAGES) * kStageBytes);
      copy_async_commit();
      multiply_stage(base + (kt % STAGES) * kStageBytes, threadIdx.x / 128, acc, BLOCK_SCALED);
      if constexpr (BLOCK_SCALED) promote(p, batch, m0, n0, kt, acc, total);
    }
    if constexpr (BLOCK_SCALED)
      store(p, batch, m0, n0, threadIdx.x / 128, total, true);
    else
      store(p, batch, m0, n0, threadIdx.x / 128, acc, false);
  }
};

}  // namespace

#define WGMMA(dt, T, BN, S)                                                                         \
  extern "C" __global__ void __launch_bounds__(256) aiter_gemm_wgmma_##dt##_128x##BN##_s##S(GemmParams p) { \
    Wgmma<T, BN, S>::run(p);                                                                        \
  }

WGMMA(bf16, bf16_t, 128, 4)
WGMMA(bf16, bf16_t, 128, 3)
WGMMA(bf16, bf16_t, 256, 3)
WGMMA(f16, half_t, 128, 4)
WGMMA(f16, half_t, 128, 3)
WGMMA(f16, half_t, 256, 3)
WGMMA(e4m3fn, e4m3fn_t, 128, 4)
WGMMA(e4m3fn, e4m3fn_t, 128, 3)
WGMMA(e4m3fn, e4m3fn_t, 256, 3)
WGMMA(e5m2, e5m2_t, 128, 4)
WGMMA(e5m2, e5m2_t, 128, 3)
WGMMA(e5m2, e5m2_t, 256, 3)
extern "C" __global__ void __launch_bounds__(256) aiter_gemm_wgmma_e4m3fn_128x128_s4_bs(GemmParams p) {
  Wgmma<e4m3fn_t, 128, 4, true>::run(p);
}

// Variant names: wgmma.<dtype>.128x<BN>.s<STAGES> (128 x 128 with 3 stages: two
// blocks per SM, whose products fill each other's barriers); 256 threads; shared memory =
// STAGES * (128 + BN) * 128 bytes + 1 KiB for the 1024-byte alignment.
// aiter-kernel-family: op=gemm variant=wgmma.{dt}.{shape} symbol=aiter_gemm_wgmma_{dt}_{sym} block=256 smem={smem} dt=bf16@90,f16@90,e4m3fn@90,e5m2@90 shape=128x128.s4:128x128_s4:132096,128x128.s3:128x128_s3:99328,128x256.s3:128x256_s3:148480
// aiter-kernel: op=gemm variant=wgmma.e4m3fn.128x128.s4.bs symbol=aiter_gemm_wgmma_e4m3fn_128x128_s4_bs block=256 smem=132096
