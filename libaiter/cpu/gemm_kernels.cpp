#include "cpu/gemm_kernels.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cpu/gemm_plan.hpp"
#include "cpu/isa.hpp"

namespace aiter {
namespace cpu {
namespace gemm {
namespace {

// The partial sums are GCC vector types because plain float arrays end up on
// the stack (gcc vectorizes them, but loads and stores them each step).
template <int L>
struct Lanes {
  typedef float type __attribute__((vector_size(L * sizeof(float))));
};

// ---- dot-product kernel ------------------------------------------------------------
constexpr int kRowsA = 3;  // rows of A per kernel call
constexpr int kRowsW = 4;  // rows of W per kernel call

using DotKernel = void (*)(const float *a, int64_t lda, const float *w, int64_t ldw, int64_t kc, float *sums);

// sums[i * kRowsW + j] = dot(a row i, w row j) over kc elements, for R rows of A
// and C rows of W, with L partial sums per pair (the k % L classes).
template <int R, int C, int L>
__attribute__((always_inline)) inline void dot_block(const float *a, int64_t lda, const float *w, int64_t ldw,
                                                     int64_t kc, float *sums) {
  using V = typename Lanes<L>::type;
  V acc[R][C] = {};
  int64_t k = 0;
  for (; k + L <= kc; k += L) {
    V av[R], wv[C];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) std::memcpy(&av[i], a + i * lda + k, sizeof(V));  // unaligned loads
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) std::memcpy(&wv[j], w + j * ldw + k, sizeof(V));
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) acc[i][j] += av[i] * wv[j];
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      float s = 0.0f;
      for (int l = 0; l < L; ++l) s += acc[i][j][l];
      for (int64_t t = k; t < kc; ++t) s += a[i * lda + t] * w[j * ldw + t];
      sums[i * kRowsW + j] = s;
    }
}

// ---- outer-product kernel on packed panels ------------------------------------------
// kPanelA x kPanelW sums in kPanelA * kPanelW / L vector registers: with AVX2,
// 12 accumulators + 2 W vectors + 1 broadcast A value of the 16 registers.
template <int L>
__attribute__((always_inline)) inline void panel_block(const float *a_panel, const float *w_panel, int64_t kc,
                                                       float *sums) {
  using V = typename Lanes<L>::type;
  constexpr int kVectors = kPanelW / L;
  V acc[kPanelA][kVectors] = {};
  for (int64_t k = 0; k < kc; ++k) {
    V wv[kVectors];
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) std::memcpy(&wv[v], w_panel + k * kPanelW + v * L, sizeof(V));
#pragma GCC unroll 8
    for (int i = 0; i < kPanelA; ++i) {
      const float x = a_panel[k * kPanelA + i];
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) acc[i][v] += wv[v] * x;
    }
  }
  for (int i = 0; i < kPanelA; ++i)
    for (int v = 0; v < kVectors; ++v) std::memcpy(sums + i * kPanelW + v * L, &acc[i][v], sizeof(V));
}

// ---- skinny kernel: W converted in registers ---------------------------------------------
template <class E, int L>
struct Vec {
  typedef E type __attribute__((vector_size(L * sizeof(E))));
};

// Fp32Lanes<T, L>::load(p, v): L elements of T at p as L fp32 lanes (an out
// parameter: vector return values would change the ABI of the baseline build).
template <class T, int L>
struct Fp32Lanes;

template <int L>
struct Fp32Lanes<float, L> {
  using V = typename Lanes<L>::type;
  __attribute__((always_inline)) static void load(const float *p, V &v) { std::memcpy(&v, p, sizeof(V)); }
  static float scalar(float x) { return x; }
};

template <int L>
struct Fp32Lanes<bf16_t, L> {  // bf16 is the top half of an fp32
  using V = typename Lanes<L>::type;
  using Half = typename Vec<uint16_t, L>::type;
  using Word = typename Vec<uint32_t, L>::type;
  __attribute__((always_inline)) static void load(const bf16_t *p, V &v) {
    Half h;
    std::memcpy(&h, p, sizeof(Half));
    const Word u = __builtin_convertvector(h, Word) << 16;
    std::memcpy(&v, &u, sizeof(V));
  }
  static float scalar(bf16_t x) { return to_f32(x); }
};

template <int L>
struct Fp32Lanes<int8_t, L> {
  using V = typename Lanes<L>::type;
  using Bytes = typename Vec<int8_t, L>::type;
  using Shorts = typename Vec<int16_t, L>::type;
  using Ints = typename Vec<int32_t, L>::type;
  __attribute__((always_inline)) static void load(const int8_t *p, V &v) {
    Bytes b;
    std::memcpy(&b, p, sizeof(Bytes));
    // Widened step by step: gcc 12 turns a direct int8 -> int32 or -> float
    // conversion into one scalar conversion per lane.
    v = __builtin_convertvector(__builtin_convertvector(__builtin_convertvector(b, Shorts), Ints), V);
  }
  static float scalar(int8_t x) { return float(x); }
};

template <int R, class T, int L>
__attribute__((always_inline)) inline void skinny_block(const float *a, int64_t lda, const void *const *w_rows,
                                                        int64_t kc, float *sums) {
  using V = typename Lanes<L>::type;
  using Load = Fp32Lanes<T, L>;
  constexpr int C = kSkinnyRowsW;
  const T *w[C];
  for (int j = 0; j < C; ++j) w[j] = static_cast<const T *>(w_rows[j]);
  V acc[R][C] = {};
  int64_t k = 0;
  for (; k + L <= kc; k += L) {
    V av[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) std::memcpy(&av[i], a + i * lda + k, sizeof(V));
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      V wv;
      Load::load(w[j] + k, wv);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i][j] += av[i] * wv;
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) {
      float s = 0.0f;
      for (int l = 0; l < L; ++l) s += acc[i][j][l];
      for (int64_t t = k; t < kc; ++t) s += a[i * lda + t] * Load::scalar(w[j][t]);
      sums[i * C + j] = s;
    }
}

// ---- the ISAs --------------------------------------------------------------------------
struct Baseline {
  template <int R, int C>
  static void dot(const float *a, int64_t lda, const float *w, int64_t ldw, int64_t kc, float *sums) {
    dot_block<R, C, 4>(a, lda, w, ldw, kc, sums);
  }
  static void panel(const float *a_panel, const float *w_panel, int64_t kc, float *sums) {
    panel_block<4>(a_panel, w_panel, kc, sums);
  }
  template <int R, class T>
  static void skinny(const float *a, int64_t lda, const void *const *w_rows, int64_t kc, float *sums) {
    skinny_block<R, T, 4>(a, lda, w_rows, kc, sums);
  }
};

#if defined(__GNUC__) && defined(__x86_64__)
#define AITER_GEMM_AVX2 1
struct Avx2 {
  template <int R, int C>
  __attribute__((target("avx2,fma"))) static void dot(const float *a, int64_t lda, const float *w, int64_t ldw,
                                                       int64_t kc, float *sums) {
    dot_block<R, C, 8>(a, lda, w, ldw, kc, sums);
  }
  __attribute__((target("avx2,fma"))) static void panel(const float *a_panel, const float *w_panel, int64_t kc,
                                                        float *sums) {
    panel_block<8>(a_panel, w_panel, kc, sums);
  }
  template <int R, class T>
  __attribute__((target("avx2,fma"))) static void skinny(const float *a, int64_t lda, const void *const *w_rows,
                                                          int64_t kc, float *sums) {
    skinny_block<R, T, 8>(a, lda, w_rows, kc, sums);
  }
};

bool use_avx2() { return isa_at_least(Isa::avx2); }
#endif

// table[(R - 1) * kRowsW + (C - 1)] is the dot kernel for R rows of A and C of W.
using DotTable = std::array<DotKernel, kRowsA * kRowsW>;

template <class Isa, int... I>
constexpr DotTable make_table(std::integer_sequence<int, I...>) {
  return {{&Isa::template dot<I / kRowsW + 1, I % kRowsW + 1>...}};
}

const DotTable &dot_kernels() {
  static const DotTable baseline = make_table<Baseline>(std::make_integer_sequence<int, kRowsA * kRowsW>{});
#ifdef AITER_GEMM_AVX2
  static const DotTable avx2 = make_table<Avx2>(std::make_integer_sequence<int, kRowsA * kRowsW>{});
  if (use_avx2()) return avx2;
#endif
  return baseline;
}

}  // namespace

template <class Acc>
void dot_tile(const float *a, int64_t lda, int64_t rows, const float *w, int64_t ldw, int64_t cols, int64_t kc,
              Acc *acc, int64_t ld_acc) {
  const DotTable &kernels = dot_kernels();
  for (int64_t j = 0; j < cols; j += kRowsW) {
    const int c = int(std::min<int64_t>(kRowsW, cols - j));
    for (int64_t i = 0; i < rows; i += kRowsA) {
      const int r = int(std::min<int64_t>(kRowsA, rows - i));
      float sums[kRowsA * kRowsW];
      kernels[size_t((r - 1) * kRowsW + (c - 1))](a + i * lda, lda, w + j * ldw, ldw, kc, sums);
      for (int ii = 0; ii < r; ++ii)
        for (int jj = 0; jj < c; ++jj) acc[(i + ii) * ld_acc + j + jj] += Acc(sums[ii * kRowsW + jj]);
    }
  }
}

template void dot_tile(const float *, int64_t, int64_t, const float *, int64_t, int64_t, int64_t, float *, int64_t);
template void dot_tile(const float *, int64_t, int64_t, const float *, int64_t, int64_t, int64_t, int64_t *,
                       int64_t);

namespace {

// table[R - 1]: the skinny kernel for R rows of A.
using SkinnyTable = std::array<SkinnyKernel, kSkinnyRowsA>;

template <class Isa, class T, int... I>
constexpr SkinnyTable make_skinny_table(std::integer_sequence<int, I...>) {
  return {{&Isa::template skinny<I + 1, T>...}};
}

template <class T>
const SkinnyTable &skinny_kernels() {
  static const SkinnyTable baseline =
      make_skinny_table<Baseline, T>(std::make_integer_sequence<int, kSkinnyRowsA>{});
#ifdef AITER_GEMM_AVX2
  static const SkinnyTable avx2 = make_skinny_table<Avx2, T>(std::make_integer_sequence<int, kSkinnyRowsA>{});
  if (use_avx2()) return avx2;
#endif
  return baseline;
}

}  // namespace

SkinnyKernel skinny_kernel(DType w_dtype, int rows) {
  switch (w_dtype) {
    case DType::f32: return skinny_kernels<float>()[size_t(rows - 1)];
    case DType::bf16: return skinny_kernels<bf16_t>()[size_t(rows - 1)];
    case DType::i8: return skinny_kernels<int8_t>()[size_t(rows - 1)];
    default: return nullptr;
  }
}

PanelKernel panel_kernel() {
#ifdef AITER_GEMM_AVX2
  if (use_avx2()) return Avx2::panel;
#endif
  return Baseline::panel;
}

}  // namespace gemm
}  // namespace cpu
}  // namespace aiter
