// RMSNorm, add + RMSNorm, LayerNorm, each optionally followed by dynamic
// per-row quantization: one block per row, the row held in registers between
// the statistics pass and the output pass, so x is read once.
#include "../common/numeric.h"
#include "norm_params.h"

namespace {

constexpr int kMaxThreads = 512;  // 128 registers a thread: room for the row cache

template <class T>
__device__ __forceinline__ float param(const void *p, long long i, int f32) {
  return f32 ? static_cast<const float *>(p)[i] : to_f32(static_cast<const T *>(p)[i]);
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
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    if (c >= p.cols) continue;
    Vec<uint8_t, N> q;
#pragma unroll
    for (int i = 0; i < N; ++i) q.v[i] = quantize(y[r][i] * inv, p.quant);
    *reinterpret_cast<Vec<uint8_t, N> *>(static_cast<uint8_t *>(p.out) + base + c) = q;
  }
}

// Each thread owns R chunks of N contiguous elements: chunk r covers columns
// (r * blockDim + tid) * N ... + N.  The host picks blockDim so R chunks suffice.
template <class T, int N, int R>
__device__ void norm_row(const NormParams &p) {
  __shared__ float scratch[32];
  const long long row = block_x();
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  float v[R][N];
  float sum = 0.0f;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    if (c < p.cols) {
      load_f32<T, N>(static_cast<const T *>(p.x) + row * p.x_stride + c, v[r]);
      if (p.kind == kNormAddRms) {
        float res[N];
        load_f32<T, N>(static_cast<const T *>(p.residual) + row * p.residual_stride + c, res);
        Vec<T, N> stored;
#pragma unroll
        for (int i = 0; i < N; ++i) {  // the new residual is rounded to T and normalized as stored
          stored.v[i] = from_f32<T>(v[r][i] + res[i]);
          v[r][i] = to_f32(stored.v[i]);
        }
        *reinterpret_cast<Vec<T, N> *>(static_cast<T *>(p.residual_out) + row * p.residual_out_stride + c) = stored;
      }
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) v[r][i] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < N; ++i) sum += p.kind == kNormLayer ? v[r][i] : v[r][i] * v[r][i];
  }
  const float inv_n = 1.0f / float(p.cols);
  float mean = 0.0f, inv_std;
  if (p.kind == kNormLayer) {
    mean = block_sum(sum, scratch) * inv_n;
    float squares = 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool in_row = (long long)(r * nthreads + tid) * N < p.cols;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float d = v[r][i] - mean;
        squares += in_row ? d * d : 0.0f;
      }
    }
    inv_std = fast_rsqrt(block_sum(squares, scratch) * inv_n + p.eps);
  } else {
    inv_std = fast_rsqrt(block_sum(sum, scratch) * inv_n + p.eps);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    if (c >= p.cols) continue;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float y = (v[r][i] - mean) * inv_std * param<T>(p.weight, c + i, p.params_f32);
      if (p.bias) y += param<T>(p.bias, c + i, p.params_f32);
      v[r][i] = y;
    }
  }
  store_row<T, N, R>(p, row, v, scratch);
}

}  // namespace

// Vector variants need cols % N == 0 and 16-byte aligned rows; scalar ones take anything.
#define AITER_NORM_KERNEL(name, T, N, R) \
  AITER_KERNEL void AITER_LAUNCH_BOUNDS(kMaxThreads) name(NormParams p) { norm_row<T, N, R>(p); }

// aiter-kernel: op=norm variant=f32.vec symbol=aiter_norm_f32_vec4 block=512 smem=0
AITER_NORM_KERNEL(aiter_norm_f32_vec4, float, 4, 16)
// aiter-kernel: op=norm variant=f16.vec symbol=aiter_norm_f16_vec8 block=512 smem=0
AITER_NORM_KERNEL(aiter_norm_f16_vec8, half_t, 8, 8)
// aiter-kernel: op=norm variant=bf16.vec symbol=aiter_norm_bf16_vec8 block=512 smem=0
AITER_NORM_KERNEL(aiter_norm_bf16_vec8, bf16_t, 8, 8)
// aiter-kernel: op=norm variant=f32.scalar symbol=aiter_norm_f32_scalar block=512 smem=0
AITER_NORM_KERNEL(aiter_norm_f32_scalar, float, 1, 16)
// aiter-kernel: op=norm variant=f16.scalar symbol=aiter_norm_f16_scalar block=512 smem=0
AITER_NORM_KERNEL(aiter_norm_f16_scalar, half_t, 1, 16)
// aiter-kernel: op=norm variant=bf16.scalar symbol=aiter_norm_bf16_scalar block=512 smem=0
AITER_NORM_KERNEL(aiter_norm_bf16_scalar, bf16_t, 1, 16)
