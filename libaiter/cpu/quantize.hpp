// Dynamic 8-bit quantization of fp32 values, shared by the quant ops and the
// fused norm+quant and activation+quant ops, so all of them round alike.  Where
// the CPU has AVX-512 (cpu/isa.hpp) amax and the codes take 16 lanes at a time
// (cpu/vec512.hpp), by the same steps as the scalar code, bit for bit.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/dtype.hpp"
#include "cpu/isa.hpp"
#include "cpu/vec512.hpp"

namespace aiter {
namespace cpu {

// ---- the 8-bit types ----------------------------------------------------------
template <class Q> constexpr float qmax();
template <> constexpr float qmax<int8_t>() { return 127.0f; }
template <> constexpr float qmax<e4m3fn_t>() { return e4m3fn_max; }
template <> constexpr float qmax<e4m3fnuz_t>() { return e4m3fnuz_max; }
template <> constexpr float qmax<e5m2_t>() { return e5m2_max; }

// fp8: from_f32 rounds to nearest even and saturates at the format's max.
template <class Q>
inline Q quantize(float v) { return from_f32<Q>(v); }

// int8: -128 stays unused so the range is symmetric; NaN has no code and becomes 0
// (every comparison below is false for it).
template <>
inline int8_t quantize<int8_t>(float v) {
  const float r = std::nearbyint(v);
  return int8_t(r >= 127.0f ? 127.0f : r <= -127.0f ? -127.0f : r == r ? r : 0.0f);
}

// visit_quant(dt, f) calls f(Q{}) with Q the C++ type of an 8-bit output dtype.
template <class F>
void visit_quant(DType dt, F &&f) {
  if (dt == DType::i8) return f(int8_t{});
  visit_fp8(dt, f);
}

// amax / qmax, 1 where amax is 0; never below FLT_MIN, so that 1/scale stays finite.
inline float scale_for(float amax, float q) { return amax == 0.0f ? 1.0f : std::max(amax / q, FLT_MIN); }

#ifdef AITER_VEC512
template <class Q> AITER_VEC512_FN __m512i codes_of(__m512 v);
template <> AITER_VEC512_FN __m512i codes_of<int8_t>(__m512 v) { return vec512::int8_codes(v); }
template <> AITER_VEC512_FN __m512i codes_of<e4m3fn_t>(__m512 v) { return vec512::fp8_codes<3, 7, false>(v, e4m3fn_max); }
template <> AITER_VEC512_FN __m512i codes_of<e4m3fnuz_t>(__m512 v) {
  return vec512::fp8_codes<3, 8, true>(v, e4m3fnuz_max);
}
template <> AITER_VEC512_FN __m512i codes_of<e5m2_t>(__m512 v) { return vec512::fp8_codes<2, 15, false>(v, e5m2_max); }

template <class Q>
__attribute__((target(AITER_TARGET_VEC512))) inline void store_quantized_avx512(const float *v, int64_t n,
                                                                               float inv_scale, Q *out) {
  const __m512 s = _mm512_set1_ps(inv_scale);
  for (int64_t i = 0; i < n; i += 16)
    vec512::store_bytes(out + i, codes_of<Q>(_mm512_mul_ps(vec512::load(v + i, n - i), s)), n - i);
}

// vmaxps returns its second operand where either is NaN: the running max.
__attribute__((target(AITER_TARGET_VEC512))) inline float amax_avx512(const float *v, int64_t n) {
  __m512 m = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) m = _mm512_max_ps(_mm512_abs_ps(vec512::load(v + i, n - i)), m);
  return _mm512_reduce_max_ps(m);
}
#endif

// NaN is skipped (std::max keeps its first argument when a comparison is false).
inline float amax_of(const float *v, int64_t n) {
#ifdef AITER_VEC512
  if (isa_at_least(Isa::avx512)) return amax_avx512(v, n);
#endif
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

template <class Q>
void store_quantized(const float *v, int64_t n, float inv_scale, Q *out) {
#ifdef AITER_VEC512
  if (isa_at_least(Isa::avx512)) return store_quantized_avx512(v, n, inv_scale, out);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = quantize<Q>(v[i] * inv_scale);
}

// Quantizes one row of fp32 values with its own dynamic scale; returns the scale.
inline float quantize_row(const float *v, int64_t n, DType out_dtype, void *out) {
  float scale = 1.0f;
  visit_quant(out_dtype, [&](auto tag) {
    using Q = decltype(tag);
    scale = scale_for(amax_of(v, n), qmax<Q>());
    store_quantized(v, n, 1.0f / scale, static_cast<Q *>(out));
  });
  return scale;
}

}  // namespace cpu
}  // namespace aiter
