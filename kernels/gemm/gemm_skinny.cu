// GEMM for few rows of A (M <= 16: decode and small batches), where the time is
// the time to stream W once (fragment layout and arithmetic: skinny_fragments.h).
// Each thread loads 16 contiguous bytes of W rows and of tokens straight from
// global memory into registers: no shared memory staging or shuffles.
//
// A block owns 16 * RT rows of W and all M <= 8 * NT tokens; its WARPS warps
// split K, each streaming U * 64 bytes of every row per step with the next
// step's loads in flight, and the partial sums meet in shared memory.  Requires
// K * element size, the row strides and the pointers to be multiples of 16
// bytes (the launcher checks).  gemm_skinny_bulk.cu streams W into shared
// memory instead (sm_90a).
#include "skinny_fragments.h"

namespace {

// Block-scaled (BS): each fragment pair's 64 K lie in one 128-wide group, whose
// sums are added times a_scale[token, g] * w_scale[n / 128, g] (a block's 16 or
// 32 rows of W lie in one 128-row block of scales).
template <class T, int NT, int RT, int WARPS, bool BS = false, int U = RT == 1 ? 4 : 2>
__device__ __forceinline__ void gemm_skinny(const GemmParams &p) {
  using Math = SkinnyMath<T, NT, RT, BS>;
  using Acc = typename Math::Acc;
  constexpr int kElems = Math::kElems, kStep = Math::kPairElems;
  __shared__ Acc partial[WARPS][RT * 16][NT * 8 + 1];

  const long long batch = blockIdx.z;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const long long n0 = (long long)blockIdx.x * RT * 16;
  const char *w_rows[RT][2];
  const char *a_rows[NT];
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // rows past N read row N - 1; their results are dropped
      const long long n = n0 + r * 16 + h * 8 + g;
      w_rows[r][h] = static_cast<const char *>(p.w) + (batch * p.w_batch + (n < p.n ? n : p.n - 1) * p.ldw) * sizeof(T);
    }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const long long m = j * 8 + g;
    a_rows[j] = static_cast<const char *>(p.a) + (batch * p.a_batch + (m < p.m ? m : p.m - 1) * p.lda) * sizeof(T);
  }

  // Two register buffers: the loads of the next step are in flight while the
  // current one multiplies.
  uint4 w0[U][RT][2], a0[U][NT], w1[U][RT][2], a1[U][NT];
  auto load = [&](uint4 (&wv)[U][RT][2], uint4 (&av)[U][NT], long long k0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long k = k0 + u * kStep + t * kElems;
      const bool in = k < p.k;
      const uint4 zero = {0, 0, 0, 0};
#pragma unroll
      for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) wv[u][r][h] = in ? load_stream(w_rows[r][h] + k * sizeof(T)) : zero;
#pragma unroll
      for (int j = 0; j < NT; ++j) av[u][j] = in ? load_cached(a_rows[j] + k * sizeof(T)) : zero;
    }
  };
  Acc acc[RT][NT][4] = {};
  auto multiply = [&](const uint4 (&wv)[U][RT][2], const uint4 (&av)[U][NT], long long k0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float s[NT][2];
      if constexpr (BS) {
        if (k0 + u * kStep >= p.k) break;  // past K: zeros, and no scales to read
        Math::scales(p, batch, n0, k0 + u * kStep, s);
      }
      Math::multiply(acc, wv[u], av[u], s);
    }
  };
  const long long stride = (long long)WARPS * U * kStep;
  long long k0 = (long long)warp * U * kStep;
  if (k0 < p.k) load(w0, a0, k0);
  for (; k0 < p.k; k0 += 2 * stride) {
    if (k0 + stride < p.k) load(w1, a1, k0 + stride);
    multiply(w0, a0, k0);
    if (k0 + stride >= p.k) break;
    if (k0 + 2 * stride < p.k) load(w0, a0, k0 + 2 * stride);
    multiply(w1, a1, k0 + stride);
  }
  Math::template store_sums<WARPS>(p, batch, n0, acc, partial, threadIdx.x, WARPS * 32, [] { __syncthreads(); });
}

}  // namespace

#define SKINNY(dt, T, NT, RT, WARPS)                                                     \
  AITER_ENTRY(aiter_gemm_skinny_##dt##_t##NT##_r##RT##_w##WARPS, WARPS * 32, GemmParams, \
              gemm_skinny<T, NT, RT, WARPS>)
#define SKINNY_SHAPES(dt, T) \
  SKINNY(dt, T, 1, 1, 4)     \
  SKINNY(dt, T, 1, 1, 8)     \
  SKINNY(dt, T, 1, 2, 4)     \
  SKINNY(dt, T, 1, 2, 8)     \
  SKINNY(dt, T, 2, 1, 4)     \
  SKINNY(dt, T, 2, 1, 8)     \
  SKINNY(dt, T, 2, 2, 4)     \
  SKINNY(dt, T, 2, 2, 8)

SKINNY_SHAPES(bf16, bf16_t)
SKINNY_SHAPES(f16, half_t)
SKINNY_SHAPES(i8, int8_t)
SKINNY_SHAPES(e4m3fn, e4m3fn_t)
SKINNY_SHAPES(e5m2, e5m2_t)

#define SKINNY_BS(NT, RT, WARPS)                                                              \
  AITER_ENTRY(aiter_gemm_skinny_e4m3fn_t##NT##_r##RT##_w##WARPS##_bs, WARPS * 32, GemmParams, \
              gemm_skinny<e4m3fn_t, NT, RT, WARPS, true>)
SKINNY_BS(1, 1, 4)
SKINNY_BS(1, 1, 8)
SKINNY_BS(1, 2, 4)
SKINNY_BS(1, 2, 8)
SKINNY_BS(2, 1, 4)
SKINNY_BS(2, 1, 8)
SKINNY_BS(2, 2, 4)
SKINNY_BS(2, 2, 8)

// The variant names are skinny.<dtype>.t<NT>.r<RT>.w<WARPS>: NT * 8 tokens,
// RT * 16 rows of W per block, WARPS warps splitting K (U = 4 / RT loads of
// each row in flight per warp and buffer).
// aiter-kernel-family: op=gemm variant=skinny.{dt}.t{nt}.r{rt}.w{w} symbol=aiter_gemm_skinny_{dt}_t{nt}_r{rt}_w{w} block={block} smem=0 dt=bf16,f16,i8,e4m3fn@89,e5m2@89 nt=1,2 rt=1,2 w=4:128,8:256
// aiter-kernel-family: op=gemm variant=skinny.{dt}.t{nt}.r{rt}.w{w}.bs symbol=aiter_gemm_skinny_{dt}_t{nt}_r{rt}_w{w}_bs block={block} smem=0 dt=e4m3fn@89 nt=1,2 rt=1,2 w=4:128,8:256
