// "cpu.skinny": for a few rows of A (decode steps), where the product is a
// stream through W.  A is made fp32 once per call (all M rows, whole K;
// blockscale's group scales multiplied in), then the work is split over N
// only, in strips of kStripN rows of W, so that every thread has work even when
// N is a single 128-wide tile.  A strip walks K in blocks of kBlockK and meets
// all M rows of A in the skinny kernel.  With one group of rows of A (M <= 3)
// the kernel reads W in its own dtype (fp32, bf16, int8) and converts it in
// registers; otherwise, and for fp16 and fp8, each block of the strip's W rows
// is converted into a scratch that stays in L1.  Either way each element of W
// is read from memory once and converted once.
#include <algorithm>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/gemm_kernels.hpp"
#include "cpu/gemm_plan.hpp"

namespace aiter {
namespace cpu {
namespace {

using namespace gemm;

constexpr int64_t kStripN = 2 * kSkinnyRowsW;
constexpr int64_t kBlockK = 512;
constexpr int64_t kRowPad = 16;  // floats
static_assert(kBlockK <= kMaxExactK && kBlockK % kScaleBlock == 0, "K blocks: exact int8 sums, whole groups");

// Every row of A as fp32: the operand itself, or a converted copy.
struct Fp32A {
  std::vector<float> copy;
  const float *data;
  int64_t row_stride, batch_stride;  // floats
};

Fp32A fp32_a(const Plan &p) {
  Fp32A a;
  if (p.a.convert == nullptr) {
    a.data = reinterpret_cast<const float *>(p.a.data);
    a.row_stride = p.a.row_bytes / int64_t(sizeof(float));
    a.batch_stride = p.a.batch_bytes / int64_t(sizeof(float));
    return a;
  }
  // Rows a cache line longer than K: rows a multiple of 4 KB apart would all
  // fall into the same few L1 sets.
  a.row_stride = p.k + kRowPad, a.batch_stride = p.m * a.row_stride;
  a.copy.resize(size_t(p.batch * a.batch_stride));
  parallel_for(p.batch * p.m, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t ld;
      fp32_rows(p.a, row / p.m, row % p.m, 1, 0, p.k, a.copy.data() + row * a.row_stride, a.row_stride, true, &ld);
    }
  });
  a.data = a.copy.data();
  return a;
}

// The skinny kernels for 1..kSkinnyRowsA rows of A, and the dtype they read W in.
struct Kernels {
  SkinnyKernel by_rows[kSkinnyRowsA];
  bool converts_w;  // W read in its own dtype; else converted to fp32 first
};

// In-register conversion pays once per group of rows of A: with more than
// one group, a converted block in L1 serves them all for less.
Kernels kernels_for(DType w_dtype, int64_t m) {
  Kernels k;
  k.converts_w = m <= kSkinnyRowsA && skinny_kernel(w_dtype, 1) != nullptr;
  for (int r = 1; r <= kSkinnyRowsA; ++r) k.by_rows[r - 1] = skinny_kernel(k.converts_w ? w_dtype : DType::f32, r);
  return k;
}

template <class Acc>
struct Skinny {
  static void run(const Plan &p) {
    const Fp32A a = fp32_a(p);
    const Kernels kernels = kernels_for(p.w.dtype, p.m);
    const int64_t strips = (p.n + kStripN - 1) / kStripN;
    for_each_item(p, strips, [&](int64_t b, int64_t strip) {
      const int64_t n0 = strip * kStripN;
      run_strip(p, kernels, a.data + b * a.batch_stride, a.row_stride, b, n0, std::min(kStripN, p.n - n0));
    });
  }

  static void run_strip(const Plan &p, const Kernels &kernels, const float *a, int64_t lda, int64_t b, int64_t n0,
                        int64_t cols) {
    thread_local std::vector<float> w_scratch(size_t(kStripN * kBlockK));
    thread_local std::vector<Acc> acc;
    acc.assign(size_t(p.m * kStripN), Acc(0));
    for (int64_t k0 = 0; k0 < p.k; k0 += kBlockK) {
      const int64_t kc = std::min(kBlockK, p.k - k0);
      const void *w_rows[kStripN];  // at column k0
      if (kernels.converts_w) {
        for (int64_t j = 0; j < cols; ++j) w_rows[j] = p.w.row(b, n0 + j) + k0 * p.w.elem_bytes;
      } else {
        int64_t ldw;
        const float *w = fp32_rows(p.w, b, n0, cols, k0, kc, w_scratch.data(), kBlockK, true, &ldw);
        for (int64_t j = 0; j < cols; ++j) w_rows[j] = w + j * ldw;
      }
      for (int64_t j0 = 0; j0 < cols; j0 += kSkinnyRowsW)
        add_block(p.m, kernels, a + k0, lda, w_rows, j0, cols, kc, acc.data());
    }
    store_tile(p, b, 0, p.m, n0, cols, acc.data(), kStripN);
  }

  // acc[i][j0 + j] += dot(A row i, W row j0 + j) for every row i of A and the
  // (up to) kSkinnyRowsW rows of W from j0; the last row repeats past `cols`.
  // The rows of A go in groups of as even a size as possible (4 rows: 2 + 2,
  // not 3 + 1), each group reading the block of W once.
  static void add_block(int64_t m, const Kernels &kernels, const float *a, int64_t lda, const void *const *w_rows,
                        int64_t j0, int64_t cols, int64_t kc, Acc *acc) {
    const int64_t c = std::min<int64_t>(kSkinnyRowsW, cols - j0);
    const void *block[kSkinnyRowsW];
    for (int64_t j = 0; j < kSkinnyRowsW; ++j) block[j] = w_rows[j0 + std::min(j, c - 1)];
    const int64_t groups = (m + kSkinnyRowsA - 1) / kSkinnyRowsA;
    for (int64_t g = 0, i0 = 0; g < groups; ++g) {
      const int64_t r = m / groups + (g < m % groups ? 1 : 0);
      float sums[kSkinnyRowsA * kSkinnyRowsW];
      kernels.by_rows[r - 1](a + i0 * lda, lda, block, kc, sums);
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j) acc[(i0 + i) * kStripN + j0 + j] += Acc(sums[i * kSkinnyRowsW + j]);
      i0 += r;
    }
  }
};

}  // namespace

aiter_status gemm_skinny(const GemmArgs &g, const GpuCall *) { return run_with_acc<Skinny>(g); }

}  // namespace cpu
}  // namespace aiter
