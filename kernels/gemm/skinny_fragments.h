// The arithmetic of the skinny kernels (M <= 16), shared by the one that loads
// W into registers (gemm_skinny.cu) and the one that copies W into shared
// memory in bulk (gemm_skinny_bulk.cu).  out^T = W A^T: a block's 16 * RT rows
// of W fill the 16-row side of m16n8 tensor-core tiles, its NT * 8 tokens the
// 8-column side.  A "fragment pair" is 64 bytes of K: thread (g = lane / 4,
// t = lane % 4) holds 16 bytes at byte 16 * t of rows g and g + 8 of each
// 16-row W tile and of token g of each 8-token group; the dot product does not
// care which K lands in which fragment slot, only that W and A agree (mma.h).
#pragma once

#include "mma.h"

#if defined(AITER_NVIDIA)

template <class T, int NT, int RT, bool BS>
struct SkinnyMath {
  using Mma = MmaOf<T>;
  using Acc = typename Mma::Acc;
  static constexpr int kElems = 16 / int(sizeof(T));  // elements per 16-byte piece
  static constexpr int kPairElems = 4 * kElems;       // K of a fragment pair: 4 lanes x 16 bytes
  static constexpr int kRows = 16 * RT;

  // Block-scaled: a_scale[token, group] * w_scale[n0 / 128, group] for the
  // tokens of this thread's sums (a block's rows lie in one 128-row block).
  static __device__ __forceinline__ void scales(const GemmParams &p, long long batch, long long n0, long long k,
                                                float (&s)[NT][2]) {
    const int group = int(k / 128);
    const float ws = p.w_scale[batch * p.w_scale_batch + (n0 / 128) * p.kgroups + group];
    const int t = int(threadIdx.x % 32) % 4;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const long long m = j * 8 + t * 2 + c;
        s[j][c] = ws * p.a_scale[batch * p.a_scale_batch + (m < p.m ? m : p.m - 1) * p.kgroups + group];
      }
  }

  // acc += the products of one fragment pair: w[r][h] rows 16 r + 8 h + g of
  // W, a[j] token 8 j + g; block-scaled sums are scaled before they are added.
  static __device__ __forceinline__ void multiply(Acc (&acc)[RT][NT][4], const uint4 (&w)[RT][2],
                                                  const uint4 (&a)[NT], const float (&s)[NT][2]) {
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const uint4 &lo = w[r][0], &hi = w[r][1], &b = a[j];
        Acc part[4] = {};
        Acc (&sum)[4] = BS ? part : acc[r][j];
        Mma::run(sum, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
        Mma::run(sum, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
        if constexpr (BS)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[r][j][e] += part[e] * s[j][e % 2];
      }
  }

  // Each of WARPS warps writes its sums of rows n0.. to `partial`; after
  // `sync()`, `threads` threads (numbered `thread`) add them up and store
  // the outputs.  The caller syncs again before reusing `partial`.
  template <int WARPS, class Sync>
  static __device__ __forceinline__ void store_sums(const GemmParams &p, long long batch, long long n0,
                                                    const Acc (&acc)[RT][NT][4],
                                                    Acc (&partial)[WARPS][kRows][NT * 8 + 1], unsigned thread, int threads,
                                                    Sync sync) {
    // `thread` unsigned: its % and / are shifts (signed ones cost more instructions)
    const int lane = thread % 32, warp = thread / 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[warp][r * 16 + g + (i / 2) * 8][j * 8 + t * 2 + i % 2] = acc[r][j][i];
    sync();
    for (int idx = int(thread); idx < kRows * NT * 8; idx += threads) {
      const int row = idx / (NT * 8), token = idx % (NT * 8);
      const long long n = n0 + row;
      if (n >= p.n || token >= p.m) continue;
      Acc sum = 0;
#pragma unroll
      for (int v = 0; v < WARPS; ++v) sum += partial[v][row][token];
      store_output(p, batch, token, n, float(sum), BS);
    }
  }
};

#endif  // AITER_NVIDIA
