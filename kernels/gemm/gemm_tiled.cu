// GEMM for many rows of A: BM x BN output tiles on tensor cores (mma.h), K in
// stages of 128 bytes (64 16-bit or 128 8-bit elements) copied by cp.async into
// a STAGES-deep ring of shared memory while earlier stages are multiplied, and
// read back with ldmatrix.  Rows of 128 bytes are stored with their 16-byte
// chunks XOR-swizzled by the row (chunk ^ row % 8) so that the eight rows an
// ldmatrix reads hit eight different bank groups.  Each warp owns a WM x WN
// piece of the tile.  Rows and K past the matrix are zero-filled by cp.async.
//
// Output tiles are handed out in groups along M (tile_origin) for L2 reuse.
//
// Block-scaled fp8 (DeepSeek-V3): a stage is exactly one 128-wide K group, so
// each stage's products are summed apart, then added times a_scale[m, g] *
// w_scale[n / 128, g] (BN = 128 keeps one W block per tile).
// Requires K * element size, the row strides and the pointers to be multiples
// of 16 bytes (the launcher checks).
#include "pair_store.h"
#include "stage_copy.h"

namespace {

template <class T, int BM, int BN, int WM, int WN, int STAGES, bool BLOCK_SCALED>
struct Tiled {
  static constexpr int kWarpsN = BN / WN, kThreads = (BM / WM) * kWarpsN * 32;
  static constexpr int kTilesM = WM / 16, kTilesN = WN / 8;
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;
  static constexpr int kStageElems = kRowBytes / int(sizeof(T));
  using Mma = MmaOf<T>;
  using Acc = typename Mma::Acc;

  // acc += the stage's products (stage_copy.h's WarpTile).
  static __device__ __forceinline__ void multiply_stage(uint32_t stage, int warp_m, int warp_n,
                                                        Acc (&acc)[kTilesM][kTilesN][4]) {
    WarpTile<Mma, BM, WM, WN>::multiply_stage(stage, warp_m, warp_n, acc);
  }

  // Block-scaled: total += this group's sums times their scales; sums reset.
  static __device__ __forceinline__ void promote(const GemmParams &p, long long batch, long long m0, long long n0,
                                                 int warp_m, int group, Acc (&sums)[kTilesM][kTilesN][4],
                                                 float (&total)[kTilesM][kTilesN][4]) {
    const int g = (threadIdx.x % 32) / 4;
    const float ws = p.w_scale[batch * p.w_scale_batch + (n0 / 128) * p.kgroups + group];
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        long long m = m0 + warp_m * WM + i * 16 + h * 8 + g;
        m = m < p.m ? m : p.m - 1;
        const float s = p.a_scale[batch * p.a_scale_batch + m * p.a_scale_row + group * p.a_scale_group] * ws;
#pragma unroll
        for (int j = 0; j < kTilesN; ++j)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            total[i][j][h * 2 + c] += float(sums[i][j][h * 2 + c]) * s;
            sums[i][j][h * 2 + c] = Acc(0);
          }
      }
  }

  static __device__ __forceinline__ void store(const GemmParams &p, long long batch, long long m0, long long n0,
                                               int warp_m, int warp_n, const float (&v)[kTilesM][kTilesN][4]) {
    const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    const long long row0 = m0 + warp_m * WM + g, col0 = n0 + warp_n * WN + t * 2;
    if (pairs_fit(p, m0 + warp_m * WM + WM, n0 + warp_n * WN + WN)) {
      with_pair_store(p, batch, BLOCK_SCALED, [&](const auto &out) {
#pragma unroll
        for (int i = 0; i < kTilesM; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const long long row = row0 + i * 16 + h * 8;
            const float row_scale = out.row_scale(row);
#pragma unroll
            for (int j = 0; j < kTilesN; ++j) out.put(row, row_scale, col0 + j * 8, v[i][j][2 * h], v[i][j][2 * h + 1]);
          }
      });
      return;
    }
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int j = 0; j < kTilesN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const long long m = m0 + warp_m * WM + i * 16 + (e / 2) * 8 + g;
          const long long n = n0 + warp_n * WN + j * 8 + t * 2 + e % 2;
          if (m < p.m && n < p.n) store_output(p, batch, m, n, v[i][j][e], BLOCK_SCALED);
        }
  }

  static __device__ __forceinline__ void run(const GemmParams &p) {
    extern __shared__ __align__(128) unsigned char ring[];
    const long long batch = blockIdx.z;
    long long m0, n0;
    tile_origin<BM, BN>(p, &m0, &n0);
    const char *a = static_cast<const char *>(p.a) + batch * p.a_batch * (long long)sizeof(T);
    const char *w = static_cast<const char *>(p.w) + batch * p.w_batch * (long long)sizeof(T);
    const int warp = threadIdx.x / 32, warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
    const uint32_t base = smem_address(ring);
    const int stages_k = int((p.k + kStageElems - 1) / kStageElems);
    const StageCopier<T, BM, BN, kThreads> copier(p, a, w, m0, n0);

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < stages_k) copier.copy((long long)s * kStageElems, base + s * kStageBytes);
      copy_async_commit();
    }
    Acc acc[kTilesM][kTilesN][4] = {};
    float total[BLOCK_SCALED ? kTilesM : 1][BLOCK_SCALED ? kTilesN : 1][4] = {};
    for (int kt = 0; kt < stages_k; ++kt) {
      copy_async_wait<STAGES - 2>();
      __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free
      const int next = kt + STAGES - 1;
      if (next < stages_k)
        copier.copy((long long)next * kStageElems, base + (next % STAGES) * kStageBytes);
      copy_async_commit();
      multiply_stage(base + (kt % STAGES) * kStageBytes, warp_m, warp_n, acc);
      if constexpr (BLOCK_SCALED) promote(p, batch, m0, n0, warp_m, kt, acc, total);
    }
    if constexpr (BLOCK_SCALED) {
      store(p, batch, m0, n0, warp_m, warp_n, total);
    } else {
      float v[kTilesM][kTilesN][4];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kTilesN; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) v[i][j][e] = float(acc[i][j][e]);
      store(p, batch, m0, n0, warp_m, warp_n, v);
    }
  }
};

}  // namespace

#define TILED(dt, T, BM, BN, WM, WN, S, SCALED, tag)                                                            \
  AITER_ENTRY(aiter_gemm_tiled_##dt##_##BM##x##BN##_s##S##tag, (Tiled<T, BM, BN, WM, WN, S, SCALED>::kThreads), \
              GemmParams, Tiled<T, BM, BN, WM, WN, S, SCALED>::run)
#define TILED_SHAPES(dt, T)                 \
  TILED(dt, T, 128, 128, 64, 32, 4, false, ) \
  TILED(dt, T, 128, 128, 64, 32, 3, false, ) \
  TILED(dt, T, 128, 256, 64, 64, 3, false, ) \
  TILED(dt, T, 64, 128, 32, 32, 4, false, )  \
  TILED(dt, T, 64, 64, 32, 32, 4, false, )

TILED_SHAPES(bf16, bf16_t)
TILED_SHAPES(f16, half_t)
TILED_SHAPES(i8, int8_t)
TILED_SHAPES(e4m3fn, e4m3fn_t)
TILED_SHAPES(e5m2, e5m2_t)
TILED(e4m3fn, e4m3fn_t, 128, 128, 64, 32, 4, true, _bs)
TILED(e4m3fn, e4m3fn_t, 64, 128, 32, 32, 4, true, _bs)

// Variant names: tiled.<dtype>.<BM>x<BN>.s<STAGES>[.bs]; threads = 32 * warps;
// shared memory = STAGES * (BM + BN) * 128 bytes.
// aiter-kernel-family: op=gemm variant=tiled.{dt}.{shape} symbol=aiter_gemm_tiled_{dt}_{sym} block={block} smem={smem} dt=bf16,f16,i8,e4m3fn@89,e5m2@89 shape=128x128.s4:128x128_s4:256:131072,128x128.s3:128x128_s3:256:98304,128x256.s3:128x256_s3:256:147456,64x128.s4:64x128_s4:256:98304,64x64.s4:64x64_s4:128:65536
// aiter-kernel-family: op=gemm variant=tiled.{dt}.{shape}.bs symbol=aiter_gemm_tiled_{dt}_{sym}_bs block={block} smem={smem} dt=e4m3fn@89 shape=128x128.s4:128x128_s4:256:131072,64x128.s4:64x128_s4:256:98304
