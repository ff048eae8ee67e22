// A row's chunks in and out of a norm kernel's threads, shared by the one-block-
// a-row tiles (norm.cu) and the persistent ring kernels (norm_ring.cu).  Each
// thread owns R chunks of N contiguous elements: chunk r covers columns
// (r * blockDim + tid) * N ... + N.
#pragma once

#include "../common/numeric.h"
#include "../common/quant_store.h"
#include "norm_params.h"

// A thread's R chunks of a row of `cols` elements starting at `row`, loaded at
// once: chunks past the row load the row's first chunk again (unused), so that no
// load waits behind a branch.
template <class T, int N, int R>
__device__ __forceinline__ void load_chunks(const T *row, long long cols, Vec<T, N> (&chunks)[R]) {
  const unsigned tid = thread_x(), nthreads = block_dim_x();
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    chunks[r] = load_vec<T, N>(row + (c < cols ? c : 0));
  }
}

// The row's scale for 8-bit format `kind`, from the amax of y (0 past the row's
// end) over the block, stored; returns 1 / scale.
template <int N, int R>
__device__ __forceinline__ float store_row_scale(const NormParams &p, long long row, const float (&y)[R][N], int kind,
                                                 float *scratch) {
  float amax = 0.0f;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < N; ++i) amax = fmaxf(amax, fabsf(y[r][i]));
  amax = block_max(amax, scratch);
  const float scale = dynamic_scale(amax, kind);
  const float inv = 1.0f / scale;
  if (thread_x() == 0) p.scale_out[row * p.scale_stride] = scale;
  return inv;
}

// y * inv_scale in 8-bit format K, the thread's chunks of the row at `out`.
template <int K, int N, int R>
__device__ __forceinline__ void store_quantized_row(const NormParams &p, uint8_t *out, const float (&y)[R][N],
                                                    float inv_scale) {
  const unsigned tid = thread_x(), nthreads = block_dim_x();
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    if (c < p.cols) store_quantized<K, N>(out + c, y[r], inv_scale);
  }
}

// Writes the normalized row (already scaled by weight/bias in `y`) as T, or as
// 8-bit values with one scale per row.
template <class T, int N, int R>
__device__ __forceinline__ void store_row(const NormParams &p, long long row, float (&y)[R][N], float *scratch) {
  const long long base = row * p.out_stride;
  if (p.quant == kQuantNone) {
    const unsigned tid = thread_x(), nthreads = block_dim_x();
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const long long c = (long long)(r * nthreads + tid) * N;
      if (c < p.cols) store_f32<T, N>(static_cast<T *>(p.out) + base + c, y[r]);
    }
    return;
  }
  const float inv = store_row_scale<N, R>(p, row, y, p.quant, scratch);
  // The format picked once, not per element: with quantize(y, p.quant) in the
  // loop every element branched over the four formats (bf16 r2 kernel: 1360
  // instructions, 81 branches).
  with_kind(p.quant, [&](auto kind) {
    store_quantized_row<decltype(kind)::value, N, R>(p, static_cast<uint8_t *>(p.out) + base, y, inv);
  });
}
