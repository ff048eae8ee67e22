// GEMM for many rows of A on Hopper (sm_90a): warpgroup tensor-core products
// (wgmma.h) read both operands straight from shared memory, which the stages of
// stage_copy.h already lay out in the 128-byte swizzle wgmma expects.  A block
// of two warpgroups computes a 128 x BN tile, each warpgroup 64 rows; K moves in
// 128-byte stages through a STAGES-deep cp.async ring, so loads of later stages
// overlap the products of the current one.  Requires K * element size, the row
// strides and the pointers to be multiples of 16 bytes (the launcher checks).
// Block-scaled fp8 (DeepSeek-V3) sums each stage, one 128-wide K group, apart
// and adds it times its scales (promote).
#include "wgmma_tile.h"

namespace {

template <class T, int BN, int STAGES, bool BLOCK_SCALED = false>
struct Wgmma {
  static constexpr int BM = 128, kThreads = 256, kRegs = BN / 2;
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;
  static constexpr int kStageElems = kRowBytes / int(sizeof(T));

  // acc (+)= this warpgroup's 64 rows of the stage times its BN rows of W;
  // `fresh` starts acc from zero instead.
  static __device__ __forceinline__ void multiply_stage(uint32_t stage, int warpgroup, float (&acc)[kRegs],
                                                        bool fresh) {
    issue_stage<T, BN>(stage + warpgroup * 64 * kRowBytes, stage + BM * kRowBytes, acc, !fresh);
    // Waiting for this batch at once: with products left in flight across the loop
    // (wait_group 1) ptxas serializes every single wgmma instead (warning C7515).
    wgmma_wait<0>();
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
      if constexpr (BLOCK_SCALED) {
        const GroupScales scales = group_scales(p, batch, m0 + threadIdx.x / 128 * 64, n0, kt);
        multiply_stage(base + (kt % STAGES) * kStageBytes, threadIdx.x / 128, acc, true);
        promote_rows(scales, acc, total);
      } else {
        multiply_stage(base + (kt % STAGES) * kStageBytes, threadIdx.x / 128, acc, false);
      }
    }
    const long long row0 = m0 + threadIdx.x / 128 * 64;
    if constexpr (BLOCK_SCALED)
      store_rows<BN>(p, batch, row0, n0, total, true);
    else
      store_rows<BN>(p, batch, row0, n0, acc, false);
  }
};

}  // namespace

#define WGMMA(dt, T, BN, S) AITER_ENTRY(aiter_gemm_wgmma_##dt##_128x##BN##_s##S, 256, GemmParams, Wgmma<T, BN, S>::run)

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
AITER_ENTRY(aiter_gemm_wgmma_e4m3fn_128x128_s4_bs, 256, GemmParams, Wgmma<e4m3fn_t, 128, 4, true>::run)

// Variant names: wgmma.<dtype>.128x<BN>.s<STAGES> (128 x 128 with 3 stages: two
// blocks per SM, whose products fill each other's barriers); 256 threads; shared memory =
// STAGES * (128 + BN) * 128 bytes + 1 KiB for the 1024-byte alignment.
// aiter-kernel-family: op=gemm variant=wgmma.{dt}.{shape} symbol=aiter_gemm_wgmma_{dt}_{sym} block=256 smem={smem} dt=bf16@90,f16@90,e4m3fn@90,e5m2@90 shape=128x128.s4:128x128_s4:132096,128x128.s3:128x128_s3:99328,128x256.s3:128x256_s3:148480
// aiter-kernel: op=gemm variant=wgmma.e4m3fn.128x128.s4.bs symbol=aiter_gemm_wgmma_e4m3fn_128x128_s4_bs block=256 smem=132096
