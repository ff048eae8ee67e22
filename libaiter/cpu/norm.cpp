// CPU normalizations: one row at a time, statistics in fp32 (the sum of squares
// in fp64, so that long rows lose nothing), rows spread over the worker threads.
// RMSNorm and add + RMSNorm (and their fused quantizations) run on AVX-512 where
// the CPU has it (rms_row_avx512); LayerNorm and other CPUs take the loops.
#include <cmath>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/isa.hpp"
#include "cpu/populate.hpp"
#include "cpu/quantize.hpp"
#include "cpu/vec512.hpp"
#include "ops/norm.hpp"

namespace aiter {
namespace cpu {
namespace {

template <class T>
const T *row(const void *base, const RowView &v, int64_t r) {
  return static_cast<const T *>(base) + r * v.row_stride;
}
template <class T>
T *row(void *base, const RowView &v, int64_t r) {
  return static_cast<T *>(base) + r * v.row_stride;
}

template <class P>
void load_params(const void *src, int64_t n, std::vector<float> &dst) {
  dst.resize(size_t(n));
  const P *p = static_cast<const P *>(src);
  for (int64_t i = 0; i < n; ++i) dst[size_t(i)] = to_f32(p[i]);
}

// Weight and bias in fp32, whatever their stored dtype.
void params_f32(const NormArgs &a, std::vector<float> &weight, std::vector<float> &bias) {
  const int64_t n = a.x_rows.cols;
  visit_float(a.param_dtype, [&](auto tag) {
    using P = decltype(tag);
    load_params<P>(a.weight, n, weight);
    if (a.bias) load_params<P>(a.bias, n, bias);
  });
}

enum class Kind { rms, add_rms, layer };

// Sums in fp64 over kLanes independent partial sums, added in a fixed order at
// the end: the same result on every run, and no chain of dependent fp64 adds (one
// sum of a 4096 row took 4096 add latencies; lanes let the compiler vectorize).
constexpr int64_t kLanes = 8;

double sum_of(const float *v, int64_t n) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] += double(v[i + j]);
  double total = 0.0;
  for (; i < n; ++i) total += double(v[i]);
  for (double lane : lanes) total += lane;
  return total;
}

double squares_about(const float *v, int64_t n, double mean) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) {
      const double d = double(v[i + j]) - mean;
      lanes[j] += d * d;
    }
  double total = 0.0;
  for (; i < n; ++i) {
    const double d = double(v[i]) - mean;
    total += d * d;
  }
  for (double lane : lanes) total += lane;
  return total;
}

// The normalized fp32 row goes out as T, or (fused *_quant ops) quantized with its own scale.
template <class T>
void store_row(const NormArgs &a, int64_t r, const float *y) {
  const int64_t n = a.x_rows.cols;
  if (a.quant_dtype != DType::unknown) {
    a.scale[r] = quantize_row(y, n, a.quant_dtype, row<uint8_t>(a.out, a.out_rows, r));
    return;
  }
  T *out = row<T>(a.out, a.out_rows, r);
  for (int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(y[i]);
}

#ifdef AITER_VEC512
// v^2 of 16 fp32 lanes added into 16 fp64 sums (two vectors of 8): exact squares,
// and no chain of dependent adds longer than a row's length / 16.
__attribute__((target(AITER_TARGET_VEC512), always_inline)) inline void add_squares(__m512 f, __m512d &lo,
                                                                                     __m512d &hi) {
  const __m512d f_lo = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
  const __m512d f_hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
  lo = _mm512_fmadd_pd(f_lo, f_lo, lo);
  hi = _mm512_fmadd_pd(f_hi, f_hi, hi);
}

// One row of rmsnorm / add_rmsnorm, the steps of norm_rows' loop: the new
// residual rounded to T and stored (then normalized as stored), the sum of
// squares in fp64, y = v * inv * weight in fp32.  y goes to out, or, for a fused
// quantization, into v for store_row.  In place (out = x, residual_out =
// residual) as the loops: each element is read before its own is written.
template <class T>
__attribute__((target(AITER_TARGET_VEC512))) void rms_row_avx512(const NormArgs &a, Kind kind, int64_t r,
                                                                 const float *weight, float *v) {
  const int64_t n = a.x_rows.cols;
  const T *x = row<T>(a.x, a.x_rows, r);
  if (kind == Kind::add_rms) {
    const T *res = row<T>(a.residual, a.residual_rows, r);
    T *res_out = row<T>(a.residual_out, a.residual_out_rows, r);
    for (int64_t i = 0; i < n; i += 16)
      vec512::store(res_out + i, _mm512_add_ps(vec512::load(x + i, n - i), vec512::load(res + i, n - i)), n - i);
    x = res_out;
  }
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 f = vec512::load(x + i, n - i);  // zeros past n: they add nothing
    vec512::store(v + i, f, n - i);
    add_squares(f, lo, hi);
  }
  const double squares = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  const __m512 inv = _mm512_set1_ps(float(1.0 / std::sqrt(squares / double(n) + double(a.epsilon))));
  const bool quantized = a.quant_dtype != DType::unknown;
  T *out = quantized ? nullptr : row<T>(a.out, a.out_rows, r);
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 y = _mm512_mul_ps(_mm512_mul_ps(vec512::load(v + i, n - i), inv), vec512::load(weight + i, n - i));
    if (quantized)
      vec512::store(v + i, y, n - i);
    else
      vec512::store(out + i, y, n - i);
  }
}
#endif

// The AVX-512 row where the CPU has it; true if it ran.
template <class T>
bool rms_row_fast(const NormArgs &a, Kind kind, int64_t r, const std::vector<float> &weight, std::vector<float> &v) {
#ifdef AITER_VEC512
  if (kind == Kind::layer || !isa_at_least(Isa::avx512)) return false;
  rms_row_avx512<T>(a, kind, r, weight.data(), v.data());
  if (a.quant_dtype != DType::unknown) store_row<T>(a, r, v.data());
  return true;
#else
  (void)a, (void)kind, (void)r, (void)weight, (void)v;
  return false;
#endif
}

template <class T>
void norm_rows(const NormArgs &a, Kind kind, const std::vector<float> &weight, const std::vector<float> &bias) {
  const int64_t n = a.x_rows.cols;
  parallel_for(a.x_rows.rows, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      if (rms_row_fast<T>(a, kind, r, weight, v)) continue;
      const T *x = row<T>(a.x, a.x_rows, r);
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = to_f32(x[i]);
      if (kind == Kind::add_rms) {
        const T *res = row<T>(a.residual, a.residual_rows, r);
        T *res_out = row<T>(a.residual_out, a.residual_out_rows, r);
        for (int64_t i = 0; i < n; ++i) {
          // The new residual is rounded to T, and normalized as stored.
          const T sum = from_f32<T>(v[size_t(i)] + to_f32(res[i]));
          res_out[i] = sum;
          v[size_t(i)] = to_f32(sum);
        }
      }
      const double mean = kind == Kind::layer ? sum_of(v.data(), n) / double(n) : 0.0;
      const double squares = squares_about(v.data(), n, mean);
      const float inv = float(1.0 / std::sqrt(squares / double(n) + double(a.epsilon)));
      for (int64_t i = 0; i < n; ++i) {
        float y = (v[size_t(i)] - float(mean)) * inv * weight[size_t(i)];
        v[size_t(i)] = bias.empty() ? y : y + bias[size_t(i)];
      }
      store_row<T>(a, r, v.data());
    }
  });
}

// Fresh output pages mapped up front rather than faulted in by the row loop
// (cpu/populate.cpp): out, and the new residual of add_rmsnorm.
void populate_outputs(const NormArgs &a) {
  const DType out_dtype = a.quant_dtype != DType::unknown ? a.quant_dtype : a.dtype;
  populate_rows(a.out, a.out_rows, dtype_size(out_dtype));
  if (a.residual_out != nullptr) populate_rows(a.residual_out, a.residual_out_rows, dtype_size(a.dtype));
}

aiter_status run_norm(const NormArgs &a, Kind kind) {
  if (a.x_rows.cols == 0) {  // empty rows: nothing to normalize, but each still gets a scale
    // (the row view of an empty x counts no rows, so the scale's own size says how many)
    for (int64_t r = 0; a.scale != nullptr && r < a.scale_count; ++r) a.scale[r] = 1.0f;
    return AITER_OK;
  }
  if (a.x_rows.rows == 0) return AITER_OK;
  std::vector<float> weight, bias;
  params_f32(a, weight, bias);
  populate_outputs(a);
  visit_float(a.dtype, [&](auto tag) { norm_rows<decltype(tag)>(a, kind, weight, bias); });
  return AITER_OK;
}

}  // namespace

aiter_status rmsnorm(const NormArgs &a) { return run_norm(a, Kind::rms); }
aiter_status add_rmsnorm(const NormArgs &a) { return run_norm(a, Kind::add_rms); }
aiter_status layernorm(const NormArgs &a) { return run_norm(a, Kind::layer); }
aiter_status rmsnorm_quant(const NormArgs &a) { return run_norm(a, Kind::rms); }
aiter_status add_rmsnorm_quant(const NormArgs &a) { return run_norm(a, Kind::add_rms); }

}  // namespace cpu
}  // namespace aiter
