// CPU quantization to int8 / fp8.  x is widened to fp32 scratch, its amax
// found there, and each value multiplied by 1/scale and rounded to the nearest
// 8-bit value (ties to even), saturating at +-qmax.  Per-tensor ops walk tiles
// of up to kBlock columns of one row, so one long row spreads over the threads;
// the per-token op walks whole rows, since each row needs its own amax first.
// With AVX-512 the widening, amax and codes run 16 lanes at a time.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/quantize.hpp"
#include "ops/quant.hpp"

namespace aiter {
namespace cpu {
namespace {

constexpr int64_t kBlock = 1024;       // columns per tile: an fp32 buffer that stays in L1
constexpr int64_t kGrain = 4;          // tiles per task, so a task is worth a thread hop
constexpr int64_t kTaskElems = 4096;   // the same for whole rows, in elements

#ifdef AITER_VEC512
template <class T>
__attribute__((target(AITER_TARGET_VEC512))) void load_avx512(const T *src, int64_t n, float *dst) {
  for (int64_t i = 0; i < n; i += 16) vec512::store(dst + i, vec512::load(src + i, n - i), n - i);
}
#endif

template <class T>
void load(const T *src, int64_t n, float *dst) {
#ifdef AITER_VEC512
  if (isa_at_least(Isa::avx512)) return load_avx512(src, n, dst);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = to_f32(src[i]);
}

template <class T>
const T *row_of(const void *base, const RowView &v, int64_t r) {
  return static_cast<const T *>(base) + r * v.row_stride;
}
template <class T>
T *row_of(void *base, const RowView &v, int64_t r) {
  return static_cast<T *>(base) + r * v.row_stride;
}

// The rows of a RowView cut into tiles of up to kBlock columns; tile t covers
// columns [first, first + count) of row `row`.  (An empty tensor may have any
// column count: cols + kBlock - 1 overflowed at INT64_MAX, fuzzer seed 500041086.)
struct Tiles {
  int64_t cols, per_row, count;
  explicit Tiles(const RowView &v)
      : cols(v.cols), per_row(v.cols / kBlock + (v.cols % kBlock != 0)), count(v.rows * per_row) {}
  int64_t row(int64_t t) const { return t / per_row; }
  int64_t first(int64_t t) const { return (t % per_row) * kBlock; }
  int64_t size(int64_t t) const { return std::min(kBlock, cols - first(t)); }
};

// ---- the three ops ----------------------------------------------------------------
template <class T>
float tensor_amax(const QuantArgs &a) {
  const Tiles tiles(a.x_rows);
  float amax = 0.0f;
  std::mutex merge;
  parallel_for(tiles.count, kGrain, [&](int64_t begin, int64_t end) {
    float v[kBlock];
    float local = 0.0f;
    for (int64_t t = begin; t < end; ++t) {
      load(row_of<T>(a.x, a.x_rows, tiles.row(t)) + tiles.first(t), tiles.size(t), v);
      local = std::max(local, amax_of(v, tiles.size(t)));
    }
    std::lock_guard<std::mutex> lock(merge);
    amax = std::max(amax, local);
  });
  return amax;
}

template <class T, class Q>
void quantize_tiles(const QuantArgs &a, float inv_scale) {
  const Tiles tiles(a.x_rows);
  parallel_for(tiles.count, kGrain, [&](int64_t begin, int64_t end) {
    float v[kBlock];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r = tiles.row(t), first = tiles.first(t), n = tiles.size(t);
      load(row_of<T>(a.x, a.x_rows, r) + first, n, v);
      store_quantized(v, n, inv_scale, row_of<Q>(a.out, a.out_rows, r) + first);
    }
  });
}

template <class T, class Q>
void quantize_per_token(const QuantArgs &a) {
  const int64_t n = a.x_rows.cols;
  const int64_t grain = std::max<int64_t>(1, kTaskElems / n);
  parallel_for(a.x_rows.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      load(row_of<T>(a.x, a.x_rows, r), n, v.data());
      const float scale = scale_for(amax_of(v.data(), n), qmax<Q>());
      a.scale[r] = scale;
      store_quantized(v.data(), n, 1.0f / scale, row_of<Q>(a.out, a.out_rows, r));
    }
  });
}

// Calls f(T{}, Q{}) for the input and output element types.
template <class F>
void visit_types(const QuantArgs &a, F &&f) {
  visit_float(a.x_dtype, [&](auto x_tag) { visit_quant(a.out_dtype, [&](auto q_tag) { f(x_tag, q_tag); }); });
}

}  // namespace

aiter_status quant_per_tensor_dynamic(const QuantArgs &a) {
  visit_types(a, [&](auto x_tag, auto q_tag) {
    using T = decltype(x_tag);
    using Q = decltype(q_tag);
    const float scale = scale_for(tensor_amax<T>(a), qmax<Q>());
    a.scale[0] = scale;
    quantize_tiles<T, Q>(a, 1.0f / scale);
  });
  return AITER_OK;
}

aiter_status quant_per_token_dynamic(const QuantArgs &a) {
  if (a.x_rows.cols == 0) {  // rows of nothing: amax 0, scale 1 (the row view counts no rows then)
    std::fill(a.scale, a.scale + a.scale_count, 1.0f);
    return AITER_OK;
  }
  visit_types(a, [&](auto x_tag, auto q_tag) { quantize_per_token<decltype(x_tag), decltype(q_tag)>(a); });
  return AITER_OK;
}

aiter_status quant_per_tensor_static(const QuantArgs &a) {
  const float inv_scale = 1.0f / a.scale_in[0];
  visit_types(a, [&](auto x_tag, auto q_tag) { quantize_tiles<decltype(x_tag), decltype(q_tag)>(a, inv_scale); });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
