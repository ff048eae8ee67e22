// GEMM for few rows of A (M <= 16: decode and small batches), where the time is
// the time to stream W once.  The product is computed transposed, out^T = W A^T,
// so W's rows fill the 16-row side of the tensor-core tile and the tokens its
// 8-column side.  Each thread loads 16 contiguous bytes of a W row and the same
// 16 bytes of K of a token straight from global memory into registers: the dot
// product does not care which K lands in which fragment slot, only that W and
// A agree, so no shared memory staging or shuffles are needed (mma.h).
//
// A block owns 16 * RT rows of W and all M <= 8 * NT tokens; its WARPS warps
// split K, each streaming U * 64 bytes of every row per step with the next
// step's loads in flight, and the partial sums meet in shared memory.  Requires K * element size, the row strides and
// the pointers to be multiples of 16 bytes (the launcher checks).
#include "mma.h"

namespace {

// U: K pairs of each row a warp has in flight per buffer: 2, and 1 for 8-bit W
// with 16 tokens and 32 rows; block-scaled 4 / RT.  Fewer registers, more
// blocks per multiprocessor: sm_90 runs the fp8 mma.sync as fp16 products after
// converting both operands in registers, and at U = 4 / RT the 8-bit kernels
// took up to 238 registers, one block per multiprocessor (H100 A/B,
// docs/performance_gemm.md, geometric means over the Llama shapes: fp8 16
// tokens x 16 rows x 8 warps 1.39x the peer against 1.22x, 8 tokens 1.55x
// against 1.38x; bf16 1.06x against 1.00x and 1.10x against 1.07x).  The
// block-scaled ones took 1.3-1.4x the time with U halved.
template <int NT, int RT, bool EIGHT_BIT, bool BS>
constexpr int kSkinnyPairs = BS ? 4 / RT : EIGHT_BIT && NT == 2 && RT == 2 ? 1 : 2;

// Block-scaled (BS): each fragment pair's 64 K lie in one 128-wide group, whose
// sums are added times a_scale[token, g] * w_scale[n / 128, g] (a block's 16 or
// 32 rows of W lie in one 128-row block of scales).
template <class T, int NT, int RT, int WARPS, bool BS = false, int U = kSkinnyPairs<NT, RT, sizeof(T) == 1, BS>>
__device__ __forceinline__ void gemm_skinny(const GemmParams &p) {
  using Mma = MmaOf<T>;
  using Acc = typename Mma::Acc;
  constexpr int kElems = 16 / int(sizeof(T));  // elements per 16-byte load
  constexpr int kStep = 4 * kElems;            // K per fragment pair: 4 lanes x 16 bytes
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
  uint4 w0[RT][2][U], a0[NT][U], w1[RT][2][U], a1[NT][U];
  auto load = [&](uint4 (&wv)[RT][2][U], uint4 (&av)[NT][U], long long k0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long long k = k0 + u * kStep + t * kElems;
      const bool in = k < p.k;
      const uint4 zero = {0, 0, 0, 0};
#pragma unroll
      for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) wv[r][h][u] = in ? load_stream(w_rows[r][h] + k * sizeof(T)) : zero;
#pragma unroll
      for (int j = 0; j < NT; ++j) av[j][u] = in ? load_cached(a_rows[j] + k * sizeof(T)) : zero;
    }
  };
  Acc acc[RT][NT][4] = {};
  // The scales of K step u of the step at k0 (block-scaled only).
  auto scales = [&](long long k, float (&s)[NT][2]) {
    const int group = int(k / 128);
    const float ws = p.w_scale[batch * p.w_scale_batch + (n0 / 128) * p.kgroups + group];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const long long m = j * 8 + t * 2 + c;
        s[j][c] = ws * p.a_scale[batch * p.a_scale_batch + (m < p.m ? m : p.m - 1) * p.a_scale_row +
                                 group * p.a_scale_group];
      }
  };
  auto multiply = [&](const uint4 (&wv)[RT][2][U], const uint4 (&av)[NT][U], long long k0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float s[NT][2];
      if constexpr (BS) {
        if (k0 + u * kStep >= p.k) break;  // past K: zeros, and no scales to read
        scales(k0 + u * kStep, s);
      }
#pragma unroll
      for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint4 &lo = wv[r][0][u], &hi = wv[r][1][u], &b = av[j][u];
          Acc part[4] = {};
          Acc (&sum)[4] = BS ? part : acc[r][j];
          Mma::run(sum, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
          Mma::run(sum, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
          if constexpr (BS)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[r][j][e] += part[e] * s[j][e % 2];
        }
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

#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) partial[warp][r * 16 + g + (i / 2) * 8][j * 8 + t * 2 + i % 2] = acc[r][j][i];
  __syncthreads();
  for (int idx = threadIdx.x; idx < RT * 16 * NT * 8; idx += WARPS * 32) {
    const int row = idx / (NT * 8), token = idx % (NT * 8);
    const long long n = n0 + row;
    if (n >= p.n || token >= p.m) continue;
    Acc sum = 0;
#pragma unroll
    for (int v = 0; v < WARPS; ++v) sum += partial[v][row][token];
    store_output(p, batch, token, n, float(sum), BS);
  }
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
// RT * 16 rows of W per block, WARPS warps splitting K (kSkinnyPairs: the
// loads of each row in flight per warp and buffer).
// aiter-kernel-family: op=gemm variant=skinny.{dt}.t{nt}.r{rt}.w{w} symbol=aiter_gemm_skinny_{dt}_t{nt}_r{rt}_w{w} block={block} smem=0 dt=bf16,f16,i8,e4m3fn@89,e5m2@89 nt=1,2 rt=1,2 w=4:128,8:256
// aiter-kernel-family: op=gemm variant=skinny.{dt}.t{nt}.r{rt}.w{w}.bs symbol=aiter_gemm_skinny_{dt}_t{nt}_r{rt}_w{w}_bs block={block} smem=0 dt=e4m3fn@89 nt=1,2 rt=1,2 w=4:128,8:256
