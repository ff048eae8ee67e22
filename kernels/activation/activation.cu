// Gated activations act(gate) * up, and silu_and_mul fused with dynamic per-row
// quantization.  All arithmetic in fp32, rounded once on the store.
//
// gated: a 2-D grid, x over blocks of a row's columns and y over rows, so that
// one long row spreads over many blocks as well as many rows do.  Each thread
// owns one chunk of N columns (16 bytes in the vector variants) of the gate,
// the up half and out.  No shared memory, no barrier.
//
// silu_and_mul_quant: one block per row.  Rows of up to 32768 columns (16-bit x;
// 16384 for fp32) in 16-byte chunks keep their fp32 products in registers between
// the amax reduction and the quantized store, so x is read once, chunk by chunk,
// or, for many rows of up to 256 threads' chunks, all loads first; longer rows,
// and rows not in 16-byte chunks, are read twice (the second time mostly from L2).
#include "../common/numeric.h"
#include "../common/quant_store.h"
#include "../common/strided_loop.h"
#include "activation_params.h"

namespace {

constexpr int kGatedThreads = 256;
constexpr int kScalarRun = 4;       // elements a thread of the scalar gated kernels
constexpr int kQuantThreads = 1024;  // 64 registers a thread
constexpr int kQuantChunks = 4;      // chunks of products a thread keeps in silu_quant_cached
// The loads-first kernel: blocks of up to 256 threads, three an SM, so up to 80
// registers a thread (65536 / 768): what its loads in flight need for bf16.
constexpr int kLoadsFirstThreads = 256;
constexpr int kLoadsFirstBlocks = 3;

// How silu_quant reads a row: chunk by chunk, all loads first (both keep the
// products in registers), or twice.
enum RowRead { kChunkwise, kLoadsFirst, kTwice };

// ---- the activations --------------------------------------------------------------
// g * sigmoid(a) = g / (1 + exp(-a)): where exp overflows the quotient is +-0, never
// NaN.  fast_div (2 ulp) rather than an IEEE division, whose slow-path subroutine
// costs the register-cached quantizing kernel its stack-free, spill-free build.
__device__ __forceinline__ float times_sigmoid(float g, float a) { return fast_div(g, 1.0f + fast_exp(-a)); }

struct Silu {
  __device__ __forceinline__ float operator()(float g) const { return times_sigmoid(g, g); }
};

// 0.5 (1 + tanh(u)) = sigmoid(2u): the tanh form with no tanh, no cancellation near
// u = 0 and no inf - inf for large |u|.
struct GeluTanh {
  __device__ __forceinline__ float operator()(float g) const {
    const float u = 0.79788456080286536f * (g + 0.044715f * g * g * g);  // sqrt(2/pi) (g + 0.044715 g^3)
    return times_sigmoid(g, 2.0f * u);
  }
};

// 0.5 (1 + erf(z)), absolute error below 1e-7 (against double erf, fp32 rounding
// and a 2-ulp exp included).  For z <= -1 it is 0.5 erfc(-z), computed without
// the cancellation of 1 + erf(z).  The coefficients are Chebyshev least-squares
// fits in double, rounded to fp32:
//   |z| < 1:     erf(z) = z + z p(z^2), with p(s) ~ erf(sqrt s) / sqrt s - 1
//   1 <= t < 4:  erfc(t) = exp(-t^2) q(t - 2.5), with q(t) ~ erfc(t) exp(t^2)
//   t >= 4:      erfc(t) < 1.6e-8, taken as 0
// Both pieces are computed and one selected, with no branch: a branch per element
// made nearly every warp run both sides anyway, plus the branching.  Measured on
// an H100 (bf16, graph replay): 4096 x 4096 45.5 -> 42.0 us, 4096 x 8192 83.9 ->
// 77.6 us; CUDA's erfcf in its place took 51 and 94 us.
__device__ __forceinline__ float half_one_plus_erf(float z) {
  const float t = fabsf(z);
  const float s = z * z;
  float p = 7.882497448e-05f;
  p = p * s - 8.018855006e-04f;
  p = p * s + 5.189312156e-03f;
  p = p * s - 2.685432881e-02f;
  p = p * s + 1.128359735e-01f;
  p = p * s - 3.761262596e-01f;
  p = p * s + 1.283791661e-01f;
  const float near_zero = 0.5f + 0.5f * (p * z + z);
  const float u = t - 2.5f;
  float q = 1.671801783e-06f;
  q = q * u - 6.386085715e-06f;
  q = q * u + 1.435366266e-05f;
  q = q * u - 5.358580893e-05f;
  q = q * u + 2.129720815e-04f;
  q = q * u - 7.389975945e-04f;
  q = q * u + 2.465982456e-03f;
  q = q * u - 7.999345660e-03f;
  q = q * u + 2.493820339e-02f;
  q = q * u - 7.434760034e-02f;
  q = q * u + 2.108063549e-01f;
  const float half_erfc = t < 4.0f ? 0.5f * q * fast_exp(-(t * t)) : 0.0f;  // NaN z lands here: 0
  const float tails = z > 0.0f ? 1.0f - half_erfc : half_erfc;
  return t < 1.0f ? near_zero : tails;
}

struct GeluExact {
  __device__ __forceinline__ float operator()(float g) const {
    return g * half_one_plus_erf(g * 0.70710678118654752f);  // g / sqrt 2
  }
};

// ---- gated --------------------------------------------------------------------------
template <class T, int N, class Act>
__device__ __forceinline__ void gated_chunk(const ActivationParams &p, Act act) {
  const long long c = ((long long)block_x() * block_dim_x() + thread_x()) * N;
  if (c >= p.cols) return;
  for_strided(block_y(), p.rows, p.row_step, [&](long long row) {
    const T *x = static_cast<const T *>(p.x) + row * p.x_stride + c;
    float gate[N], up[N];
    load_f32<T, N>(x, gate);
    load_f32<T, N>(x + p.cols, up);
#pragma unroll
    for (int i = 0; i < N; ++i) gate[i] = act(gate[i]) * up[i];
    store_f32<T, N>(static_cast<T *>(p.out) + row * p.out_stride + c, gate);
  });
}

// Rows of x at an odd element offset, which no vector access fits: kScalarRun
// single elements a thread, a block's width apart, so that a warp's accesses
// stay contiguous and each thread has 2 * kScalarRun loads in flight.  One
// element a thread (65536 blocks of 256 for 4096 x 4096) took SiLU 91 us on an
// H100, against 53 us now and torch.compile's 62 (graph replay, same run).
template <class T, class Act>
__device__ __forceinline__ void gated_strided(const ActivationParams &p, Act act) {
  const long long step = block_dim_x();
  const long long first = (long long)block_x() * step * kScalarRun + thread_x();
  if (first >= p.cols) return;
  for_strided(block_y(), p.rows, p.row_step, [&](long long row) {
    const T *x = static_cast<const T *>(p.x) + row * p.x_stride;
    float gate[kScalarRun], up[kScalarRun];
#pragma unroll
    for (int i = 0; i < kScalarRun; ++i) {
      const long long c = first + i * step;
      gate[i] = c < p.cols ? to_f32(x[c]) : 0.0f;
      up[i] = c < p.cols ? to_f32(x[p.cols + c]) : 0.0f;
    }
    T *out = static_cast<T *>(p.out) + row * p.out_stride;
#pragma unroll
    for (int i = 0; i < kScalarRun; ++i) {
      const long long c = first + i * step;
      if (c < p.cols) out[c] = from_f32<T>(act(gate[i]) * up[i]);
    }
  });
}

template <class T, int N, class Act>
__device__ __forceinline__ void gated_rows(const ActivationParams &p, Act act) {
  if constexpr (N == 1) gated_strided<T>(p, act);
  else gated_chunk<T, N>(p, act);
}

// The activation is chosen once per thread, not per element.
template <class T, int N>
__device__ void gated(const ActivationParams &p) {
  switch (p.act) {
    case kActSilu: return gated_rows<T, N>(p, Silu{});
    case kActGeluExact: return gated_rows<T, N>(p, GeluExact{});
    default: return gated_rows<T, N>(p, GeluTanh{});
  }
}

// ---- silu_and_mul + per-row quantization ---------------------------------------------
// Both kernels compute y = silu(gate) * up in fp32 (not rounded to T), find the
// row's amax over the block, and store y * (1 / scale) quantized: the CPU's
// order of operations, so that both round alike.
__device__ __forceinline__ float silu_times(float g, float up) { return Silu{}(g) * up; }

template <int Q>
__device__ __forceinline__ float row_scale(float amax, float *scratch, float *scale_out, long long row) {
  const float scale = dynamic_scale(block_max(amax, scratch), Q);  // fmaxf skipped NaN, as the CPU does
  if (thread_x() == 0) scale_out[row] = scale;
  return scale;
}

template <class T, int N>
__device__ __forceinline__ void silu_chunk(const T *gate, const T *up_half, float (&y)[N]) {
  float up[N];
  load_f32<T, N>(gate, y);
  load_f32<T, N>(up_half, up);
#pragma unroll
  for (int i = 0; i < N; ++i) y[i] = silu_times(y[i], up[i]);
}

// A thread's products of a row, chunk r covering columns (r * blockDim + tid) * N
// ... + N, and their amax.  Chunk by chunk: a trip to memory a chunk, within 64
// registers, and chunks past the row cost nothing (with few rows, a thread has
// one chunk).
template <class T, int N>
__device__ __forceinline__ float products_chunkwise(const T *x, int cols, float (&y)[kQuantChunks][N]) {
  const int tid = int(thread_x()), nthreads = int(block_dim_x());
  float amax = 0.0f;
#pragma unroll
  for (int r = 0; r < kQuantChunks; ++r) {
    const int c = (r * nthreads + tid) * N;
    if (c >= cols) continue;
    silu_chunk<T, N>(x + c, x + cols + c, y[r]);
#pragma unroll
    for (int i = 0; i < N; ++i) amax = fmaxf(amax, fabsf(y[r][i]));
  }
  return amax;
}

// The same, every load issued before the first product: one trip to memory a row.
// For many rows: an H100 (bf16 -> fp8, 2026-11-24) took 36.0-36.5 us at 4096 x
// 4096 against 38.2-38.7 chunk by chunk, 224.8-224.9 against 232.9-233.7 at 16384
// x 8192; with 64 registers the same code spilled 332 bytes a thread, and with 80
// an SM holds one block of 448 threads (rows of 14336) where it held two (119 us
// against 115 at 4096 x 14336), hence blocks of up to 256 threads.
template <class T, int N>
__device__ __forceinline__ float products_loads_first(const T *x, int cols, float (&y)[kQuantChunks][N]) {
  const int tid = int(thread_x()), nthreads = int(block_dim_x());
  Vec<T, N> gate[kQuantChunks] = {}, up[kQuantChunks] = {};  // past the row: silu(0) * 0 = 0
#pragma unroll
  for (int r = 0; r < kQuantChunks; ++r) {
    const int c = (r * nthreads + tid) * N;
    if (c >= cols) continue;
    gate[r] = load_vec<T, N>(x + c);
    up[r] = load_vec<T, N>(x + cols + c);
  }
  float amax = 0.0f;
#pragma unroll
  for (int r = 0; r < kQuantChunks; ++r)
#pragma unroll
    for (int i = 0; i < N; ++i) {
      y[r][i] = silu_times(to_f32(gate[r].v[i]), to_f32(up[r].v[i]));
      amax = fmaxf(amax, fabsf(y[r][i]));
    }
  return amax;
}

// Rows of up to blockDim * kQuantChunks * N columns, read once: each thread keeps
// kQuantChunks chunks of N products in registers.
template <class T, int N, int Q, RowRead kRead>
__device__ __forceinline__ void silu_quant_cached(const ActivationParams &p, float *scratch) {
  const int tid = int(thread_x()), nthreads = int(block_dim_x());
  const int cols = int(p.cols);  // at most kQuantThreads * kQuantChunks * N (the host checks)
  for (long long row = block_x(); row < p.rows; row += p.row_step) {
    const T *x = static_cast<const T *>(p.x) + row * p.x_stride;
    float y[kQuantChunks][N];
    const float amax = kRead == kLoadsFirst ? products_loads_first<T, N>(x, cols, y) : products_chunkwise<T, N>(x, cols, y);
    const float inv = 1.0f / row_scale<Q>(amax, scratch, p.scale_out, row);
    uint8_t *out = static_cast<uint8_t *>(p.out) + row * p.out_stride;
#pragma unroll
    for (int r = 0; r < kQuantChunks; ++r) {
      const int c = (r * nthreads + tid) * N;
      if (c < cols) store_quantized<Q, N>(out + c, y[r], inv);
    }
  }
}

// Rows of any length, read twice: once for amax, once more (mostly from L2) to
// quantize.  Both passes compute each product the same way, so they agree bit for bit.
template <class T, int N, int Q>
__device__ __forceinline__ void silu_quant_reread(const ActivationParams &p, float *scratch) {
  const long long first = (long long)thread_x() * N, step = (long long)block_dim_x() * N;
  for (long long row = block_x(); row < p.rows; row += p.row_step) {
    const T *x = static_cast<const T *>(p.x) + row * p.x_stride;
    float amax = 0.0f;
    for (long long c = first; c < p.cols; c += step) {
      float y[N];
      silu_chunk<T, N>(x + c, x + p.cols + c, y);
#pragma unroll
      for (int i = 0; i < N; ++i) amax = fmaxf(amax, fabsf(y[i]));
    }
    const float inv = 1.0f / row_scale<Q>(amax, scratch, p.scale_out, row);
    uint8_t *out = static_cast<uint8_t *>(p.out) + row * p.out_stride;
    for (long long c = first; c < p.cols; c += step) {
      float y[N];
      silu_chunk<T, N>(x + c, x + p.cols + c, y);
      store_quantized<Q, N>(out + c, y, inv);
    }
  }
}

template <class T, int N, RowRead kRead, int Q>
__device__ __forceinline__ void silu_quant_rows(const ActivationParams &p, float *scratch) {
  if constexpr (kRead == kTwice) silu_quant_reread<T, N, Q>(p, scratch);
  else silu_quant_cached<T, N, Q, kRead>(p, scratch);
}

// The output format is chosen once per block, so that quantize() folds to one format.
template <class T, int N, RowRead kRead>
__device__ void silu_quant(const ActivationParams &p) {
  __shared__ float scratch[32];
  switch (p.quant) {
    case kQuantInt8: return silu_quant_rows<T, N, kRead, kQuantInt8>(p, scratch);
    case kQuantE4m3fn: return silu_quant_rows<T, N, kRead, kQuantE4m3fn>(p, scratch);
    case kQuantE5m2: return silu_quant_rows<T, N, kRead, kQuantE5m2>(p, scratch);
    default: return silu_quant_rows<T, N, kRead, kQuantE4m3fnuz>(p, scratch);
  }
}

}  // namespace

// Vector variants need d % N == 0 and 16-byte aligned rows of x (and N-byte aligned
// rows of a quantized out); scalar ones take anything (the gated ones kScalarRun
// elements a thread).
#define AITER_GATED_KERNEL(name, T, N) \
  AITER_ENTRY(name, kGatedThreads, ActivationParams, gated<T, N>)
// One silu_and_mul_quant kernel per input dtype, in chunks of N32 fp32 or N16
// 16-bit elements.  (Bounds with a minimum of one block an SM gave ptxas other
// register counts than the plain bound: 40 instead of 32 for .vec.long.)
#define AITER_SILU_QUANT_KERNEL(name, T, N, read, bounds) \
  AITER_KERNEL void bounds name(ActivationParams p) {     \
    enter_stream_order();                                 \
    silu_quant<T, N, read>(p);                            \
  }
#define AITER_SILU_QUANT_KERNELS(suffix, N32, N16, read, bounds)                  \
  AITER_SILU_QUANT_KERNEL(aiter_silu_quant_f32_##suffix, float, N32, read, bounds)  \
  AITER_SILU_QUANT_KERNEL(aiter_silu_quant_f16_##suffix, half_t, N16, read, bounds) \
  AITER_SILU_QUANT_KERNEL(aiter_silu_quant_bf16_##suffix, bf16_t, N16, read, bounds)

// aiter-kernel: op=gated variant=f32.vec symbol=aiter_gated_f32_vec4 block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_f32_vec4, float, 4)
// aiter-kernel: op=gated variant=f16.vec symbol=aiter_gated_f16_vec8 block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_f16_vec8, half_t, 8)
// aiter-kernel: op=gated variant=bf16.vec symbol=aiter_gated_bf16_vec8 block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_bf16_vec8, bf16_t, 8)
// aiter-kernel: op=gated variant=f32.vec2 symbol=aiter_gated_f32_vec2 block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_f32_vec2, float, 2)
// aiter-kernel: op=gated variant=f16.vec2 symbol=aiter_gated_f16_vec2 block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_f16_vec2, half_t, 2)
// aiter-kernel: op=gated variant=bf16.vec2 symbol=aiter_gated_bf16_vec2 block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_bf16_vec2, bf16_t, 2)
// aiter-kernel: op=gated variant=f32.scalar symbol=aiter_gated_f32_scalar block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_f32_scalar, float, 1)
// aiter-kernel: op=gated variant=f16.scalar symbol=aiter_gated_f16_scalar block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_f16_scalar, half_t, 1)
// aiter-kernel: op=gated variant=bf16.scalar symbol=aiter_gated_bf16_scalar block=256 smem=0
AITER_GATED_KERNEL(aiter_gated_bf16_scalar, bf16_t, 1)

// Per-row quantization: .vec and .vec.loads_first keep the row in registers;
// .vec.long (rows longer than .vec holds) and .scalar read x twice.
// aiter-kernel-family: op=silu_and_mul_quant variant={dt}.{read} symbol=aiter_silu_quant_{dt}_{sym} block={block} smem=0 dt=f32,f16,bf16 read=vec:vec:1024,vec.loads_first:vec_loads_first:256,vec.long:vec_long:1024,scalar:scalar:1024
AITER_SILU_QUANT_KERNELS(vec, 4, 8, kChunkwise, AITER_LAUNCH_BOUNDS(kQuantThreads))
AITER_SILU_QUANT_KERNELS(vec_loads_first, 4, 8, kLoadsFirst, AITER_LAUNCH_BOUNDS_MIN(kLoadsFirstThreads, kLoadsFirstBlocks))
AITER_SILU_QUANT_KERNELS(vec_long, 4, 8, kTwice, AITER_LAUNCH_BOUNDS(kQuantThreads))
AITER_SILU_QUANT_KERNELS(scalar, 1, 1, kTwice, AITER_LAUNCH_BOUNDS(kQuantThreads))
