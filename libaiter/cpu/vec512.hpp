// AVX-512 building blocks of the memory-bound CPU ops: loads of 16 fp32 / bf16
// / fp16 elements as fp32 lanes, stores that round once as from_f32 does, and
// exp.  Every function carries its target attribute and is inlined only into
// functions with the same one, which run after cpu_isa() (cpu/isa.hpp) said
// AVX-512 is there; the rest of the library stays baseline x86-64.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "core/dtype.hpp"

#define AITER_VEC512 1
// gcc 12's AVX-512 intrinsics fill their unused merge operand from a
// self-initialized "undefined" vector, which -Wuninitialized reports wherever
// one is inlined; the rest of an including file is spared the false alarm.
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define AITER_TARGET_VEC512 "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"
#define AITER_VEC512_FN __attribute__((target(AITER_TARGET_VEC512), always_inline)) inline

namespace aiter {
namespace cpu {
namespace vec512 {

AITER_VEC512_FN __mmask16 first(int64_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

// n <= 16 elements at p as fp32 lanes, zeros past n.
AITER_VEC512_FN __m512 load(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
AITER_VEC512_FN __m512 load(const bf16_t *p, int64_t n) {
  const __m256i h = _mm256_maskz_loadu_epi16(first(n), p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
AITER_VEC512_FN __m512 load(const half_t *p, int64_t n) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p));
}

// The first n <= 16 lanes of v to p, rounded to nearest even (f32_to_bf16's
// rule for bf16, NaN kept quiet; IEEE for fp16).
AITER_VEC512_FN void store(float *p, __m512 v, int64_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
AITER_VEC512_FN void store(bf16_t *p, __m512 v, int64_t n) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  _mm256_mask_storeu_epi16(p, first(n), _mm512_cvtepi32_epi16(r));
}
AITER_VEC512_FN void store(half_t *p, __m512 v, int64_t n) {
  _mm256_mask_storeu_epi16(p, first(n), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// e^x to about 1 ulp: x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, so
// that n ln2 is exact), e^r by its Taylor polynomial to r^7, times 2^n by
// vscalefps (which also gives inf and 0 past the ends, and subnormals).  x is
// clamped first so that inf - inf cannot appear; min/max pass NaN through.
AITER_VEC512_FN __m512 exp(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(89.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// x / (1 + e^-x): silu, and (with x = 2u) the tanh form of gelu.
AITER_VEC512_FN __m512 x_sigmoid(__m512 x, __m512 t) {
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp(_mm512_sub_ps(_mm512_setzero_ps(), t))));
}

// ---- 8-bit codes -------------------------------------------------------------------
// The fp8 code of each lane, the same as core/dtype.cpp's encode() gives, bit
// for bit: saturate at max; a normal value's mantissa rounds to nearest even
// in its fp32 bits (adding just under half a step plus the kept lowest bit,
// then cutting; a carry moves into the exponent on its own), and the exponent
// is rebiased by one subtraction on the bits shifted down; a subnormal one is
// a * 2^(mbits + bias - 1) rounded to an integer, which is its code (8 for
// e4m3 being the smallest normal's code as well).  NaN gives the NaN code;
// fnuz has no negative zero.
template <int kMbits, int kBias, bool kFnuz>
AITER_VEC512_FN __m512i fp8_codes(__m512 x, float max) {
  constexpr int kShift = 23 - kMbits;
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 24), _mm512_set1_epi32(0x80));
  const __m512 a = _mm512_min_ps(_mm512_abs_ps(x), _mm512_set1_ps(max));
  const __m512i bits = _mm512_castps_si512(a);
  const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(bits, kShift), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lowest_kept, _mm512_set1_epi32((1 << (kShift - 1)) - 1)));
  const __m512i normal_code =
      _mm512_sub_epi32(_mm512_srli_epi32(rounded, kShift), _mm512_set1_epi32((127 - kBias) << kMbits));
  const __mmask16 subnormal = _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.0f / float(1 << (kBias - 1))), _CMP_LT_OQ);
  const __m512i subnormal_code = _mm512_cvt_roundps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(float(1 << (kBias - 1 + kMbits)))),
                                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i magnitude = _mm512_mask_mov_epi32(normal_code, subnormal, subnormal_code);
  __m512i code = _mm512_or_si512(sign, magnitude);
  if (kFnuz) code = _mm512_maskz_mov_epi32(_mm512_cmpneq_epi32_mask(magnitude, _mm512_setzero_si512()), code);
  return _mm512_mask_mov_epi32(code, nan, _mm512_set1_epi32(kFnuz ? 0x80 : 0x7f));
}

// int8: round to nearest even, saturate at +-127 (-128 unused), NaN to 0.
AITER_VEC512_FN __m512i int8_codes(__m512 x) {
  const __mmask16 number = _mm512_cmp_ps_mask(x, x, _CMP_ORD_Q);
  const __m512 r = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_maskz_cvt_roundps_epi32(number, r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// The low byte of the first n <= 16 lanes to p.
AITER_VEC512_FN void store_bytes(void *p, __m512i codes, int64_t n) {
  _mm_mask_storeu_epi8(p, first(n), _mm512_cvtepi32_epi8(codes));
}

}  // namespace vec512
}  // namespace cpu
}  // namespace aiter
#endif
