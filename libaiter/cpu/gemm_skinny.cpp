// "cpu.skinny": for a few rows of A (decode steps, M = 1..16), where the
// product is a stream through W.  A is made fp32 once per call (all M rows,
// whole K; blockscale's group scales multiplied in), then the work is split over
// N only, in strips of kStripN rows of W, so that every thread has work even
// when N is a single 128-wide tile.  A strip walks K in blocks of kBlockK,
// converts them into a scratch that stays in L1, and meets all M rows of A in
// the dot-product kernel; every element of W is read from memory once.
#include <algorithm>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/gemm_kernels.hpp"
#include "cpu/gemm_plan.hpp"

namespace aiter {
namespace cpu {
namespace {

using namespace gemm;

constexpr int64_t kStripN = 8;
constexpr int64_t kBlockK = 256;
static_assert(kBlockK <= kMaxExactK, "K blocks: exact int8 sums");

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
  a.copy.resize(size_t(p.batch * p.m * p.k));
  a.row_stride = p.k, a.batch_stride = p.m * p.k;
  parallel_for(p.batch * p.m, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t ld;
      fp32_rows(p.a, row / p.m, row % p.m, 1, 0, p.k, a.copy.data() + row * p.k, p.k, true, &ld);
    }
  });
  a.data = a.copy.data();
  return a;
}

template <class Acc>
struct Skinny {
  static void run(const Plan &p) {
    const Fp32A a = fp32_a(p);
    const int64_t strips = (p.n + kStripN - 1) / kStripN;
    for_each_item(p, strips, [&](int64_t b, int64_t strip) {
      const int64_t n0 = strip * kStripN;
      run_strip(p, a.data + b * a.batch_stride, a.row_stride, b, n0, std::min(kStripN, p.n - n0));
    });
  }

  static void run_strip(const Plan &p, const float *a, int64_t lda, int64_t b, int64_t n0, int64_t cols) {
    thread_local std::vector<float> w_scratch(size_t(kStripN * kBlockK));
    thread_local std::vector<Acc> acc;
    acc.assign(size_t(p.m * kStripN), Acc(0));
    for (int64_t k0 = 0; k0 < p.k; k0 += kBlockK) {
      const int64_t kc = std::min(kBlockK, p.k - k0);
      int64_t ldw;
      const float *w = fp32_rows(p.w, b, n0, cols, k0, kc, w_scratch.data(), kBlockK, true, &ldw);
      dot_tile(a + k0, lda, p.m, w, ldw, cols, kc, acc.data(), kStripN);
    }
    store_tile(p, b, 0, p.m, n0, cols, acc.data(), kStripN);
  }
};

}  // namespace

aiter_status gemm_skinny(const GemmArgs &g, const GpuCall *) { return run_with_acc<Skinny>(g); }

}  // namespace cpu
}  // namespace aiter
