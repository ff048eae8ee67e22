// CPU GEMM: out[M, N] = A[M, K] . W[N, K]^T, scaled and biased at the store.
//
// The output is cut into tiles of kTileM x kTileN, one thread each, so that no
// element has two writers and no accumulator is shared.  A tile walks K in
// blocks of kBlockK: the block's rows of A and of W are made fp32 (fp32 input is
// read in place, other dtypes are converted into per-thread scratch), then every
// group of kRowsA rows of A meets every group of kRowsW rows of W in a
// register-blocked dot-product kernel.  Both operands run contiguously along K,
// so nothing needs transposing.  Block sums go into the tile's accumulator, fp32
// or, for int8, int64 (a block sum of int8 products is an integer below 2^24, so
// fp32 computes it exactly).  The store scales, adds the bias and rounds once.
#include <algorithm>
#include <array>
#include <iterator>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/parallel.hpp"
#include "ops/gemm.hpp"

namespace aiter {
namespace cpu {
namespace {

constexpr int kRowsA = 3;  // rows of A per kernel call
constexpr int kRowsW = 4;  // rows of W per kernel call
constexpr int64_t kTileM = 32 * kRowsA;
constexpr int64_t kTileN = 32 * kRowsW;
constexpr int64_t kBlockK = 512;
static_assert(kBlockK * 128 * 128 <= (int64_t(1) << 24), "int8 block sums must stay exact in fp32");

// ---- the kernel ------------------------------------------------------------
// sums[i][j] = dot(a row i, w row j) over kc elements, for R rows of A and C
// rows of W.  Each pair of rows keeps L partial sums (one per lane, the k % L
// classes), added up at the end: the summation order is fixed and needs no
// fast-math.  The partial sums are GCC vector types because plain float arrays
// end up on the stack (gcc vectorizes them, but loads and stores them each step).
template <int L>
struct Lanes {
  typedef float type __attribute__((vector_size(L * sizeof(float))));
};

using BlockKernel = void (*)(const float *a, int64_t lda, const float *w, int64_t ldw, int64_t kc,
                             float *sums);

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

// The same kernel compiled for the baseline ISA and, on x86-64, for AVX2 + FMA;
// the library is built for the baseline, so the faster one is picked at run time.
struct Baseline {
  template <int R, int C>
  static void block(const float *a, int64_t lda, const float *w, int64_t ldw, int64_t kc, float *sums) {
    dot_block<R, C, 4>(a, lda, w, ldw, kc, sums);
  }
};

#if defined(__GNUC__) && defined(__x86_64__)
#define AITER_GEMM_AVX2 1
struct Avx2 {
  template <int R, int C>
  __attribute__((target("avx2,fma"))) static void block(const float *a, int64_t lda, const float *w, int64_t ldw,
                                                         int64_t kc, float *sums) {
    dot_block<R, C, 8>(a, lda, w, ldw, kc, sums);
  }
};
#endif

// table[(R - 1) * kRowsW + (C - 1)] is the kernel for R rows of A and C of W.
using KernelTable = std::array<BlockKernel, kRowsA * kRowsW>;

template <class Isa, int... I>
constexpr KernelTable make_table(std::integer_sequence<int, I...>) {
  return {{&Isa::template block<I / kRowsW + 1, I % kRowsW + 1>...}};
}

const KernelTable &kernels() {
  static const KernelTable baseline = make_table<Baseline>(std::make_integer_sequence<int, kRowsA * kRowsW>{});
#ifdef AITER_GEMM_AVX2
  static const KernelTable avx2 = make_table<Avx2>(std::make_integer_sequence<int, kRowsA * kRowsW>{});
  // AITER_CPU_ISA=baseline forces the portable kernel (to test it on any machine).
  static const bool use_avx2 = [] {
    const char *isa = std::getenv("AITER_CPU_ISA");
    if (isa != nullptr && std::strcmp(isa, "baseline") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  if (use_avx2) return avx2;
#endif
  return baseline;
}

// ---- operands as fp32 rows ------------------------------------------------------
// fp16 to fp32 with bit masks instead of branches, so that gcc vectorizes whole
// rows (the library's to_f32(half_t) is out of line and branches): normal
// numbers only need their exponent rebiased, inf / NaN get the top exponent,
// subnormals are their mantissa times 2^-24 (an exact int-to-float conversion).
inline float half_to_f32(uint16_t h) {
  const uint32_t magnitude = h & 0x7fffu;
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t special = 0u - uint32_t(magnitude >= 0x7c00u);  // all ones for inf / NaN
  const uint32_t normal = (magnitude << 13) + (112u << 23) + (special & (112u << 23));
  const uint32_t subnormal = f32_to_bits(float(int32_t(magnitude)) * 0x1p-24f);
  const uint32_t is_normal = 0u - uint32_t(magnitude >= 0x400u);
  return bits_to_f32((normal & is_normal) | (subnormal & ~is_normal) | sign);
}

inline float element_to_f32(int8_t x) { return float(x); }
inline float element_to_f32(half_t x) { return half_to_f32(x.bits); }
template <class T>
inline float element_to_f32(T x) { return to_f32(x); }

using RowConverter = void (*)(const void *src, int64_t n, float *dst);

template <class T>
void convert_row(const void *src, int64_t n, float *dst) {
  const T *s = static_cast<const T *>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = element_to_f32(s[i]);
}

RowConverter converter_for(DType dt) {
  switch (dt) {
    case DType::f16: return convert_row<half_t>;
    case DType::bf16: return convert_row<bf16_t>;
    case DType::i8: return convert_row<int8_t>;
    case DType::e4m3fn: return convert_row<e4m3fn_t>;
    case DType::e4m3fnuz: return convert_row<e4m3fnuz_t>;
    case DType::e5m2: return convert_row<e5m2_t>;
    default: return nullptr;  // fp32: read in place
  }
}

// A or W: rows of K elements, converted to fp32 block by block (or not at all).
struct Operand {
  const char *data;
  int64_t row_bytes;   // distance between rows
  int64_t elem_bytes;
  RowConverter convert;  // null for fp32
};

Operand operand(const MatrixRef &m, DType dt) {
  const int64_t size = dtype_size(dt);
  return Operand{static_cast<const char *>(m.data), m.row_stride * size, size, converter_for(dt)};
}

// Rows [row0, row0 + rows) and columns [k0, k0 + kc) of `op` as fp32 rows `*ld`
// floats apart: the operand itself when it is fp32, else a copy in `scratch`.
const float *fp32_rows(const Operand &op, int64_t row0, int64_t rows, int64_t k0, int64_t kc, float *scratch,
                       int64_t *ld) {
  const char *first = op.data + row0 * op.row_bytes + k0 * op.elem_bytes;
  if (op.convert == nullptr) {
    *ld = op.row_bytes / int64_t(sizeof(float));
    return reinterpret_cast<const float *>(first);
  }
  *ld = kBlockK;
  for (int64_t r = 0; r < rows; ++r) op.convert(first + r * op.row_bytes, kc, scratch + r * kBlockK);
  return scratch;
}

// ---- tiles ---------------------------------------------------------------------
struct Plan {
  int64_t m, n, k;
  Operand a, w;
  const KernelTable *kernels;
  void *out;
  int64_t out_row_stride;
  const float *bias;  // fp32 copy, or null
  const float *a_scale;
  int64_t a_scale_step;  // 1 per token, 0 per tensor
  const float *w_scale;
  int64_t w_scale_step;
};

// One thread's buffers, kept between calls so that small GEMMs do not pay for
// fresh pages every time.
template <class Acc>
struct Scratch {
  std::vector<float> a = std::vector<float>(size_t(kTileM * kBlockK));
  std::vector<float> w = std::vector<float>(size_t(kTileN * kBlockK));
  std::vector<Acc> acc = std::vector<Acc>(size_t(kTileM * kTileN));
};

template <class Acc>
Scratch<Acc> &scratch() {
  thread_local Scratch<Acc> s;
  return s;
}

struct Tile {
  int64_t m0, rows, n0, cols;
};

// acc[i * kTileN + j] += A[m0 + i, :] . W[n0 + j, :] over all of K.
template <class Acc>
void accumulate_tile(const Plan &p, const Tile &t, Scratch<Acc> &s) {
  std::fill(s.acc.begin(), s.acc.begin() + t.rows * kTileN, Acc(0));
  for (int64_t k0 = 0; k0 < p.k; k0 += kBlockK) {
    const int64_t kc = std::min(kBlockK, p.k - k0);
    int64_t lda, ldw;
    const float *a = fp32_rows(p.a, t.m0, t.rows, k0, kc, s.a.data(), &lda);
    const float *w = fp32_rows(p.w, t.n0, t.cols, k0, kc, s.w.data(), &ldw);
    for (int64_t j = 0; j < t.cols; j += kRowsW) {
      const int c = int(std::min<int64_t>(kRowsW, t.cols - j));
      for (int64_t i = 0; i < t.rows; i += kRowsA) {
        const int r = int(std::min<int64_t>(kRowsA, t.rows - i));
        float sums[kRowsA * kRowsW];
        (*p.kernels)[size_t((r - 1) * kRowsW + (c - 1))](a + i * lda, lda, w + j * ldw, ldw, kc, sums);
        for (int ii = 0; ii < r; ++ii)
          for (int jj = 0; jj < c; ++jj) s.acc[size_t((i + ii) * kTileN + j + jj)] += Acc(sums[ii * kRowsW + jj]);
      }
    }
  }
}

// out = acc * a_scale * w_scale + bias, in fp32, rounded once to O.
template <class O, class Acc>
void store_tile(const Plan &p, const Tile &t, const Acc *acc) {
  for (int64_t i = 0; i < t.rows; ++i) {
    const int64_t m = t.m0 + i;
    O *out = static_cast<O *>(p.out) + m * p.out_row_stride + t.n0;
    const float a_scale = p.a_scale ? p.a_scale[m * p.a_scale_step] : 1.0f;
    for (int64_t j = 0; j < t.cols; ++j) {
      const int64_t n = t.n0 + j;
      float v = float(acc[i * kTileN + j]);
      if (p.w_scale) v = v * a_scale * p.w_scale[n * p.w_scale_step];
      if (p.bias) v += p.bias[n];
      out[j] = from_f32<O>(v);
    }
  }
}

template <class O, class Acc>
void run_tiles(const Plan &p) {
  const int64_t tiles_m = (p.m + kTileM - 1) / kTileM;
  const int64_t tiles_n = (p.n + kTileN - 1) / kTileN;
  // Neighbouring tiles share their rows of W, the bigger operand in inference.
  parallel_for(tiles_m * tiles_n, 1, [&](int64_t begin, int64_t end) {
    Scratch<Acc> &s = scratch<Acc>();
    for (int64_t index = begin; index < end; ++index) {
      Tile t;
      t.m0 = (index % tiles_m) * kTileM;
      t.n0 = (index / tiles_m) * kTileN;
      t.rows = std::min(kTileM, p.m - t.m0);
      t.cols = std::min(kTileN, p.n - t.n0);
      accumulate_tile(p, t, s);
      store_tile<O>(p, t, s.acc.data());
    }
  });
}

std::vector<float> bias_f32(const GemmArgs &g) {
  std::vector<float> bias;
  if (g.bias == nullptr) return bias;
  bias.resize(size_t(g.n));
  visit_float(g.bias_dtype, [&](auto tag) {
    const auto *b = static_cast<const decltype(tag) *>(g.bias);
    for (int64_t i = 0; i < g.n; ++i) bias[size_t(i)] = to_f32(b[i]);
  });
  return bias;
}

}  // namespace

aiter_status gemm_tiled(const GemmArgs &g, const GpuCall *) {
  if (g.m == 0 || g.n == 0) return AITER_OK;
  const std::vector<float> bias = bias_f32(g);
  Plan p{};
  p.m = g.m, p.n = g.n, p.k = g.k;
  p.a = operand(g.a, g.in_dtype);
  p.w = operand(g.w, g.in_dtype);
  p.kernels = &kernels();
  p.out = g.out;
  p.out_row_stride = g.out_row_stride;
  p.bias = bias.empty() ? nullptr : bias.data();
  p.a_scale = g.a_scale, p.a_scale_step = g.a_scale_per_token ? 1 : 0;
  p.w_scale = g.w_scale, p.w_scale_step = g.w_scale_per_channel ? 1 : 0;
  visit_float(g.out_dtype, [&](auto tag) {
    using O = decltype(tag);
    if (g.in_dtype == DType::i8)
      run_tiles<O, int64_t>(p);
    else
      run_tiles<O, float>(p);
  });
  return AITER_OK;
}

namespace {
bool plain(const GemmArgs &g, const GpuCall *) { return g.batch == 1 && !g.block_scaled; }

const Variant<GemmArgs> kPlainVariants[] = {{"cpu.tiled", plain, nullptr, gemm_tiled}};
}  // namespace

VariantList<GemmArgs> gemm_variants(GemmOp op) {
  switch (op) {
    case GemmOp::a16w16:
    case GemmOp::a8w8: return {kPlainVariants, std::size(kPlainVariants)};
    default: return {};
  }
}

}  // namespace cpu
}  // namespace aiter
