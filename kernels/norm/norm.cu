// RMSNorm, add + RMSNorm, LayerNorm, each optionally followed by dynamic
// per-row quantization: one block per row, the row held in registers between
// the statistics pass and the output pass, so x is read once.
#include "../common/numeric.h"
#include "../common/quant_store.h"
#include "norm_params.h"

namespace {

// Weight or bias elements c..c+N-1 as fp32, stored as fp32 or as T.  The vector
// variants have 16-byte aligned params (checked by the host), so they load whole vectors.
template <class T, int N>
__device__ __forceinline__ void load_params(const void *p, long long c, int f32, float (&out)[N]) {
  if (N == 1) {
    out[0] = f32 ? static_cast<const float *>(p)[c] : to_f32(static_cast<const T *>(p)[c]);
  } else if (f32) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      float part[4];
      load_f32<float, 4>(static_cast<const float *>(p) + c + i, part);
#pragma unroll
      for (int j = 0; j < 4; ++j) out[i + j] = part[j];
    }
  } else {
    load_f32<T, N>(static_cast<const T *>(p) + c, out);
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

// LayerNorm's statistics, mean and 1 / std, from the values value(r, i) of the
// thread's chunks (chunks past the row are zeros): the mean, then the squares
// about it, each a block sum.  (One merged reduction of counts, means and
// squared deviations was slower in the few-row kernel: 1 x 4096 bf16, H100,
// 2026-11-24.)
struct RowStats {
  float mean, inv_std;
};
template <int N, int R, class Value>
__device__ __forceinline__ RowStats layer_stats(const NormParams &p, float *scratch, Value value) {
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  float sum = 0.0f;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < N; ++i) sum += value(r, i);
  const float mean = block_sum(sum, scratch) * p.inv_cols;
  float squares = 0.0f;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const bool in_row = (long long)(r * nthreads + tid) * N < p.cols;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float d = value(r, i) - mean;
      squares += in_row ? d * d : 0.0f;
    }
  }
  return RowStats{mean, fast_rsqrt(block_sum(squares, scratch) * p.inv_cols + p.eps)};
}

// LayerNorm in the many-rows kernels: x stays in registers as loaded, 16-bit T
// taking half the registers of fp32, and is widened at each of its three uses;
// weight and bias stay as T until used too.  Nsight Compute on an H100 (16384 x
// 4096 bf16) found the fp32 row at 40 registers (capped, spilling) holding the
// SM to 6 blocks of 256 threads, 75% occupancy, at 67% of DRAM bandwidth, where
// RMSNorm's 32 registers fit 8.  Same arithmetic in the same order as norm_row's.
template <class T, int N, int R>
__device__ void layer_row(const NormParams &p) {
  const long long row = block_x();
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  const T *x = static_cast<const T *>(p.x) + row * p.x_stride;
  Vec<T, N> raw[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    raw[r] = c < p.cols ? *reinterpret_cast<const Vec<T, N> *>(x + c) : Vec<T, N>{};  // zero bits are 0.0
  }
  __shared__ float scratch[32];
  const auto [mean, inv_std] = layer_stats<N, R>(p, scratch, [&](int r, int i) { return to_f32(raw[r].v[i]); });
  T *out = static_cast<T *>(p.out) + row * p.out_stride;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    if (c >= p.cols) continue;
    float y[N];
    if (N > 1 && !p.params_f32) {  // weight and bias kept as T until used
      const Vec<T, N> wv = *reinterpret_cast<const Vec<T, N> *>(static_cast<const T *>(p.weight) + c);
      Vec<T, N> bv{};
      if (p.bias) bv = *reinterpret_cast<const Vec<T, N> *>(static_cast<const T *>(p.bias) + c);
#pragma unroll
      for (int i = 0; i < N; ++i) y[i] = (to_f32(raw[r].v[i]) - mean) * inv_std * to_f32(wv.v[i]) + to_f32(bv.v[i]);
    } else {
      float w[N], b[N] = {};
      load_params<T, N>(p.weight, c, p.params_f32, w);
      if (p.bias) load_params<T, N>(p.bias, c, p.params_f32, b);
#pragma unroll
      for (int i = 0; i < N; ++i) y[i] = (to_f32(raw[r].v[i]) - mean) * inv_std * w[i] + b[i];
    }
    store_f32<T, N>(out + c, y);
  }
}

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

// RMSNorm in the many-rows kernels, weights stored as T: x stays in registers as
// loaded (16-bit T in half the registers of fp32), and every chunk's weights load
// at once after the reduction (norm_row loads each chunk's weights after using the
// chunk before's).  The same products in the same order as norm_row's, which adds
// a zero mean and bias.  y past the row is never stored (no quantization here).
// H100, bf16, 2026-11-24, in turns: 4096 x 8192 50.4-50.9 against 51.1-52.1 us;
// rows of 4096 as before.  For rmsnorm_quant the same code took 80 registers for
// rows of 8192 (three blocks an SM; 16384 x 8192 150 against 140 us) and ran
// as before for rows of 4096, so the quantizing tiles keep norm_row.
template <class T, int N, int R>
__device__ void rms_row(const NormParams &p) {
  const long long row = block_x();
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  Vec<T, N> raw[R];
  load_chunks<T, N, R>(static_cast<const T *>(p.x) + row * p.x_stride, p.cols, raw);
  float squares = 0.0f;  // as layer_stats' squares: sharing them changed this tile's SASS
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const bool in_row = (long long)(r * nthreads + tid) * N < p.cols;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float v = to_f32(raw[r].v[i]);
      squares += in_row ? v * v : 0.0f;
    }
  }
  __shared__ float scratch[32];
  const float inv_std = fast_rsqrt(block_sum(squares, scratch) * p.inv_cols + p.eps);
  Vec<T, N> weights[R];
  load_chunks<T, N, R>(static_cast<const T *>(p.weight), p.cols, weights);
  float y[R][N];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < N; ++i) y[r][i] = to_f32(raw[r].v[i]) * inv_std * to_f32(weights[r].v[i]);
  store_row<T, N, R>(p, row, y, scratch);
}

// add + RMSNorm's rows in the many-rows kernels: v = x + residual, rounded to T as
// residual_out stores it, 0 past the row.  Every load leaves before the first
// store (ptxas keeps a load after a store that might alias it) and unconditionally
// (chunks past the row load the row's first chunk again, unused): behind a branch
// a chunk, ptxas unpacked chunk r inside its branch, waiting for it before chunk
// r + 1's loads left.  Either way, a trip to memory a chunk.
template <class T, int N, int R>
__device__ __forceinline__ void load_added_row(const NormParams &p, long long row, float (&v)[R][N]) {
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  const T *x = static_cast<const T *>(p.x) + row * p.x_stride;
  const T *residual = static_cast<const T *>(p.residual) + row * p.residual_stride;
  Vec<T, N> xs[R], residuals[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    const long long at = c < p.cols ? c : 0;
    xs[r] = load_vec<T, N>(x + at);
    residuals[r] = load_vec<T, N>(residual + at);
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
#pragma unroll
    for (int i = 0; i < N; ++i)
      v[r][i] = c < p.cols ? to_f32(from_f32<T>(to_f32(xs[r].v[i]) + to_f32(residuals[r].v[i]))) : 0.0f;
    if (c < p.cols) store_f32<T, N>(static_cast<T *>(p.residual_out) + row * p.residual_out_stride + c, v[r]);
  }
}

// Each thread owns R chunks of N contiguous elements: chunk r covers columns
// (r * blockDim + tid) * N ... + N.  The host picks the smallest R that covers
// the row with at most the variant's threads: few registers, many blocks per
// SM, so many loads are in flight.
// PREFETCH loads weights and bias together with x, so their latency overlaps the
// row's instead of following the reduction: good for latency (few rows), bad for
// throughput, where the extra registers cost occupancy (Nsight Compute on an H100:
// 64 registers, 50% occupancy, 64% of DRAM bandwidth for 16384 x 4096 bf16).
// KIND >= 0 fixes the norm kind (and QUANT whether the output is quantized) at
// compile time: the branches of the other kinds drop out, and with them registers
// (rmsnorm, R = 2: 48 -> 32 registers, so twice the blocks per SM).  KIND < 0
// reads both from the params at run time.
template <class T, int N, int R, bool PREFETCH, int KIND = -1, bool QUANT = false>
__device__ void norm_row(const NormParams &params) {
  if constexpr (KIND == kNormLayer && !QUANT && !PREFETCH) return layer_row<T, N, R>(params);
  if constexpr (KIND == kNormRms && !QUANT && !PREFETCH) {
    if (!params.params_f32) {  // fp32 weights for 16-bit x: norm_row, below
      NormParams p = params;
      p.quant = kQuantNone;
      return rms_row<T, N, R>(p);
    }
  }
  NormParams p = params;
  if (KIND >= 0) {
    p.kind = KIND;
    if (!QUANT) p.quant = kQuantNone;
    if (KIND != kNormLayer) p.bias = nullptr;
  }
  constexpr bool prefetch = PREFETCH;
  __shared__ float scratch[32];
  const long long row = block_x();
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  float v[R][N], w[R][N], b[R][N];
  float squares = 0.0f;  // RMSNorm's statistic (LayerNorm's come from layer_stats)
  constexpr bool added_row = KIND == kNormAddRms && !PREFETCH;  // v loaded here, not in the loop
  if constexpr (added_row) load_added_row<T, N, R>(p, row, v);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    if (!added_row && c < p.cols) {
      load_f32<T, N>(static_cast<const T *>(p.x) + row * p.x_stride + c, v[r]);
      if (prefetch) load_params<T, N>(p.weight, c, p.params_f32, w[r]);
      // Without a bias, the weights again (unused): behind a branch on p.bias,
      // ptxas unpacked x and the weights first, waiting for them, and the bias
      // load left a whole memory latency later (without the branch LayerNorm's
      // 1 x 4096 graph replay took 0.6 us less on an H100).
      if (prefetch && p.kind == kNormLayer) load_params<T, N>(p.bias ? p.bias : p.weight, c, p.params_f32, b[r]);
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
    } else if (!added_row) {
#pragma unroll
      for (int i = 0; i < N; ++i) v[r][i] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < N; ++i) squares += v[r][i] * v[r][i];
  }
  RowStats stats{0.0f, 0.0f};
  if (p.kind == kNormLayer)
    stats = layer_stats<N, R>(p, scratch, [&](int r, int i) { return v[r][i]; });
  else
    stats.inv_std = fast_rsqrt(block_sum(squares, scratch) * p.inv_cols + p.eps);
  const float mean = stats.mean, inv_std = stats.inv_std;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * nthreads + tid) * N;
    if (c >= p.cols) continue;
    if (!prefetch && N > 1 && !p.params_f32) {  // kept as T until used: half the registers
      const Vec<T, N> wv = *reinterpret_cast<const Vec<T, N> *>(static_cast<const T *>(p.weight) + c);
      Vec<T, N> bv{};
      if (p.bias) bv = *reinterpret_cast<const Vec<T, N> *>(static_cast<const T *>(p.bias) + c);
#pragma unroll
      for (int i = 0; i < N; ++i)
        v[r][i] = (v[r][i] - mean) * inv_std * to_f32(wv.v[i]) + (p.bias ? to_f32(bv.v[i]) : 0.0f);
      continue;
    }
    if (!prefetch) load_params<T, N>(p.weight, c, p.params_f32, w[r]);
    if (!prefetch && p.bias) load_params<T, N>(p.bias, c, p.params_f32, b[r]);
#pragma unroll
    for (int i = 0; i < N; ++i) v[r][i] = (v[r][i] - mean) * inv_std * w[r][i] + (p.bias ? b[r][i] : 0.0f);
  }
  store_row<T, N, R>(p, row, v, scratch);
}

}  // namespace

// Variants: <dtype>.<vec|scalar>.r<R>[.t1024][.prefetch][.<kind>].  Vector variants
// need cols % N == 0 and 16-byte aligned rows and params; scalar ones take
// anything.  The host picks by row count and length (libaiter/gpu/norm.cpp).  The
// few-rows tile (r1.t1024.prefetch) and the many-rows tiles r2 and r4 come
// specialized per kind (rms, add, layer, rms_q, add_q).
#define AITER_NORM_KERNEL(name, T, N, R, THREADS, PREFETCH) \
  AITER_ENTRY(name, THREADS, NormParams, norm_row<T, N, R, PREFETCH>)
// Up to 512 threads: LayerNorm rows of 8192 take R = 2 with 512 threads (the
// host's pick_shape).  With R = 4, ptxas loads every chunk's weight and bias at
// once (113 registers, two blocks per SM; 77% of copy for 16384 x 8192 bf16 on
// an H100, Nsight Compute).
// Blocks of 512 threads an SM must hold for LayerNorm's R = 2 tile.  bf16: three
// (39 registers, no spills).  H100, 2026-11-24, in turns, with bf16 rounded by
// the cvt instruction: 16384 x 4096 96.5 / 97.1 us, 16384 x 8192 184 / 184,
// against a cap of four (32 registers, 24 bytes spilled) 105 / 105 and 204 /
// 204, and the library before (software rounding, four: 4 bytes spilled) 98.0 /
// 98.8 and 188 / 189.  Measured for bf16 only; f16 and f32 keep their uncapped
// kernels.
template <class T> struct LayerMinBlocks { static constexpr int value = 1; };
template <> struct LayerMinBlocks<bf16_t> { static constexpr int value = 3; };
// R = 4 without quantizing: at most 64 registers, so that an SM holds four blocks
// of 256.  Left to itself ptxas allocates 56 or 79 depending on which other
// kernels share the file (it hoists more weight loads); capped, rows of 8192
// ran as fast as at 56 (H100, in turns, 2026-11-23).
// R = 2 quantizing (rms_q, add_q): 32 registers, so that an SM holds eight blocks
// of 256, not six at the 40 ptxas chose (no spills either way).  H100, in turns,
// 2026-11-24: rmsnorm_quant 16384 x 4096 bf16 75.4-75.6 against 77.2-77.4 us;
// 4096 x 4096 25.8-25.9 against 25.9-26.6.  Plain RMSNorm's R = 2 tile (rms_row)
// too: 32 registers, no spills, against 46 (five blocks an SM): 4096 x 4096 28.0
// / 28.3 against 28.8 / 28.8 us, 16384 x 4096 94.8 / 95.2 against 94.1 / 94.6
// (one run, two rounds; these move by about 1 us from run to run).
template <class T, int R, int KIND, bool QUANT> struct NormMinBlocks {
  static constexpr int value = KIND == kNormLayer && R == 2 ? LayerMinBlocks<T>::value
                               : R == 4 && !QUANT           ? 2
                               : R == 2 && (QUANT || KIND == kNormRms) ? 4
                                                            : 1;
};
#define AITER_NORM_KIND(name, T, N, R, THREADS, PREFETCH, KIND, QUANT)                          \
  AITER_KERNEL void AITER_LAUNCH_BOUNDS_MIN(THREADS, (NormMinBlocks<T, R, KIND, QUANT>::value)) \
      name(NormParams p) {                                                                      \
    enter_stream_order();                                                                       \
    norm_row<T, N, R, PREFETCH, KIND, QUANT>(p);                                                \
  }
#define AITER_NORM_KINDS(prefix, T, N, R, THREADS, PREFETCH)                        \
  AITER_NORM_KIND(prefix##_rms, T, N, R, THREADS, PREFETCH, kNormRms, false)       \
  AITER_NORM_KIND(prefix##_add, T, N, R, THREADS, PREFETCH, kNormAddRms, false)    \
  AITER_NORM_KIND(prefix##_layer, T, N, R, THREADS, PREFETCH, kNormLayer, false)   \
  AITER_NORM_KIND(prefix##_rms_q, T, N, R, THREADS, PREFETCH, kNormRms, true)      \
  AITER_NORM_KIND(prefix##_add_q, T, N, R, THREADS, PREFETCH, kNormAddRms, true)
#define AITER_NORM_FAMILY(tag, T, N)                                                 \
  AITER_NORM_KINDS(aiter_norm_##tag##_vec_r1_t1024_prefetch, T, N, 1, 1024, true)    \
  AITER_NORM_KINDS(aiter_norm_##tag##_vec_r2, T, N, 2, 512, false)                   \
  AITER_NORM_KINDS(aiter_norm_##tag##_vec_r4, T, N, 4, 512, false)                   \
  AITER_NORM_KERNEL(aiter_norm_##tag##_vec_r8, T, N, 8, 256, false)                  \
  AITER_NORM_KERNEL(aiter_norm_##tag##_vec_r4_t1024, T, N, 4, 1024, false)           \
  AITER_NORM_KERNEL(aiter_norm_##tag##_scalar_r8_t1024, T, 1, 8, 1024, false)

AITER_NORM_FAMILY(f32, float, 4)
AITER_NORM_FAMILY(f16, half_t, 8)
AITER_NORM_FAMILY(bf16, bf16_t, 8)

// aiter-kernel-family: op=norm variant={dt}.vec.r1.t1024.prefetch.{kind} symbol=aiter_norm_{dt}_vec_r1_t1024_prefetch_{kind} block=1024 smem=0 dt=f32,f16,bf16 kind=rms,add,layer,rms_q,add_q
// aiter-kernel-family: op=norm variant={dt}.vec.r{r}.{kind} symbol=aiter_norm_{dt}_vec_r{r}_{kind} block=512 smem=0 dt=f32,f16,bf16 r=2,4 kind=rms,add,layer,rms_q,add_q
// aiter-kernel-family: op=norm variant={dt}.{tile} symbol=aiter_norm_{dt}_{sym} block={block} smem=0 dt=f32,f16,bf16 tile=vec.r8:vec_r8:256,vec.r4.t1024:vec_r4_t1024:1024,scalar.r8.t1024:scalar_r8_t1024:1024
