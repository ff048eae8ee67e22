// CPU gated activations.  Work is cut into tiles of up to kBlock columns of one
// row, so that one long row spreads over the threads as well as many short
// ones do; each tile is widened to fp32 scratch, computed there, and rounded
// once on the store.  silu_and_mul_quant walks whole rows instead, since each
// row needs its amax before any of it is quantized; its products stay in fp32.
// Where the CPU has AVX-512 (cpu/isa.hpp), silu and tanh-gelu tiles run 16
// lanes at a time straight from the input to the output (cpu/vec512.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/isa.hpp"
#include "cpu/populate.hpp"
#include "cpu/quantize.hpp"
#include "cpu/vec512.hpp"
#include "ops/activation.hpp"

namespace aiter {
namespace cpu {
namespace {

constexpr int64_t kBlock = 1024;      // columns per tile: two fp32 buffers stay in L1
constexpr int64_t kGrain = 4;         // tiles per task, so a task is worth a thread hop
constexpr int64_t kVectorGrain = 32;  // the same for AVX-512 tiles, 10x faster (one 28672-wide row: one thread)
constexpr int64_t kTaskElems = 4096;  // the same for whole rows, in elements

struct Silu {
  static constexpr bool vectorized = true;
  float operator()(float g) const { return g / (1.0f + std::exp(-g)); }
#ifdef AITER_VEC512
  AITER_VEC512_FN static __m512 lanes(__m512 g) { return vec512::x_sigmoid(g, g); }
#endif
};
struct GeluExact {
  static constexpr bool vectorized = false;
  float operator()(float g) const { return 0.5f * g * (1.0f + std::erf(g * 0.70710678118654752f)); }
};
struct GeluTanh {
  static constexpr bool vectorized = true;
#ifdef AITER_VEC512
  // 0.5 g (1 + tanh(u)) = g / (1 + e^(-2u)): one exp, no tanh.
  AITER_VEC512_FN static __m512 lanes(__m512 g) {
    const __m512 g3 = _mm512_mul_ps(_mm512_mul_ps(g, g), g);
    const __m512 u = _mm512_mul_ps(_mm512_set1_ps(0.79788456080286536f),
                                   _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), g3, g));
    return vec512::x_sigmoid(g, _mm512_add_ps(u, u));
  }
#endif
  float operator()(float g) const {
    const float inner = 0.79788456080286536f * (g + 0.044715f * g * g * g);  // sqrt(2/pi) (g + 0.044715 g^3)
    return 0.5f * g * (1.0f + std::tanh(inner));
  }
};

// y[i] = act(gate[i]) * up[i] for i < n <= kBlock, in fp32; `widened_up` is scratch.
template <class T, class Act>
void gated_span(const T *gate, const T *up, int64_t n, Act act, float *y, float *widened_up) {
  for (int64_t i = 0; i < n; ++i) y[i] = to_f32(gate[i]);
  for (int64_t i = 0; i < n; ++i) widened_up[i] = to_f32(up[i]);
  for (int64_t i = 0; i < n; ++i) y[i] = act(y[i]) * widened_up[i];
}

#ifdef AITER_VEC512
template <class T, class Act>
__attribute__((target(AITER_TARGET_VEC512))) void gated_span_avx512(const T *gate, const T *up, int64_t n, T *out) {
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 y = _mm512_mul_ps(Act::lanes(vec512::load(gate + i, n - i)), vec512::load(up + i, n - i));
    vec512::store(out + i, y, n - i);
  }
}
#endif

// out[i] = act(gate[i]) * up[i] for i < n <= kBlock; `gate` and `up` are scratch.
template <class T, class Act>
void gated_tile(const T *x, const T *x_up, int64_t n, Act act, T *out, float *gate, float *up) {
#ifdef AITER_VEC512
  if constexpr (Act::vectorized) {  // T: float, bf16 or fp16, all of which vec512 loads and stores
    if (isa_at_least(Isa::avx512)) return gated_span_avx512<T, Act>(x, x_up, n, out);
  }
#endif
  gated_span(x, x_up, n, act, gate, up);
  for (int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(gate[i]);
}

template <class T, class Act>
void gated_tiles(const ActivationArgs &a, Act act) {
  const int64_t d = a.out_rows.cols;
  const int64_t blocks = d / kBlock + (d % kBlock != 0);  // (no d + kBlock - 1: d may be near INT64_MAX when empty)
  const int64_t grain = Act::vectorized && isa_at_least(Isa::avx512) ? kVectorGrain : kGrain;
  parallel_for(a.out_rows.rows * blocks, grain, [&](int64_t begin, int64_t end) {
    float gate[kBlock], up[kBlock];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r = t / blocks, c0 = (t % blocks) * kBlock, n = std::min(kBlock, d - c0);
      const T *x = static_cast<const T *>(a.x) + r * a.x_rows.row_stride + c0;
      T *out = static_cast<T *>(a.out) + r * a.out_rows.row_stride + c0;
      gated_tile(x, x + d, n, act, out, gate, up);
    }
  });
}

template <class Act>
aiter_status run_gated(const ActivationArgs &a, Act act) {
  if (a.out_rows.rows == 0 || a.out_rows.cols == 0) return AITER_OK;
  populate_rows(a.out, a.out_rows, dtype_size(a.dtype));  // fresh pages mapped up front (cpu/populate.cpp)
  visit_float(a.dtype, [&](auto tag) { gated_tiles<decltype(tag)>(a, act); });
  return AITER_OK;
}

// Each row's products, all of them in fp32, then quantized with the row's own scale.
template <class T>
void silu_quant_rows(const ActivationArgs &a) {
  const int64_t d = a.out_rows.cols;
  parallel_for(a.out_rows.rows, std::max<int64_t>(1, kTaskElems / d), [&](int64_t begin, int64_t end) {
    std::vector<float> y(static_cast<size_t>(d));
    float up[kBlock];
    for (int64_t r = begin; r < end; ++r) {
      const T *x = static_cast<const T *>(a.x) + r * a.x_rows.row_stride;
      for (int64_t c0 = 0; c0 < d; c0 += kBlock)
        gated_span(x + c0, x + d + c0, std::min(kBlock, d - c0), Silu{}, y.data() + c0, up);
      uint8_t *out = static_cast<uint8_t *>(a.out) + r * a.out_rows.row_stride;
      a.scale[r] = quantize_row(y.data(), d, a.quant_dtype, out);
    }
  });
}

}  // namespace

aiter_status silu_and_mul(const ActivationArgs &a) { return run_gated(a, Silu{}); }

aiter_status gelu_and_mul(const ActivationArgs &a) {
  return a.approx == AITER_GELU_TANH ? run_gated(a, GeluTanh{}) : run_gated(a, GeluExact{});
}

aiter_status silu_and_mul_quant(const ActivationArgs &a) {
  if (a.out_rows.cols == 0) {  // rows of nothing: amax 0, scale 1 (the row views count no rows then)
    std::fill(a.scale, a.scale + a.scale_count, 1.0f);
    return AITER_OK;
  }
  populate_rows(a.out, a.out_rows, dtype_size(a.quant_dtype));
  visit_float(a.dtype, [&](auto tag) { silu_quant_rows<decltype(tag)>(a); });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
