// The AVX-512 arithmetic of the CPU attention core (QueryRows, attention_tile.hpp):
// query rows in blocks of 4 against a tile of up to 64 keys.
//   scores  4 rows x (up to) 4 vectors of 16 keys in 16 zmm sums; per step of the
//           head dim one load per key vector and one broadcast per row: fp32 FMA
//           over the transposed fp32 keys, or vdpbf16ps over bf16 pairs (two dims
//           a step; the softmax scale applied to the sums, as q is kept unscaled);
//   softmax per row, masked to its visible keys, exp vectorized (vec512::exp);
//   p . v   4 rows x (up to) 4 vectors of 16 value dims, fp32 FMA, one load of
//           values per vector and one broadcast of p per row and key; the rows'
//           accumulators are rescaled by their max's correction on the way in.
// Only the key vectors that some row of the block sees are computed, so causal
// tiles stop at the diagonal.  Everything with a target attribute here runs only
// after pick_kernel() found the level in cpu_isa(); other builds (aarch64) get
// pick_kernel() == portable and never call in.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "cpu/attention_tile.hpp"
#include "cpu/isa.hpp"
#include "cpu/vec512.hpp"

namespace aiter {
namespace cpu {
namespace attn {

#ifdef AITER_VEC512

namespace {
constexpr int kBlockRows = 4;   // query rows of a block
constexpr int kKeyVectors = int(kKeyTile / 16);
constexpr int kValueVectors = 4;  // value dims of one p . v pass: 4 x 16
}  // namespace

Kernel pick_kernel(bool bf16_operands) {
  if (bf16_operands && isa_at_least(Isa::avx512_bf16)) return Kernel::avx512_bf16;
  return isa_at_least(Isa::avx512) ? Kernel::avx512 : Kernel::portable;
}

namespace {

#define AITER_ATTN_FN __attribute__((target(AITER_TARGET_VEC512)))
#define AITER_ATTN_BF16_FN __attribute__((target(AITER_TARGET_VEC512 ",avx512bf16")))
// Fully unrolled loops over the register block, so that gcc keeps the sums in
// registers (with plain loops it stores every sum back to the stack each step).
#define AITER_UNROLL _Pragma("GCC unroll 16")

// s[r][16 v + lane] = q_r . key (16 v + lane) for R rows and NV key vectors;
// q rows d apart, keys_t [d][kKeyTile] starting at the first vector.
template <int R, int NV>
AITER_ATTN_FN void scores_fp32(const float *q, int64_t d, const float *keys_t, float *s) {
  __m512 sum[R][NV];
  AITER_UNROLL for (int r = 0; r < R; ++r)
    AITER_UNROLL for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; ++i) {
    __m512 k[NV];
    AITER_UNROLL for (int v = 0; v < NV; ++v) k[v] = _mm512_loadu_ps(keys_t + i * kKeyTile + 16 * v);
    AITER_UNROLL for (int r = 0; r < R; ++r) {
      const __m512 b = _mm512_set1_ps(q[r * d + i]);
      AITER_UNROLL for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_fmadd_ps(b, k[v], sum[r][v]);
    }
  }
  AITER_UNROLL for (int r = 0; r < R; ++r)
    AITER_UNROLL for (int v = 0; v < NV; ++v) _mm512_storeu_ps(s + r * kKeyTile + 16 * v, sum[r][v]);
}

// The same from bf16 pairs (d2 = pairs a row), times scale.
template <int R, int NV>
AITER_ATTN_BF16_FN void scores_bf16(const uint32_t *q, int64_t d2, const uint32_t *key_pairs, float scale, float *s) {
  __m512 sum[R][NV];
  AITER_UNROLL for (int r = 0; r < R; ++r)
    AITER_UNROLL for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_setzero_ps();
  for (int64_t i = 0; i < d2; ++i) {
    __m512i k[NV];
    AITER_UNROLL for (int v = 0; v < NV; ++v)
      k[v] = _mm512_loadu_si512(reinterpret_cast<const void *>(key_pairs + i * kKeyTile + 16 * v));
    AITER_UNROLL for (int r = 0; r < R; ++r) {
      const __m512i b = _mm512_set1_epi32(int(q[r * d2 + i]));
      AITER_UNROLL for (int v = 0; v < NV; ++v) sum[r][v] = _mm512_dpbf16_ps(sum[r][v], (__m512bh)k[v], (__m512bh)b);
    }
  }
  const __m512 sc = _mm512_set1_ps(scale);
  AITER_UNROLL for (int r = 0; r < R; ++r)
    AITER_UNROLL for (int v = 0; v < NV; ++v) _mm512_storeu_ps(s + r * kKeyTile + 16 * v, _mm512_mul_ps(sum[r][v], sc));
}

// acc_r[x0 + ...] = acc_r * correction_r + sum over keys [j0, j1) of p_r[j] v[j]
// for R rows (acc rows dv apart, p rows kKeyTile apart) and NX vectors of value dims.
template <int R, int NX>
AITER_ATTN_FN void weighted_values(const float *p, int64_t j0, int64_t j1, const float *values, int64_t dv, int64_t x0,
                                   const float *correction, float *acc) {
  __mmask16 mask[NX];
  AITER_UNROLL for (int x = 0; x < NX; ++x) mask[x] = vec512::first(dv - x0 - 16 * x);
  __m512 sum[R][NX];
  AITER_UNROLL for (int r = 0; r < R; ++r) {
    const __m512 c = _mm512_set1_ps(correction[r]);
    AITER_UNROLL for (int x = 0; x < NX; ++x)
      sum[r][x] = _mm512_mul_ps(c, _mm512_maskz_loadu_ps(mask[x], acc + r * dv + x0 + 16 * x));
  }
  for (int64_t j = j0; j < j1; ++j) {
    const float *v = values + j * dv + x0;
    AITER_UNROLL for (int x = 0; x < NX; ++x) {
      const __m512 vx = _mm512_maskz_loadu_ps(mask[x], v + 16 * x);
      AITER_UNROLL for (int r = 0; r < R; ++r) sum[r][x] = _mm512_fmadd_ps(_mm512_set1_ps(p[r * kKeyTile + j]), vx, sum[r][x]);
    }
  }
  AITER_UNROLL for (int r = 0; r < R; ++r)
    AITER_UNROLL for (int x = 0; x < NX; ++x) _mm512_mask_storeu_ps(acc + r * dv + x0 + 16 * x, mask[x], sum[r][x]);
}

// Tables of the instantiations, indexed [R - 1][N - 1].
using ScoresFp32 = void (*)(const float *, int64_t, const float *, float *);
using ScoresBf16 = void (*)(const uint32_t *, int64_t, const uint32_t *, float, float *);
using WeightedValues = void (*)(const float *, int64_t, int64_t, const float *, int64_t, int64_t, const float *,
                                float *);

template <int R, int... N>
constexpr std::array<ScoresFp32, sizeof...(N)> fp32_row(std::integer_sequence<int, N...>) {
  return {&scores_fp32<R, N + 1>...};
}
template <int R, int... N>
constexpr std::array<ScoresBf16, sizeof...(N)> bf16_row(std::integer_sequence<int, N...>) {
  return {&scores_bf16<R, N + 1>...};
}
template <int R, int... N>
constexpr std::array<WeightedValues, sizeof...(N)> values_row(std::integer_sequence<int, N...>) {
  return {&weighted_values<R, N + 1>...};
}
using KeyVectors = std::make_integer_sequence<int, kKeyVectors>;
using ValueVectors = std::make_integer_sequence<int, kValueVectors>;
constexpr std::array<std::array<ScoresFp32, kKeyVectors>, kBlockRows> kScoresFp32 = {
    fp32_row<1>(KeyVectors{}), fp32_row<2>(KeyVectors{}), fp32_row<3>(KeyVectors{}), fp32_row<4>(KeyVectors{})};
constexpr std::array<std::array<ScoresBf16, kKeyVectors>, kBlockRows> kScoresBf16 = {
    bf16_row<1>(KeyVectors{}), bf16_row<2>(KeyVectors{}), bf16_row<3>(KeyVectors{}), bf16_row<4>(KeyVectors{})};
constexpr std::array<std::array<WeightedValues, kValueVectors>, kBlockRows> kWeightedValues = {
    values_row<1>(ValueVectors{}), values_row<2>(ValueVectors{}), values_row<3>(ValueVectors{}),
    values_row<4>(ValueVectors{})};

// One row's scores s over key vectors [v0, v1) become its weights p in place:
// e^(s - new max) on its visible keys [j0, j1), 0 elsewhere.  Returns the
// correction e^(old max - new max) and updates *max and *sum.
AITER_ATTN_FN float softmax_row(float *s, int64_t v0, int64_t v1, int64_t j0, int64_t j1, float *max, float *sum) {
  auto visible = [&](int64_t v) {  // lanes of key vector v in [j0, j1)
    const int64_t lo = std::clamp<int64_t>(j0 - 16 * v, 0, 16), hi = std::clamp<int64_t>(j1 - 16 * v, 0, 16);
    return __mmask16(((1u << hi) - 1u) & ~((1u << lo) - 1u));
  };
  __m512 top = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t v = v0; v < v1; ++v) top = _mm512_mask_max_ps(top, visible(v), top, _mm512_loadu_ps(s + 16 * v));
  const float new_max = std::max(*max, _mm512_reduce_max_ps(top));
  const float correction = std::exp(*max - new_max);
  const __m512 m = _mm512_set1_ps(new_max);
  __m512 total = _mm512_setzero_ps();
  for (int64_t v = v0; v < v1; ++v) {
    const __m512 p = _mm512_maskz_mov_ps(visible(v), vec512::exp(_mm512_sub_ps(_mm512_loadu_ps(s + 16 * v), m)));
    _mm512_storeu_ps(s + 16 * v, p);
    total = _mm512_add_ps(total, p);
  }
  *max = new_max;
  *sum = *sum * correction + _mm512_reduce_add_ps(total);
  return correction;
}

// 16 rows of 16 32-bit words transposed: r[i] lane j becomes r[j] lane i.
// Interleaves of 32 and 64 bits leave, in 128-bit lane l of u[4a + b], rows
// 4a..4a+3 of word 4l + b; two rounds of 128-bit shuffles gather each word's four lanes.
AITER_ATTN_FN inline __attribute__((always_inline)) void transpose16x16(__m512i r[16]) {
  __m512i t[16], u[16];
  AITER_UNROLL for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  AITER_UNROLL for (int a = 0; a < 4; ++a) {
    u[4 * a + 0] = _mm512_unpacklo_epi64(t[4 * a], t[4 * a + 2]);
    u[4 * a + 1] = _mm512_unpackhi_epi64(t[4 * a], t[4 * a + 2]);
    u[4 * a + 2] = _mm512_unpacklo_epi64(t[4 * a + 1], t[4 * a + 3]);
    u[4 * a + 3] = _mm512_unpackhi_epi64(t[4 * a + 1], t[4 * a + 3]);
  }
  AITER_UNROLL for (int b = 0; b < 4; ++b) {
    const __m512i lo02 = _mm512_shuffle_i32x4(u[b], u[4 + b], 0x88), lo13 = _mm512_shuffle_i32x4(u[b], u[4 + b], 0xdd);
    const __m512i hi02 = _mm512_shuffle_i32x4(u[8 + b], u[12 + b], 0x88),
                  hi13 = _mm512_shuffle_i32x4(u[8 + b], u[12 + b], 0xdd);
    r[b] = _mm512_shuffle_i32x4(lo02, hi02, 0x88);
    r[8 + b] = _mm512_shuffle_i32x4(lo02, hi02, 0xdd);
    r[4 + b] = _mm512_shuffle_i32x4(lo13, hi13, 0x88);
    r[12 + b] = _mm512_shuffle_i32x4(lo13, hi13, 0xdd);
  }
}

// Keys k0..k0+n (n <= 16) of the tile, pairs [w0, w0 + c) (c <= 16) of each.
AITER_ATTN_FN void pair_block(const bf16_t *const *keys, int64_t k0, int n, int64_t w0, int c, uint32_t *key_pairs) {
  const __mmask16 words = vec512::first(c);
  __m512i r[16];
  AITER_UNROLL for (int i = 0; i < 16; ++i)
    r[i] = i < n ? _mm512_maskz_loadu_epi32(words, keys[k0 + i] + 2 * w0) : _mm512_setzero_si512();
  transpose16x16(r);
  AITER_UNROLL for (int g = 0; g < 16; ++g)
    _mm512_mask_storeu_epi32(key_pairs + (w0 + g) * kKeyTile + k0, g < c ? __mmask16(0xffff) : __mmask16(0), r[g]);
}

// fp8 codes to bf16 without gathers (slow on this kind of core; every fp8 value is
// a bf16 value, so this is exact): the bf16 bits of the 128 codes without sign
// live in 4 zmm; two two-table word permutes (6 index bits each) and a blend on
// index bit 6 look 32 codes up at once, bit 7 is the sign.  fnuz formats have no
// -0: their 0x80 is NaN.
struct Fp8Lookup {
  __m512i table[4];
  bool fnuz;
};

template <class C>
AITER_ATTN_FN Fp8Lookup fp8_lookup() {
  const float *values = std::is_same_v<C, e4m3fn_t> ? e4m3fn_table : std::is_same_v<C, e4m3fnuz_t> ? e4m3fnuz_table
                                                                                                     : e5m2_table;
  Fp8Lookup l;
  AITER_UNROLL for (int i = 0; i < 4; ++i) {
    const __m512i lo = _mm512_srli_epi32(_mm512_castps_si512(_mm512_loadu_ps(values + 32 * i)), 16);
    const __m512i hi = _mm512_srli_epi32(_mm512_castps_si512(_mm512_loadu_ps(values + 32 * i + 16)), 16);
    l.table[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(lo)), _mm512_cvtepi32_epi16(hi), 1);
  }
  l.fnuz = std::is_same_v<C, e4m3fnuz_t>;
  return l;
}

// n <= 32 codes at p as bf16 bits in the 16-bit lanes, zeros past n.
__attribute__((target(AITER_TARGET_VEC512), always_inline)) inline __m512i fp8_to_bf16(const Fp8Lookup &l,
                                                                                        const void *p, int64_t n) {
  const __mmask32 mask = n >= 32 ? __mmask32(~0u) : __mmask32((1u << n) - 1u);
  const __m512i code = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, p));
  const __m512i low = _mm512_and_si512(code, _mm512_set1_epi16(127));
  const __m512i v0 = _mm512_permutex2var_epi16(l.table[0], low, l.table[1]);
  const __m512i v1 = _mm512_permutex2var_epi16(l.table[2], low, l.table[3]);
  const __m512i v = _mm512_mask_mov_epi16(v0, _mm512_test_epi16_mask(code, _mm512_set1_epi16(64)), v1);
  const __m512i out = _mm512_or_si512(v, _mm512_slli_epi16(_mm512_and_si512(code, _mm512_set1_epi16(0x80)), 8));
  if (!l.fnuz) return out;
  return _mm512_mask_mov_epi16(out, _mm512_cmpeq_epi16_mask(code, _mm512_set1_epi16(0x80)), _mm512_set1_epi16(0x7fc0));
}

// n <= 16 codes as fp32 lanes.
__attribute__((target(AITER_TARGET_VEC512), always_inline)) inline __m512 fp8_to_fp32(const Fp8Lookup &l,
                                                                                       const void *p, int64_t n) {
  const __m256i bf = _mm512_castsi512_si256(fp8_to_bf16(l, p, std::min<int64_t>(n, 16)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bf), 16));
}

// n <= 16 stored values at p as fp32 lanes times scale, zeros past n.
template <class C>
AITER_ATTN_FN __m512 load_scaled(const C *p, int64_t n, float scale, const Fp8Lookup &fp8) {
  if constexpr (sizeof(C) == 1)
    return _mm512_mul_ps(fp8_to_fp32(fp8, p, n), _mm512_set1_ps(scale));
  else
    return _mm512_mul_ps(vec512::load(p, n), _mm512_set1_ps(scale));
}

template <class C>
AITER_ATTN_FN Fp8Lookup lookup_for() {
  if constexpr (sizeof(C) == 1) return fp8_lookup<C>();
  return Fp8Lookup{};
}

// fp32 copies of keys k0..k0+n (n <= 16), dims [i0, i0 + c) (c <= 16), transposed.
template <class C>
AITER_ATTN_FN void key_block_fp32(const C *const *keys, int64_t k0, int n, int64_t i0, int c, float scale,
                                  const Fp8Lookup &fp8, float *keys_t) {
  __m512i r[16];
  AITER_UNROLL for (int i = 0; i < 16; ++i)
    r[i] = i < n ? _mm512_castps_si512(load_scaled(keys[k0 + i] + i0, c, scale, fp8)) : _mm512_setzero_si512();
  transpose16x16(r);
  AITER_UNROLL for (int g = 0; g < 16; ++g)
    _mm512_mask_storeu_epi32(keys_t + (i0 + g) * kKeyTile + k0, g < c ? __mmask16(0xffff) : __mmask16(0), r[g]);
}

template <class C>
AITER_ATTN_FN void fill_values(const C *const *values, int64_t count, int64_t dv, float scale, float *value_rows) {
  const Fp8Lookup fp8 = lookup_for<C>();
  for (int64_t j = 0; j < count; ++j)
    for (int64_t x = 0; x < dv; x += 16)
      vec512::store(value_rows + j * dv + x, load_scaled(values[j] + x, dv - x, scale, fp8), dv - x);
}

template <class C>
AITER_ATTN_FN void fill_fp32(const C *const *keys, const C *const *values, int64_t count, int64_t d, int64_t dv,
                             float k_scale, float v_scale, float *keys_t, float *value_rows) {
  const Fp8Lookup fp8 = lookup_for<C>();
  for (int64_t k0 = 0; k0 < count; k0 += 16) {
    const int n = int(std::min<int64_t>(16, count - k0));
    for (int64_t i0 = 0; i0 < d; i0 += 16)
      key_block_fp32(keys, k0, n, i0, int(std::min<int64_t>(16, d - i0)), k_scale, fp8, keys_t);
  }
  fill_values(values, count, dv, v_scale, value_rows);
}

// Keys k0..k0+n (n <= 16) of fp8 codes, pairs [w0, w0 + c) (c <= 16) of each, as
// bf16 pairs (exact: fp8 values are bf16 values), transposed.
AITER_ATTN_FN void fp8_pair_block(const Fp8Lookup &l, const uint8_t *const *keys, int64_t d, int64_t k0, int n,
                                       int64_t w0, int c, uint32_t *key_pairs) {
  const int64_t dims = std::min<int64_t>(2 * c, d - 2 * w0);  // an odd d's last pair gets a zero
  __m512i r[16];
  AITER_UNROLL for (int i = 0; i < 16; ++i) {
    if (i >= n) {
      r[i] = _mm512_setzero_si512();
      continue;
    }
    r[i] = fp8_to_bf16(l, keys[k0 + i] + 2 * w0, dims);  // 32 bf16 in order: 16 pairs
  }
  transpose16x16(r);
  AITER_UNROLL for (int g = 0; g < 16; ++g)
    _mm512_mask_storeu_epi32(key_pairs + (w0 + g) * kKeyTile + k0, g < c ? __mmask16(0xffff) : __mmask16(0), r[g]);
}

template <class C>
void fill_fp8_pairs(const C *const *keys, const C *const *values, int64_t count, int64_t d, int64_t dv, float v_scale,
                    uint32_t *key_pairs, float *value_rows) {
  const Fp8Lookup l = fp8_lookup<C>();
  const uint8_t *const *codes = reinterpret_cast<const uint8_t *const *>(keys);
  const int64_t words = (d + 1) / 2;
  for (int64_t k0 = 0; k0 < count; k0 += 16) {
    const int n = int(std::min<int64_t>(16, count - k0));
    for (int64_t w0 = 0; w0 < words; w0 += 16)
      fp8_pair_block(l, codes, d, k0, n, w0, int(std::min<int64_t>(16, words - w0)), key_pairs);
  }
  fill_values(values, count, dv, v_scale, value_rows);
}

template <class T>
AITER_ATTN_FN void store_row(const float *acc, float inv, int64_t n, T *out) {
  const __m512 scale = _mm512_set1_ps(inv);
  for (int64_t x = 0; x < n; x += 16) vec512::store(out + x, _mm512_mul_ps(vec512::load(acc + x, n - x), scale), n - x);
}

// Logits s over key vectors [v0, v1) become softcap * tanh(s / softcap), tanh(y)
// as 1 - 2 / (e^2y + 1): absolute error about 1e-7 of the cap (the form loses
// relative accuracy near 0, where the logit itself is small), e^2y's overflow
// giving 1 and its underflow -1.
AITER_ATTN_FN void cap_scores(float *s, int64_t v0, int64_t v1, float softcap) {
  const __m512 cap = _mm512_set1_ps(softcap), one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
  for (int64_t v = v0; v < v1; ++v) {
    const __m512 y = _mm512_div_ps(_mm512_loadu_ps(s + 16 * v), cap);
    const __m512 e = vec512::exp(_mm512_add_ps(y, y));
    const __m512 tanh = _mm512_sub_ps(one, _mm512_div_ps(two, _mm512_add_ps(e, one)));
    _mm512_storeu_ps(s + 16 * v, _mm512_mul_ps(cap, tanh));
  }
}

}  // namespace

#define AITER_ATTN_FILL_FP32_BODY(C) \
  AITER_ATTN_FILL_FP32(C) { fill_fp32(keys, values, count, d, dv, k_scale, v_scale, keys_t, value_rows); }
AITER_ATTN_FILL_FP32_BODY(float)
AITER_ATTN_FILL_FP32_BODY(half_t)
AITER_ATTN_FILL_FP32_BODY(bf16_t)
AITER_ATTN_FILL_FP32_BODY(e4m3fn_t)
AITER_ATTN_FILL_FP32_BODY(e4m3fnuz_t)
AITER_ATTN_FILL_FP32_BODY(e5m2_t)
#define AITER_ATTN_FILL_FP8_PAIRS_BODY(C) \
  AITER_ATTN_FILL_FP8_PAIRS(C) { fill_fp8_pairs(keys, values, count, d, dv, v_scale, key_pairs, value_rows); }
AITER_ATTN_FILL_FP8_PAIRS_BODY(e4m3fn_t)
AITER_ATTN_FILL_FP8_PAIRS_BODY(e4m3fnuz_t)
AITER_ATTN_FILL_FP8_PAIRS_BODY(e5m2_t)
void store_row_avx512(const float *acc, float inv, int64_t n, float *out) { store_row(acc, inv, n, out); }
void store_row_avx512(const float *acc, float inv, int64_t n, half_t *out) { store_row(acc, inv, n, out); }
void store_row_avx512(const float *acc, float inv, int64_t n, bf16_t *out) { store_row(acc, inv, n, out); }

void fill_bf16_avx512(const bf16_t *const *keys, const bf16_t *const *values, int64_t count, int64_t d,
                      int64_t dv, uint32_t *key_pairs, float *value_rows) {
  const int64_t words = d / 2;  // whole pairs; an odd d's last dim is a pair with zero
  for (int64_t k0 = 0; k0 < count; k0 += 16) {
    const int n = int(std::min<int64_t>(16, count - k0));
    for (int64_t w0 = 0; w0 < words; w0 += 16) pair_block(keys, k0, n, w0, int(std::min<int64_t>(16, words - w0)), key_pairs);
  }
  if (d % 2 != 0)
    for (int64_t j = 0; j < count; ++j) key_pairs[words * kKeyTile + j] = keys[j][d - 1].bits;
  fill_values(values, count, dv, 1.0f, value_rows);
}

void QueryRows::attend_avx512(const KvTile &tile) {
  for (int64_t r0 = 0; r0 < n_; r0 += kBlockRows) attend_block_avx512(r0, std::min<int64_t>(kBlockRows, n_ - r0), tile);
}

void QueryRows::attend_block_avx512(int64_t r0, int64_t n, const KvTile &tile) {
  int64_t j0[kBlockRows], j1[kBlockRows], lo = kKeyTile, hi = 0;
  for (int64_t r = 0; r < n; ++r) {
    j0[r] = std::max(lo_[size_t(r0 + r)], tile.first()) - tile.first();
    j1[r] = std::min(hi_[size_t(r0 + r)], tile.first() + tile.count()) - tile.first();
    if (j0[r] < j1[r]) lo = std::min(lo, j0[r]), hi = std::max(hi, j1[r]);
  }
  if (lo >= hi) return;  // no row of the block sees a key of this tile
  const int64_t v0 = lo / 16, v1 = (hi + 15) / 16;
  float *s = scores_.data();
  if (kernel_ == Kernel::avx512_bf16) {
    const int64_t d2 = (d_ + 1) / 2;
    kScoresBf16[size_t(n - 1)][size_t(v1 - v0 - 1)](query_pairs_.data() + r0 * d2, d2, tile.key_pair_column(0) + 16 * v0,
                                                     scale_ * tile.key_scale(), s + 16 * v0);
  } else {
    kScoresFp32[size_t(n - 1)][size_t(v1 - v0 - 1)](query_.data() + r0 * d_, d_, tile.key_column(0) + 16 * v0,
                                                     s + 16 * v0);
  }
  float correction[kBlockRows];
  for (int64_t r = 0; r < n; ++r) {
    float *row = s + r * kKeyTile;
    if (j0[r] >= j1[r]) {  // sees nothing here: weights 0, state kept
      std::fill(row + lo, row + hi, 0.0f);
      correction[r] = 1.0f;
      continue;
    }
    if (softcap_ > 0.0f) cap_scores(row, v0, v1, softcap_);
    correction[r] = softmax_row(row, v0, v1, j0[r], j1[r], &max_[size_t(r0 + r)], &sum_[size_t(r0 + r)]);
  }
  for (int64_t x0 = 0; x0 < dv_; x0 += 16 * kValueVectors) {
    const int64_t nx = std::min<int64_t>(kValueVectors, (dv_ - x0 + 15) / 16);
    kWeightedValues[size_t(n - 1)][size_t(nx - 1)](s, lo, hi, tile.value_row(0), dv_, x0, correction,
                                                    acc_.data() + r0 * dv_);
  }
}

#else  // no AVX-512 build: the portable loops only

Kernel pick_kernel(bool) { return Kernel::portable; }
void fill_bf16_avx512(const bf16_t *const *, const bf16_t *const *, int64_t, int64_t, int64_t, uint32_t *, float *) {}
// Never called (pick_kernel() is portable here), but linked.
#define AITER_ATTN_FILL_FP32_NONE(C) \
  void fill_fp32_avx512(const C *const *, const C *const *, int64_t, int64_t, int64_t, float, float, float *, float *) {}
AITER_ATTN_FILL_FP32_NONE(float)
AITER_ATTN_FILL_FP32_NONE(half_t)
AITER_ATTN_FILL_FP32_NONE(bf16_t)
AITER_ATTN_FILL_FP32_NONE(e4m3fn_t)
AITER_ATTN_FILL_FP32_NONE(e4m3fnuz_t)
AITER_ATTN_FILL_FP32_NONE(e5m2_t)
#define AITER_ATTN_FILL_FP8_PAIRS_NONE(C) \
  void fill_pairs_avx512(const C *const *, const C *const *, int64_t, int64_t, int64_t, float, uint32_t *, float *) {}
AITER_ATTN_FILL_FP8_PAIRS_NONE(e4m3fn_t)
AITER_ATTN_FILL_FP8_PAIRS_NONE(e4m3fnuz_t)
AITER_ATTN_FILL_FP8_PAIRS_NONE(e5m2_t)
void store_row_avx512(const float *, float, int64_t, float *) {}
void store_row_avx512(const float *, float, int64_t, half_t *) {}
void store_row_avx512(const float *, float, int64_t, bf16_t *) {}
void QueryRows::attend_avx512(const KvTile &tile) {
  for (int64_t r = 0; r < n_; ++r) attend_row(r, tile);
}
void QueryRows::attend_block_avx512(int64_t, int64_t, const KvTile &) {}

#endif

}  // namespace attn
}  // namespace cpu
}  // namespace aiter
