// GEMM for many rows of A on Hopper (sm_90a), warp-specialized: one warp of
// the first warpgroup copies K stages of A and W into a ring of shared memory
// with TMA, one or two warpgroups multiply them with wgmma, each 64 rows of a
// BM x BN tile (BM = 64 for few rows of A: narrow tiles make enough blocks to
// stream W at full speed).  A full and an empty barrier per slot hand stages between
// them, so the copies run the ring's depth ahead and no product waits on a
// __syncthreads or on its own loads (gemm_wgmma.cu copies with every thread).
// The grid is persistent: a block walks tiles blockIdx.x, + gridDim.x, ..., so
// the copies of its next tile overlap the stores of the last one.  TMA fills
// rows and K past the matrix with zeros; the launcher checks that strides and
// pointers are multiples of 16 bytes.  Block-scaled fp8 sums each stage (one
// 128-wide K group) apart and adds it times its scales.
#include "tma.h"
#include "wgmma_tile.h"

namespace {

// PROMOTED: fp8 sums added into fp32 registers every 4 stages (512 K).
template <class T, int BM, int BN, int STAGES, bool BLOCK_SCALED, bool PROMOTED = false>
struct WgmmaWs {
  static constexpr int kMultipliers = BM / 64, kRegs = BN / 2;
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;  // BM rows of A, then BN rows of W
  static constexpr int kStageElems = kRowBytes / int(sizeof(T));
  static_assert(!BLOCK_SCALED || BN == 128, "a block-scaled tile spans one 128-row block of W");

  // The ring: STAGES slots, then a full and an empty barrier per slot.
  struct Ring {
    uint32_t base;
    __device__ uint32_t slot(int s) const { return base + s * kStageBytes; }
    __device__ uint32_t full(int s) const { return base + STAGES * kStageBytes + 8 * s; }
    __device__ uint32_t empty(int s) const { return base + STAGES * kStageBytes + 8 * (STAGES + s); }
  };

  // A position in the ring: the slot, and the parity of the round it is in.
  struct Cursor {
    int slot = 0;
    unsigned parity = 0;
    __device__ void advance() {
      if (++slot == STAGES) slot = 0, parity ^= 1;
    }
  };

  // Tile t of all batches: its batch and first row / column.
  struct Tile {
    long long batch, m0, n0;
    __device__ Tile(const GemmParams &p, long long t, long long per_batch) : batch(t / per_batch) {
      tile_origin<BM, BN>(p, t % per_batch, &m0, &n0);
    }
  };

  static __device__ void produce(const GemmTmaParams &q, Ring ring, long long per_batch, long long tiles,
                                 int k_stages) {
    Cursor c;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
      const Tile tile(q.p, t, per_batch);
      const int a_batch = q.a_batched ? int(tile.batch) : 0, w_batch = q.w_batched ? int(tile.batch) : 0;
      for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
        barrier_wait(ring.empty(c.slot), c.parity ^ 1);
        barrier_arrive_expect(ring.full(c.slot), kStageBytes);
        const int k0 = kt * kStageElems;
        tma_copy_3d(ring.slot(c.slot), &q.a_map, ring.full(c.slot), k0, int(tile.m0), a_batch);
        tma_copy_3d(ring.slot(c.slot) + BM * kRowBytes, &q.w_map, ring.full(c.slot), k0, int(tile.n0), w_batch);
      }
    }
  }

  // One thread of each multiplying warpgroup hands a slot back to the copier.
  static __device__ __forceinline__ void release(Ring ring, int slot) {
    if (threadIdx.x % 128 == 0) barrier_arrive(ring.empty(slot));
  }

  // acc = this warpgroup's 64 rows of the tile over all of K.  Each stage's
  // products stay in flight while the next stage's are issued; a slot goes back
  // once the products reading it are done.
  static __device__ void multiply_tile(Ring ring, Cursor &c, int k_stages, int half, float (&acc)[kRegs]) {
    int previous = 0;
    for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
      barrier_wait(ring.full(c.slot), c.parity);
      issue_stage<T, BN>(ring.slot(c.slot) + half * 64 * kRowBytes, ring.slot(c.slot) + BM * kRowBytes, acc, kt > 0);
      wgmma_wait<1>();
      if (kt > 0) release(ring, previous);
      previous = c.slot;
    }
    wgmma_wait<0>();
    release(ring, previous);
  }

  // Promoted: total = the sum over windows of kWindow stages of each window's
  // products.  Hopper's fp8 products keep about 14 bits of their running sum
  // (DeepSeek-V3), so long K loses precision; the sum of a window is exact enough
  // and the windows add in fp32.  Products stay in flight within a window.
  static __device__ void multiply_tile_promoted(Ring ring, Cursor &c, int k_stages, int half, float (&total)[kRegs]) {
    constexpr int kWindow = 4;  // stages: 512 K of fp8
    float sums[kRegs];
    for (int i = 0; i < kRegs; ++i) total[i] = 0.0f;
    int previous = -1;
    for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
      barrier_wait(ring.full(c.slot), c.parity);
      issue_stage<T, BN>(ring.slot(c.slot) + half * 64 * kRowBytes, ring.slot(c.slot) + BM * kRowBytes, sums,
                         kt % kWindow != 0);
      if (kt % kWindow == kWindow - 1 || kt == k_stages - 1) {
        wgmma_wait<0>();
        if (previous >= 0) release(ring, previous);
        release(ring, c.slot);
        previous = -1;
#pragma unroll
        for (int i = 0; i < kRegs; ++i) total[i] += sums[i];
      } else {
        wgmma_wait<1>();
        if (previous >= 0) release(ring, previous);
        previous = c.slot;
      }
    }
  }

  // Block-scaled: total = sum over K groups of the group's products times its
  // scales; each group's sums are complete before they are scaled.
  static __device__ void multiply_tile_scaled(const GemmParams &p, Ring ring, Cursor &c, int k_stages, int half,
                                              const Tile &tile, float (&total)[kRegs]) {
    float sums[kRegs];
    for (int i = 0; i < kRegs; ++i) total[i] = 0.0f;
    for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
      barrier_wait(ring.full(c.slot), c.parity);
      issue_stage<T, BN>(ring.slot(c.slot) + half * 64 * kRowBytes, ring.slot(c.slot) + BM * kRowBytes, sums, false);
      const GroupScales scales = group_scales(p, tile.batch, tile.m0 + half * 64, tile.n0, kt);
      wgmma_wait<0>();
      release(ring, c.slot);
      promote_rows(scales, sums, total);
    }
  }

  static __device__ void consume(const GemmTmaParams &q, Ring ring, long long per_batch, long long tiles,
                                 int k_stages, int half) {
    Cursor c;
    float acc[kRegs];
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
      const Tile tile(q.p, t, per_batch);
      if constexpr (BLOCK_SCALED)
        multiply_tile_scaled(q.p, ring, c, k_stages, half, tile, acc);
      else if constexpr (PROMOTED)
        multiply_tile_promoted(ring, c, k_stages, half, acc);
      else
        multiply_tile(ring, c, k_stages, half, acc);
      store_rows<BN>(q.p, tile.batch, tile.m0 + half * 64, tile.n0, acc, BLOCK_SCALED);
    }
  }

  // 128 + 2 * BM threads: warpgroup 0 copies (one thread issues), BM / 64 multiply.
  // K >= 1 (the launcher routes K = 0 elsewhere).
  static __device__ void run(const GemmTmaParams &q) {
    extern __shared__ __align__(1024) unsigned char smem[];
    const Ring ring{(smem_address(smem) + 1023u) & ~1023u};  // the manifest asks 1 KiB extra
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        barrier_init(ring.full(s), 1);   // the copier's arrival + the stage's bytes
        barrier_init(ring.empty(s), kMultipliers);  // each multiplying warpgroup
      }
      barrier_init_fence();
      tma_prefetch_map(&q.a_map);
      tma_prefetch_map(&q.w_map);
    }
    __syncthreads();
    const long long per_batch = ((q.p.m + BM - 1) / BM) * ((q.p.n + BN - 1) / BN);
    const int k_stages = int((q.p.k + kStageElems - 1) / kStageElems);
    if (threadIdx.x < 128) {
      registers_shrink<40>();
      if (threadIdx.x == 0) produce(q, ring, per_batch, per_batch * q.batch, k_stages);
    } else {
      registers_grow<232>();
      consume(q, ring, per_batch, per_batch * q.batch, k_stages, threadIdx.x / 128 - 1);
    }
  }
};

}  // namespace

#define WGMMA_WS(dt, T, BM, BN, S, BS, suffix)                                                          \
  extern "C" __global__ void __launch_bounds__(128 + 2 * BM, 1)                                          \
      aiter_gemm_wgmma_ws_##dt##_##BM##x##BN##_s##S##suffix(const __grid_constant__ GemmTmaParams q) { \
    WgmmaWs<T, BM, BN, S, BS>::run(q);                                                                  \
  }

// 160 / 192 / 224 wide: a whole number of waves of tiles for more N (gemm.cpp).
#define WGMMA_WS_SHAPES(dt, T)                                                                          \
  WGMMA_WS(dt, T, 128, 256, 4, false, )                                                                 \
  WGMMA_WS(dt, T, 128, 224, 5, false, )                                                                 \
  WGMMA_WS(dt, T, 128, 192, 5, false, )                                                                 \
  WGMMA_WS(dt, T, 128, 160, 6, false, )                                                                 \
  WGMMA_WS(dt, T, 128, 128, 6, false, )                                                                 \
  WGMMA_WS(dt, T, 128, 64, 8, false, )                                                                  \
  WGMMA_WS(dt, T, 64, 64, 12, false, )                                                                  \
  WGMMA_WS(dt, T, 64, 32, 16, false, )
WGMMA_WS_SHAPES(bf16, bf16_t)
WGMMA_WS_SHAPES(f16, half_t)
WGMMA_WS_SHAPES(e4m3fn, e4m3fn_t)
WGMMA_WS_SHAPES(e5m2, e5m2_t)
WGMMA_WS(e4m3fn, e4m3fn_t, 128, 128, 6, true, _bs)
#define WGMMA_WS_PROMOTED(dt, T, BM, BN, S)                                                               \
  extern "C" __global__ void __launch_bounds__(128 + 2 * BM, 1)                                          \
      aiter_gemm_wgmma_ws_##dt##_##BM##x##BN##_s##S##_fp32sum(const __grid_constant__ GemmTmaParams q) { \
    WgmmaWs<T, BM, BN, S, false, true>::run(q);                                                         \
  }
WGMMA_WS_PROMOTED(e4m3fn, e4m3fn_t, 128, 128, 6)
WGMMA_WS_PROMOTED(e4m3fn, e4m3fn_t, 64, 64, 12)

// Variant names: wgmma_ws.<dtype>.<BM>x<BN>.s<STAGES>; 128 + 2 * BM threads; shared
// memory = STAGES * (BM + BN) * 128 bytes + 1 KiB for the 1024-byte alignment + 16
// bytes of barriers per stage.
// aiter-kernel-family: op=gemm variant=wgmma_ws.{dt}.{shape} symbol=aiter_gemm_wgmma_ws_{dt}_{sym} block={block} smem={smem} dt=bf16@90,f16@90,e4m3fn@90,e5m2@90 shape=128x256.s4:128x256_s4:384:197696,128x224.s5:128x224_s5:384:226384,128x192.s5:128x192_s5:384:205904,128x160.s6:128x160_s6:384:222304,128x128.s6:128x128_s6:384:197728,128x64.s8:128x64_s8:384:197760,64x64.s12:64x64_s12:256:197824,64x32.s16:64x32_s16:256:197888
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.128x128.s6.bs symbol=aiter_gemm_wgmma_ws_e4m3fn_128x128_s6_bs block=384 smem=197728
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.128x128.s6.fp32sum symbol=aiter_gemm_wgmma_ws_e4m3fn_128x128_s6_fp32sum block=384 smem=197728
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.64x64.s12.fp32sum symbol=aiter_gemm_wgmma_ws_e4m3fn_64x64_s12_fp32sum block=256 smem=197824
