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

// Writes the normalized row (already scaled by weight/bias in `y`) as T, or as
// 8-bit values with one scale per row.
template <class T, int N, int R>
__device__ __forceinline__ void store_row(const NormParams &p, long long row, float (&y)[R][N], float *scratch) {
  const long long base = row * p.out_stride;
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  if (p.quant == kQuantNone) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const long long c = (long long)(r * nthreads + tid) * N;
      if (c < p.cols) store_f32<T, N>(static_cast<T *>(p.out) + base + c, y[r]);
    }
    return;
  }
  float amax = 0.0f;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < N; ++i) amax = fmaxf(amax, fabsf(y[r][i]));  // y is 0 past the row's end
  amax = block_max(amax, scratch);
  const float scale = dynamic_scale(amax, p.quant);
  const float inv = 1.0f / scale;
  if (tid == 0) p.scale_out[row * p.scale_stride] = scale;
  // The format picked once, not per element: with quantize(y, p.quant) in the
  // loop every element branched over the four formats (bf16 r2 kernel: 1360
  // instructions, 81 branches).
  with_kind(p.quant, [&](auto kind) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const long long c = (long long)(r * nthreads + tid) * N;
      if (c < p.cols) store_quantized<decltype(kind)::value, N>(static_cast<uint8_t *>(p.out) + base + c, y[r], inv);
    }
  });
}
