#include "cpu/gemm_avx512_kernels.hpp"

#include <array>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AITER_AVX512_KERNELS 1
// gcc 12's AVX-512 shuffle intrinsics fill their unused merge operand from a
// self-initialized "undefined" vector, which -Wuninitialized reports at every use.
#ifndef __clang__
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace aiter {
namespace cpu {
namespace avx512 {

#ifdef AITER_AVX512_KERNELS
namespace {

// Each kernel carries the exact extensions it uses, so that one built for plain
// AVX-512 can never contain an instruction of AVX512_BF16 or AVX512_VNNI.
#define AITER_TARGET_AVX512 "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"
#define AITER_TARGET_BF16 AITER_TARGET_AVX512 ",avx512bf16"
#define AITER_TARGET_VNNI AITER_TARGET_AVX512 ",avx512vnni"

// ---- the slot products -----------------------------------------------------------
struct Fp32Fma {
  __attribute__((target(AITER_TARGET_AVX512), always_inline)) static __m512i dot(__m512i acc, __m512i a, __m512i w) {
    return _mm512_castps_si512(_mm512_fmadd_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(w), _mm512_castsi512_ps(acc)));
  }
};
struct Bf16Dot {
  __attribute__((target(AITER_TARGET_BF16), always_inline)) static __m512i dot(__m512i acc, __m512i a, __m512i w) {
    // The broadcast A goes last: only that operand can be a memory broadcast.
    return _mm512_castps_si512(_mm512_dpbf16_ps(_mm512_castsi512_ps(acc), (__m512bh)w, (__m512bh)a));
  }
};
struct Int16Vnni {
  __attribute__((target(AITER_TARGET_VNNI), always_inline)) static __m512i dot(__m512i acc, __m512i a, __m512i w) {
    return _mm512_dpwssd_epi32(acc, w, a);
  }
};
struct Int8Quads {  // W's uint8 quads (second operand) times A's int8 broadcast (the last)
  __attribute__((target(AITER_TARGET_VNNI), always_inline)) static __m512i dot(__m512i acc, __m512i a, __m512i w) {
    return _mm512_dpbusd_epi32(acc, w, a);
  }
};
struct Int16Madd {  // the same sums without VNNI: two products per lane, then an add
  __attribute__((target(AITER_TARGET_AVX512), always_inline)) static __m512i dot(__m512i acc, __m512i a, __m512i w) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, w));
  }
};

// ---- the outer-product kernel ----------------------------------------------------
// R rows x 32 columns of sums in 2R zmm; per slot of K: two loads of W, R
// broadcasts of A (folded into the dot instructions as memory operands).
// Written once per target through this macro: an always_inline body without
// the target attribute could not inline the intrinsics it calls.
#define AITER_DEFINE_PANEL_KERNEL(NAME, TARGET)                                                              \
  template <int R, class Op>                                                                                \
  __attribute__((target(TARGET))) void NAME(const uint32_t *a, const uint32_t *w, int64_t groups, void *acc_v, \
                                            int64_t ldc, bool accumulate) {                                  \
    uint32_t *acc = static_cast<uint32_t *>(acc_v);                                                         \
    __m512i c[R][2];                                                                                         \
    _Pragma("GCC unroll 16") for (int i = 0; i < R; ++i) {                                                   \
      c[i][0] = accumulate ? _mm512_loadu_si512(acc + i * ldc) : _mm512_setzero_si512();                    \
      c[i][1] = accumulate ? _mm512_loadu_si512(acc + i * ldc + 16) : _mm512_setzero_si512();               \
    }                                                                                                        \
    for (int64_t g = 0; g < groups; ++g) {                                                                   \
      const __m512i w0 = _mm512_loadu_si512(w + g * kPanelW), w1 = _mm512_loadu_si512(w + g * kPanelW + 16); \
      _Pragma("GCC unroll 16") for (int i = 0; i < R; ++i) {                                                 \
        const __m512i x = _mm512_set1_epi32(int(a[g * R + i]));                                             \
        c[i][0] = Op::dot(c[i][0], x, w0);                                                                   \
        c[i][1] = Op::dot(c[i][1], x, w1);                                                                   \
      }                                                                                                      \
    }                                                                                                        \
    _Pragma("GCC unroll 16") for (int i = 0; i < R; ++i) {                                                   \
      _mm512_storeu_si512(acc + i * ldc, c[i][0]);                                                           \
      _mm512_storeu_si512(acc + i * ldc + 16, c[i][1]);                                                      \
    }                                                                                                        \
  }

AITER_DEFINE_PANEL_KERNEL(panel_avx512, AITER_TARGET_AVX512)
AITER_DEFINE_PANEL_KERNEL(panel_bf16, AITER_TARGET_BF16)
AITER_DEFINE_PANEL_KERNEL(panel_vnni, AITER_TARGET_VNNI)

using Table = std::array<Kernel, kMaxRowsA>;  // [rows - 1]

#define AITER_PANEL_TABLE(NAME, OP)                                                   \
  template <int... I>                                                                 \
  constexpr Table NAME##_table_##OP(std::integer_sequence<int, I...>) {               \
    return {{&NAME<I + 1, OP>...}};                                                   \
  }                                                                                   \
  const Table NAME##_##OP = NAME##_table_##OP(std::make_integer_sequence<int, kMaxRowsA>{});

AITER_PANEL_TABLE(panel_avx512, Fp32Fma)
AITER_PANEL_TABLE(panel_avx512, Int16Madd)
AITER_PANEL_TABLE(panel_bf16, Bf16Dot)
AITER_PANEL_TABLE(panel_vnni, Int16Vnni)
AITER_PANEL_TABLE(panel_vnni, Int8Quads)

// ---- the packer ------------------------------------------------------------------
// 16 rows of 16 slots transposed in registers: after the 32-bit and 64-bit
// interleaves, u[4j + q] holds, in its 128-bit lane l, rows 4j..4j+3 of column
// 4l + q; two rounds of 128-bit lane shuffles gather the four lanes of a column.
__attribute__((target(AITER_TARGET_AVX512), always_inline)) inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int j = 0; j < 4; ++j) {
    u[4 * j + 0] = _mm512_unpacklo_epi64(t[4 * j], t[4 * j + 2]);
    u[4 * j + 1] = _mm512_unpackhi_epi64(t[4 * j], t[4 * j + 2]);
    u[4 * j + 2] = _mm512_unpacklo_epi64(t[4 * j + 1], t[4 * j + 3]);
    u[4 * j + 3] = _mm512_unpackhi_epi64(t[4 * j + 1], t[4 * j + 3]);
  }
  for (int q = 0; q < 4; ++q) {
    const __m512i even_lo = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x88), odd_lo = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xdd);
    const __m512i even_hi = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x88),
                  odd_hi = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xdd);
    r[q] = _mm512_shuffle_i32x4(even_lo, even_hi, 0x88);
    r[8 + q] = _mm512_shuffle_i32x4(even_lo, even_hi, 0xdd);
    r[4 + q] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0x88);
    r[12 + q] = _mm512_shuffle_i32x4(odd_lo, odd_hi, 0xdd);
  }
}

// Rows [r0, r0 + 16) of the panel (up to `lanes` of them stored), slots [g0, g0 + count).
// kWhole: 16 whole rows of 16 slots, all stored, with plain loads and stores.
// The two forms are separate functions so that r[] stays in registers: with
// one body, r lived in memory (stored and loaded back around the transpose)
// and packing W took 7% of a bf16 GEMM at M 240.
template <bool kWhole>
__attribute__((target(AITER_TARGET_AVX512))) void pack_block(const uint32_t *src, int64_t ld, int rows, int r0,
                                                             int64_t g0, int count, int width, int lanes,
                                                             uint32_t *panel) {
  const __mmask16 load_mask = __mmask16((1u << count) - 1u), store_mask = __mmask16((1u << lanes) - 1u);
  const uint32_t *row = src + r0 * ld + g0;
  __m512i r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    r[i] = kWhole ? _mm512_loadu_si512(row + i * ld)
           : r0 + i < rows ? _mm512_maskz_loadu_epi32(load_mask, row + i * ld) : _mm512_setzero_si512();
  transpose16(r);
  // A variable index would put r in memory: the partial form stores every slot, masked to those that exist.
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    if (kWhole)
      _mm512_storeu_si512(panel + (g0 + g) * width + r0, r[g]);
    else
      _mm512_mask_storeu_epi32(panel + (g0 + g) * width + r0, g < count ? store_mask : __mmask16(0), r[g]);
  }
}

// ---- the dot-product form ----------------------------------------------------------
// The lines of step k's share of a linear sweep through W, `ahead_bytes` past
// row 0 of the call (dot_kernel's `ahead_bytes`; none where 0): each step asks
// for as many bytes as it reads, kDotRowsW x 32 elements, in address order.
template <class T>
__attribute__((always_inline)) inline void prefetch_ahead(const T *w0, int64_t k, int64_t ahead_bytes) {
  if (ahead_bytes == 0) return;
  const char *at = reinterpret_cast<const char *>(w0) + ahead_bytes + k * int64_t(sizeof(T)) * kDotRowsW;
  constexpr int kLines = kDotRowsW * 32 * int(sizeof(T)) / 64;
#pragma GCC unroll 8
  for (int line = 0; line < kLines; ++line) __builtin_prefetch(at + line * 64, 0, 2);
}

// Elements [k, k + 32) of every row of A against the same of every row of W;
// kMasked: the last, partial step (masked loads read nothing past `mask`).
// (The rows are addressed as base + k: gcc turned an array of moving row
// pointers into vector arithmetic and extracts, 6 instructions a row.)
template <int R, bool kMasked>
__attribute__((target(AITER_TARGET_BF16), always_inline)) inline void dot_bf16_step(
    __m512 (&acc)[R][kDotRowsW], const uint16_t *a, int64_t lda, const uint16_t *const (&w)[kDotRowsW], int64_t k,
    __mmask32 mask) {
  __m512i av[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    av[i] = kMasked ? _mm512_maskz_loadu_epi16(mask, a + i * lda + k) : _mm512_loadu_si512(a + i * lda + k);
#pragma GCC unroll 8
  for (int j = 0; j < kDotRowsW; ++j) {
    const __m512i wv = kMasked ? _mm512_maskz_loadu_epi16(mask, w[j] + k) : _mm512_loadu_si512(w[j] + k);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)wv, (__m512bh)av[i]);
  }
}

template <int R>
__attribute__((target(AITER_TARGET_BF16))) void dot_bf16(const void *a_v, int64_t lda, const void *const *w_v,
                                                         int64_t kc, void *lanes_v, bool accumulate, const uint16_t *,
                                                         int64_t ahead_bytes) {
  const uint16_t *a = static_cast<const uint16_t *>(a_v);
  const uint16_t *w[kDotRowsW];
#pragma GCC unroll 8
  for (int j = 0; j < kDotRowsW; ++j) w[j] = static_cast<const uint16_t *>(w_v[j]);
  float *lanes = static_cast<float *>(lanes_v);
  __m512 acc[R][kDotRowsW];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < kDotRowsW; ++j)
      acc[i][j] = accumulate ? _mm512_loadu_ps(lanes + (i * kDotRowsW + j) * 16) : _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= kc; k += 32) {
    prefetch_ahead(w[0], k, ahead_bytes);
    dot_bf16_step<R, false>(acc, a, lda, w, k, 0);
  }
  if (k < kc) {
    prefetch_ahead(w[0], k, ahead_bytes);
    dot_bf16_step<R, true>(acc, a, lda, w, k, __mmask32((1u << (kc - k)) - 1u));
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < kDotRowsW; ++j) _mm512_storeu_ps(lanes + (i * kDotRowsW + j) * 16, acc[i][j]);
}

// bf16 A against fp8 W: 32 bytes of W a step, widened to words; bytes 0..63
// and 64..127 of the table in two pairs of zmm, looked up by vpermt2w on the
// low 7 bits, the sign put back, byte 0x80 (-0, or fnuz's NaN) from its entry.
struct Fp8Table {
  __m512i t0, t1, t2, t3, value_80;
};

__attribute__((target(AITER_TARGET_AVX512), always_inline)) inline Fp8Table load_fp8_table(const uint16_t *table) {
  return {_mm512_loadu_si512(table), _mm512_loadu_si512(table + 32), _mm512_loadu_si512(table + 64),
          _mm512_loadu_si512(table + 96), _mm512_set1_epi16(short(table[128]))};
}

// 32 fp8 bytes (masked) as 32 bf16 words.
__attribute__((target(AITER_TARGET_AVX512), always_inline)) inline __m512i decode_fp8(const Fp8Table &t,
                                                                                   const uint8_t *p, __mmask32 mask) {
  const __m512i byte_80 = _mm512_set1_epi16(0x80);
  const __m512i bytes = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(mask, p));
  const __m512i low = _mm512_permutex2var_epi16(t.t0, bytes, t.t1), high = _mm512_permutex2var_epi16(t.t2, bytes, t.t3);
  __m512i v = _mm512_mask_mov_epi16(low, _mm512_test_epi16_mask(bytes, _mm512_set1_epi16(0x40)), high);
  v = _mm512_or_si512(v, _mm512_slli_epi16(_mm512_and_si512(bytes, byte_80), 8));
  return _mm512_mask_mov_epi16(v, _mm512_cmpeq_epi16_mask(bytes, byte_80), t.value_80);
}

template <int R>
__attribute__((target(AITER_TARGET_BF16))) void dot_fp8(const void *a_v, int64_t lda, const void *const *w_v,
                                                        int64_t kc, void *lanes_v, bool accumulate,
                                                        const uint16_t *table, int64_t ahead_bytes) {
  const uint16_t *a = static_cast<const uint16_t *>(a_v);
  const uint8_t *w[kDotRowsW];
#pragma GCC unroll 8
  for (int j = 0; j < kDotRowsW; ++j) w[j] = static_cast<const uint8_t *>(w_v[j]);
  float *lanes = static_cast<float *>(lanes_v);
  const Fp8Table t = load_fp8_table(table);
  __m512 acc[R][kDotRowsW];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < kDotRowsW; ++j)
      acc[i][j] = accumulate ? _mm512_loadu_ps(lanes + (i * kDotRowsW + j) * 16) : _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; k += 32) {
    const __mmask32 mask = kc - k >= 32 ? __mmask32(~0u) : __mmask32((1u << (kc - k)) - 1u);
    prefetch_ahead(w[0], k, ahead_bytes);
    __m512i av[R];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) av[i] = _mm512_maskz_loadu_epi16(mask, a + i * lda + k);
#pragma GCC unroll 8
    for (int j = 0; j < kDotRowsW; ++j) {
      const __m512i wv = decode_fp8(t, w[j] + k, mask);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)wv, (__m512bh)av[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < kDotRowsW; ++j) _mm512_storeu_ps(lanes + (i * kDotRowsW + j) * 16, acc[i][j]);
}

// int16 A against int8 W, 32 elements a step: W's 32 bytes widened to 32 int16 lanes.
#define AITER_DEFINE_DOT_INT8(NAME, TARGET)                                                                     \
  template <int R, class Op>                                                                                   \
  __attribute__((target(TARGET))) void NAME(const void *a_v, int64_t lda, const void *const *w_v, int64_t kc,  \
                                            void *lanes_v, bool accumulate, const uint16_t *,                  \
                                            int64_t ahead_bytes) {                                             \
    const int16_t *a = static_cast<const int16_t *>(a_v);                                                      \
    const int8_t *w[kDotRowsW];                                                                                \
    _Pragma("GCC unroll 8") for (int j = 0; j < kDotRowsW; ++j) w[j] = static_cast<const int8_t *>(w_v[j]);    \
    int32_t *lanes = static_cast<int32_t *>(lanes_v);                                                          \
    __m512i acc[R][kDotRowsW];                                                                                 \
    _Pragma("GCC unroll 16") for (int i = 0; i < R; ++i)                                                        \
      _Pragma("GCC unroll 8") for (int j = 0; j < kDotRowsW; ++j)                                               \
        acc[i][j] = accumulate ? _mm512_loadu_si512(lanes + (i * kDotRowsW + j) * 16) : _mm512_setzero_si512(); \
    for (int64_t k = 0; k < kc; k += 32) {                                                                     \
      const __mmask32 mask = kc - k >= 32 ? __mmask32(~0u) : __mmask32((1u << (kc - k)) - 1u);                \
      prefetch_ahead(w[0], k, ahead_bytes);                                                                       \
      __m512i av[R];                                                                                           \
      _Pragma("GCC unroll 16") for (int i = 0; i < R; ++i) av[i] = _mm512_maskz_loadu_epi16(mask, a + i * lda + k); \
      _Pragma("GCC unroll 8") for (int j = 0; j < kDotRowsW; ++j) {                                             \
        const __m512i wv = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(mask, w[j] + k));                      \
        _Pragma("GCC unroll 16") for (int i = 0; i < R; ++i) acc[i][j] = Op::dot(acc[i][j], av[i], wv);        \
      }                                                                                                        \
    }                                                                                                          \
    _Pragma("GCC unroll 16") for (int i = 0; i < R; ++i)                                                        \
      _Pragma("GCC unroll 8") for (int j = 0; j < kDotRowsW; ++j)                                               \
        _mm512_storeu_si512(lanes + (i * kDotRowsW + j) * 16, acc[i][j]);                                      \
  }

AITER_DEFINE_DOT_INT8(dot_int8_avx512, AITER_TARGET_AVX512)
AITER_DEFINE_DOT_INT8(dot_int8_vnni, AITER_TARGET_VNNI)

__attribute__((target(AITER_TARGET_AVX512))) void decode_fp8_row_avx512(const uint8_t *src, int64_t n,
                                                                       const uint16_t *table, uint16_t *dst) {
  const Fp8Table t = load_fp8_table(table);
  for (int64_t i = 0; i < n; i += 32) {
    const __mmask32 mask = n - i >= 32 ? __mmask32(~0u) : __mmask32((1u << (n - i)) - 1u);
    _mm512_mask_storeu_epi16(dst + i, mask, decode_fp8(t, src + i, mask));
  }
}

// 16 rows of 16 lanes (rows >= count read as zeros) as 16 vectors of one
// lane each: col[t][o] = row o's lane t.  Lanes within 128-bit quarters by
// unpacks, then the quarters by shuffle_f32x4 (a 4 x 4 transpose of quarters).
__attribute__((target(AITER_TARGET_AVX512))) inline void transpose16(const float *lanes, int count, __m512 (&col)[16]) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int o = 0; o < 16; ++o) r[o] = o < count ? _mm512_loadu_ps(lanes + 16 * o) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {  // per quarter: a0 b0 a1 b1 / a2 b2 a3 b3 of rows 2q, 2q + 1
    t[2 * q] = _mm512_unpacklo_ps(r[2 * q], r[2 * q + 1]);
    t[2 * q + 1] = _mm512_unpackhi_ps(r[2 * q], r[2 * q + 1]);
  }
  __m512 u[16];  // u[4k + e], quarter L: element 4L + e of rows 4k .. 4k + 3
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512d t0 = _mm512_castps_pd(t[4 * k]), t1 = _mm512_castps_pd(t[4 * k + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * k + 2]), t3 = _mm512_castps_pd(t[4 * k + 3]);
    u[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
#pragma GCC unroll 4
  for (int e = 0; e < 4; ++e) {  // col[4L + e] = quarter L of u[e], u[4 + e], u[8 + e], u[12 + e]
    const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44), v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44), v3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xEE);
    col[e] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    col[4 + e] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    col[8 + e] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    col[12 + e] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

__attribute__((target(AITER_TARGET_AVX512))) void add_lanes_avx512(const float *lanes, int count, float *sums) {
  __m512 col[16];
  transpose16(lanes, count, col);
  __m512 s = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int t = 0; t < 16; ++t) s = _mm512_add_ps(s, col[t]);
  _mm512_mask_storeu_ps(sums, __mmask16((1u << count) - 1u), s);
}

__attribute__((target(AITER_TARGET_AVX512))) void add_lanes_avx512(const int32_t *lanes, int count, int32_t *sums) {
  __m512 col[16];
  transpose16(reinterpret_cast<const float *>(lanes), count, col);  // moves bits only
  __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 16
  for (int t = 0; t < 16; ++t) s = _mm512_add_epi32(s, _mm512_castps_si512(col[t]));
  _mm512_mask_storeu_epi32(sums, __mmask16((1u << count) - 1u), s);
}

}  // namespace

void add_lanes(const float *lanes, int count, float *sums) { add_lanes_avx512(lanes, count, sums); }
void add_lanes(const int32_t *lanes, int count, int32_t *sums) { add_lanes_avx512(lanes, count, sums); }

void decode_fp8_row(const uint8_t *src, int64_t n, const uint16_t *table, uint16_t *dst) {
  decode_fp8_row_avx512(src, n, table, dst);
}

DotKernel dot_kernel(Slots slots, int rows, bool vnni, bool fp8_w) {
  static const DotKernel bf16[kDotRowsA] = {dot_bf16<1>, dot_bf16<2>, dot_bf16<3>, dot_bf16<4>};
  static const DotKernel fp8[kDotRowsA] = {dot_fp8<1>, dot_fp8<2>, dot_fp8<3>, dot_fp8<4>};
  static const DotKernel int8_vnni[kDotRowsA] = {dot_int8_vnni<1, Int16Vnni>, dot_int8_vnni<2, Int16Vnni>,
                                                 dot_int8_vnni<3, Int16Vnni>, dot_int8_vnni<4, Int16Vnni>};
  static const DotKernel int8_madd[kDotRowsA] = {dot_int8_avx512<1, Int16Madd>, dot_int8_avx512<2, Int16Madd>,
                                                 dot_int8_avx512<3, Int16Madd>, dot_int8_avx512<4, Int16Madd>};
  switch (slots) {
    case Slots::bf16_pairs: return (fp8_w ? fp8 : bf16)[rows - 1];
    case Slots::int16_pairs: return (vnni ? int8_vnni : int8_madd)[rows - 1];
    default: return nullptr;
  }
}

Kernel kernel(Slots slots, int rows, bool vnni) {
  const size_t i = size_t(rows - 1);
  switch (slots) {
    case Slots::fp32: return panel_avx512_Fp32Fma[i];
    case Slots::bf16_pairs: return panel_bf16_Bf16Dot[i];
    case Slots::int16_pairs: return vnni ? panel_vnni_Int16Vnni[i] : panel_avx512_Int16Madd[i];
    case Slots::int8_quads: return vnni ? panel_vnni_Int8Quads[i] : nullptr;
  }
  return nullptr;
}

void pack_panel(const uint32_t *src, int64_t ld, int rows, int64_t groups, int width, uint32_t *panel) {
  for (int r0 = 0; r0 < width; r0 += 16) {
    const int lanes = width - r0 < 16 ? width - r0 : 16;
    for (int64_t g0 = 0; g0 < groups; g0 += 16) {
      const int count = int(groups - g0 < 16 ? groups - g0 : 16);
      if (count == 16 && lanes == 16 && r0 + 16 <= rows)
        pack_block<true>(src, ld, rows, r0, g0, count, width, lanes, panel);
      else
        pack_block<false>(src, ld, rows, r0, g0, count, width, lanes, panel);
    }
  }
}

#else  // not x86-64: "cpu.avx512" never runs

Kernel kernel(Slots, int, bool) { return nullptr; }
DotKernel dot_kernel(Slots, int, bool, bool) { return nullptr; }
void decode_fp8_row(const uint8_t *, int64_t, const uint16_t *, uint16_t *) {}
void pack_panel(const uint32_t *, int64_t, int, int64_t, int, uint32_t *) {}
void add_lanes(const float *, int, float *) {}
void add_lanes(const int32_t *, int, int32_t *) {}

#endif

}  // namespace avx512
}  // namespace cpu
}  // namespace aiter
