// Instances of the warp-specialized Hopper GEMM (wgmma_ws.h) in clusters of two
// blocks that share their W tiles through TMA multicast.  The launcher makes the
// grid a multiple of two blocks.
#include "wgmma_ws.h"

#define WGMMA_CLUSTER(dt, T, BM, BN, S)                                                                   \
  extern "C" __global__ void __launch_bounds__(128 + 2 * BM, 1) __cluster_dims__(2, 1, 1)                 \
      aiter_gemm_wgmma_ws_##dt##_##BM##x##BN##_s##S##_x2(const __grid_constant__ GemmTmaParams q) {    \
    WgmmaWs<T, BM, BN, S, false, false, 2>::run(q);                                                    \
  }
#define WGMMA_CLUSTER_SHAPES(dt, T) \
  WGMMA_CLUSTER(dt, T, 128, 256, 4) \
  WGMMA_CLUSTER(dt, T, 128, 192, 5) \
  WGMMA_CLUSTER(dt, T, 128, 128, 6)
WGMMA_CLUSTER_SHAPES(bf16, bf16_t)
WGMMA_CLUSTER_SHAPES(e4m3fn, e4m3fn_t)

// Not block-scaled: a 128 x 128 block-scaled tile in clusters of two (W shared,
// 24 KB per K group instead of 32) took 1.07-1.13x the time of the unclustered
// one in the H100 tuning run of 2026-11-23 (7168 x 16384 at M = 4096: 1111 µs
// against 980).  Measured again once the scale warp copied asynchronously
// (H100, 19:28 UTC, bench_gemm_variants.py at M = 256-8192 of the DeepSeek-V3
// set): 0.823x of the peer against 0.840x unclustered, and 192 x 128 in pairs
// 0.709x against 0.738x.  (wgmma_ws.h allows it; the tests passed.)

// Variant names: wgmma_ws.<dtype>.<BM>x<BN>.s<STAGES>.x2 (x2: clusters of two
// blocks stacked in M); threads and shared memory as gemm_wgmma_ws.cu's.
// aiter-kernel-family: op=gemm variant=wgmma_ws.{dt}.{shape}.x2 symbol=aiter_gemm_wgmma_ws_{dt}_{sym}_x2 block=384 smem={smem} dt=bf16@90,e4m3fn@90 shape=128x256.s4:128x256_s4:216640,128x192.s5:128x192_s5:224336,128x128.s6:128x128_s6:215648
