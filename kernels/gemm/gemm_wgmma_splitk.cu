// Instances of the warp-specialized Hopper GEMM (wgmma_ws.h) with K split over
// the blocks of a cluster (split_k.h): for few rows of A and few columns of W,
// where whole-K tiles leave multiprocessors idle.  The launcher makes the grid a
// multiple of the cluster and routes only K of at least SPLIT stages here.
// Pairs only: clusters of four (64 x 64 and 64 x 128 tiles) took a median 1.23x
// (bf16) and 1.51x (fp8) the time of pairs over the shapes of the H100 tuning
// run of 2026-11-23 (one rank adds three shares, and only 30 clusters of four
// fit at once against 66 pairs), and were never the fastest.
#include "wgmma_ws.h"

#define WGMMA_SPLITK(dt, T, BM, BN, S, SPLIT)                                                                   \
  extern "C" __global__ void __launch_bounds__(128 + 2 * BM, 1) __cluster_dims__(SPLIT, 1, 1)                   \
      aiter_gemm_wgmma_ws_##dt##_##BM##x##BN##_s##S##_k##SPLIT(const __grid_constant__ GemmTmaParams q) {    \
    WgmmaWs<T, BM, BN, S, false, false, 1, SPLIT>::run(q);                                                    \
  }
#define WGMMA_SPLITK_SHAPES(dt, T)     \
  WGMMA_SPLITK(dt, T, 64, 32, 16, 2)   \
  WGMMA_SPLITK(dt, T, 64, 64, 12, 2)   \
  WGMMA_SPLITK(dt, T, 64, 128, 7, 2)   \
  WGMMA_SPLITK(dt, T, 128, 64, 7, 2)   \
  WGMMA_SPLITK(dt, T, 128, 128, 4, 2)
WGMMA_SPLITK_SHAPES(bf16, bf16_t)
WGMMA_SPLITK_SHAPES(e4m3fn, e4m3fn_t)
// Block-scaled: each block scales its own K groups' sums before they are added.
#define WGMMA_SPLITK_BS(BM, S)                                                                                  \
  extern "C" __global__ void __launch_bounds__(128 + 2 * BM, 1) __cluster_dims__(2, 1, 1)                       \
      aiter_gemm_wgmma_ws_e4m3fn_##BM##x128_s##S##_bs_k2(const __grid_constant__ GemmTmaParams q) {            \
    WgmmaWs<e4m3fn_t, BM, 128, S, true, false, 1, 2>::run(q);                                                 \
  }
WGMMA_SPLITK_BS(64, 7)
WGMMA_SPLITK_BS(128, 4)

// Variant names: wgmma_ws.<dtype>.<BM>x<BN>.s<STAGES>.k<SPLIT> (K split over a
// cluster of SPLIT blocks); 128 + 2 * BM threads; shared memory as
// gemm_wgmma_ws.cu's plus (SPLIT - 1) * BM * BN * 4 bytes of received sums and
// 8 bytes of barrier per block of the cluster (block-scaled: + STAGES * (BM * 4 + 16)
// bytes of scales).
// aiter-kernel-family: op=gemm variant=wgmma_ws.{dt}.{shape} symbol=aiter_gemm_wgmma_ws_{dt}_{sym} block={block} smem={smem} dt=bf16@90,e4m3fn@90 shape=64x32.s16.k2:64x32_s16_k2:256:214672,64x64.s12.k2:64x64_s12_k2:256:222928,64x128.s7.k2:64x128_s7_k2:256:214912,128x64.s7.k2:128x64_s7_k2:384:223360,128x128.s4.k2:128x128_s4_k2:384:215632
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.64x128.s7.bs.k2 symbol=aiter_gemm_wgmma_ws_e4m3fn_64x128_s7_bs_k2 block=256 smem=216048
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.128x128.s4.bs.k2 symbol=aiter_gemm_wgmma_ws_e4m3fn_128x128_s4_bs_k2 block=384 smem=216208
