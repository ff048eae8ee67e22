// CPU normalizations: one row at a time, statistics in fp32 (the sum of squares
// in fp64, so that long rows lose nothing), rows spread over the worker threads.
#include <cmath>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/quantize.hpp"
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

template <class T>
void norm_rows(const NormArgs &a, Kind kind, const std::vector<float> &weight, const std::vector<float> &bias) {
  const int64_t n = a.x_rows.cols;
  parallel_for(a.x_rows.rows, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
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

aiter_status run_norm(const NormArgs &a, Kind kind) {
  if (a.x_rows.cols == 0) {  // empty rows: nothing to normalize, but each still gets a scale
    // (the row view of an empty x counts no rows, so the scale's own size says how many)
    for (int64_t r = 0; a.scale != nullptr && r < a.scale_count; ++r) a.scale[r] = 1.0f;
    return AITER_OK;
  }
  if (a.x_rows.rows == 0) return AITER_OK;
  std::vector<float> weight, bias;
  params_f32(a, weight, bias);
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
