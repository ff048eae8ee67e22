// The portable GEMM: any dtype, shape, stride and alignment, on every target
// (NVIDIA and AMD), with plain fp32 FMAs (exact int32 sums for int8).  It is the
// fallback of the tuned selection, not its fast path: 64 x 64 output tiles, 256
// threads each computing 4 x 4, K in steps of 16 through shared memory, where
// the operands are stored decoded to fp32 and K-major so a thread's 4 rows and
// 4 columns are two 16-byte reads.  Block-scaled products flush the partial sum
// of each 128-wide K group times its scales (16 divides 128).
#include "gemm_elements.h"

namespace {

constexpr int kTile = 64, kStepK = 16, kThreads = 256;

template <class T, class Acc>
__device__ __forceinline__ void gemm_generic(const GemmParams &p) {
  __shared__ float as[kStepK][kTile + 4];
  __shared__ float ws[kStepK][kTile + 4];
  const long long batch = block_z();
  const long long row0 = (long long)block_y() * kTile, col0 = (long long)block_x() * kTile;
  const T *a = static_cast<const T *>(p.a) + batch * p.a_batch;
  const T *w = static_cast<const T *>(p.w) + batch * p.w_batch;
  const int tid = thread_x(), tr = tid / 16, tc = tid % 16;

  Acc acc[4][4] = {};
  float total[4][4] = {};  // block-scaled: the sum of scaled groups
  for (long long k0 = 0; k0 < p.k; k0 += kStepK) {
    // 64 x 16 elements of each operand, 4 per thread; outside the matrix is 0.
    for (int i = tid; i < kTile * kStepK; i += kThreads) {
      const int r = i / kStepK, kk = i % kStepK;
      const long long k = k0 + kk;
      const bool k_in = k < p.k;
      as[kk][r] = k_in && row0 + r < p.m ? to_f32(a[(row0 + r) * p.lda + k]) : 0.0f;
      ws[kk][r] = k_in && col0 + r < p.n ? to_f32(w[(col0 + r) * p.ldw + k]) : 0.0f;
    }
    sync_block();
#pragma unroll
    for (int kk = 0; kk < kStepK; ++kk) {
      float av[4], wv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[kk][tr * 4 + i], wv[i] = ws[kk][tc * 4 + i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += Acc(av[i]) * Acc(wv[j]);
    }
    sync_block();
    const bool group_ends = (k0 + kStepK) % 128 == 0 || k0 + kStepK >= p.k;
    if (p.block_scaled && group_ends) {
      const int g = int(k0 / 128);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const long long r = row0 + tr * 4 + i, c = col0 + tc * 4 + j;
          if (r < p.m && c < p.n) total[i][j] += float(acc[i][j]) * block_scale(p, batch, r, c, g);
          acc[i][j] = Acc(0);
        }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const long long r = row0 + tr * 4 + i, c = col0 + tc * 4 + j;
      if (r < p.m && c < p.n)
        store_output(p, batch, r, c, p.block_scaled ? total[i][j] : float(acc[i][j]), p.block_scaled);
    }
}

}  // namespace

#define GENERIC(name, T, Acc) AITER_ENTRY(aiter_gemm_generic_##name, kThreads, GemmParams, gemm_generic<T, Acc>)

// aiter-kernel: op=gemm variant=generic.f32 symbol=aiter_gemm_generic_f32 block=256 smem=0
GENERIC(f32, float, float)
// aiter-kernel: op=gemm variant=generic.f16 symbol=aiter_gemm_generic_f16 block=256 smem=0
GENERIC(f16, half_t, float)
// aiter-kernel: op=gemm variant=generic.bf16 symbol=aiter_gemm_generic_bf16 block=256 smem=0
GENERIC(bf16, bf16_t, float)
// aiter-kernel: op=gemm variant=generic.i8 symbol=aiter_gemm_generic_i8 block=256 smem=0
GENERIC(i8, int8_t, int)
// aiter-kernel: op=gemm variant=generic.e4m3fn symbol=aiter_gemm_generic_e4m3fn block=256 smem=0
GENERIC(e4m3fn, e4m3fn_t, float)
// aiter-kernel: op=gemm variant=generic.e4m3fnuz symbol=aiter_gemm_generic_e4m3fnuz block=256 smem=0
GENERIC(e4m3fnuz, e4m3fnuz_t, float)
// aiter-kernel: op=gemm variant=generic.e5m2 symbol=aiter_gemm_generic_e5m2 block=256 smem=0
GENERIC(e5m2, e5m2_t, float)
