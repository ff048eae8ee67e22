// Instances of the warp-specialized Hopper GEMM (wgmma_ws.h) without clusters.
#include "wgmma_ws.h"

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
WGMMA_WS(e4m3fn, e4m3fn_t, 64, 128, 8, true, _bs)  // few rows of A: twice the blocks
WGMMA_WS(e4m3fn, e4m3fn_t, 192, 128, 4, true, _bs)  // three multiplying warpgroups, one set of sums each
#define WGMMA_WS_PROMOTED(dt, T, BM, BN, S)                                                               \
  extern "C" __global__ void __launch_bounds__(128 + 2 * BM, 1)                                          \
      aiter_gemm_wgmma_ws_##dt##_##BM##x##BN##_s##S##_fp32sum(const __grid_constant__ GemmTmaParams q) { \
    WgmmaWs<T, BM, BN, S, false, true>::run(q);                                                         \
  }
WGMMA_WS_PROMOTED(e4m3fn, e4m3fn_t, 128, 128, 6)
WGMMA_WS_PROMOTED(e4m3fn, e4m3fn_t, 64, 64, 12)

// Variant names: wgmma_ws.<dtype>.<BM>x<BN>.s<STAGES>; 128 + 2 * BM threads; shared
// memory = STAGES * (BM + BN) * 128 bytes + 1 KiB for the 1024-byte alignment + 16
// bytes of barriers per stage + 2 KiB per multiplying warp for the epilogue
// (staged_store.h) where that fits in 227 KiB (not 128x224.s5 and 128x160.s6);
// a8w8 tiles with that staging: + (BN + 64) * 4 bytes per multiplying warpgroup
// for its block's scales (staged_scales.h; the kernel stages them only if the
// launch gives it the room); block-scaled: + STAGES * (BM * 4 + 16) bytes of scales.  (192x128.s5.bs, without room
// for the staging, took 1.3x the time of 192x128.s4.bs.)
// aiter-kernel-family: op=gemm variant=wgmma_ws.{dt}.{shape} symbol=aiter_gemm_wgmma_ws_{dt}_{sym} block={block} smem={smem} dt=bf16@90,f16@90,e4m3fn@90,e5m2@90 shape=128x256.s4:128x256_s4:384:216640,128x224.s5:128x224_s5:384:226384,128x192.s5:128x192_s5:384:224336,128x160.s6:128x160_s6:384:222304,128x128.s6:128x128_s6:384:215648,128x64.s8:128x64_s8:384:215168,64x64.s12:64x64_s12:256:206528,64x32.s16:64x32_s16:256:206464
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.128x128.s6.bs symbol=aiter_gemm_wgmma_ws_e4m3fn_128x128_s6_bs block=384 smem=217280
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.64x128.s8.bs symbol=aiter_gemm_wgmma_ws_e4m3fn_64x128_s8_bs block=256 smem=208128
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.192x128.s4.bs symbol=aiter_gemm_wgmma_ws_e4m3fn_192x128_s4_bs block=512 smem=192640
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.128x128.s6.fp32sum symbol=aiter_gemm_wgmma_ws_e4m3fn_128x128_s6_fp32sum block=384 smem=215648
// aiter-kernel: op=gemm variant=wgmma_ws.e4m3fn.64x64.s12.fp32sum symbol=aiter_gemm_wgmma_ws_e4m3fn_64x64_s12_fp32sum block=256 smem=206528
