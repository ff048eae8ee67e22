// "cpu.tiled": the output cut into tiles of kTileM x kTileN, one thread each.
// A tile walks K in blocks of kBlockK: the block's rows of A and of W are made
// fp32 (fp32 input is read in place, other dtypes are converted into per-thread
// scratch, with blockscale's group scales multiplied in), then every group of 3
// rows of A meets every group of 4 rows of W in the dot-product kernel.  Both
// operands run contiguously along K, so nothing needs transposing.
#include <algorithm>
#include <vector>

#include "cpu/gemm_kernels.hpp"
#include "cpu/gemm_plan.hpp"

namespace aiter {
namespace cpu {
namespace {

using namespace gemm;

constexpr int64_t kTileM = 96;
constexpr int64_t kTileN = 128;
constexpr int64_t kBlockK = 512;
static_assert(kBlockK <= kMaxExactK && kBlockK % kScaleBlock == 0, "K blocks: exact int8 sums, whole groups");

// One thread's buffers, kept between calls so that small GEMMs do not pay for
// fresh pages every time.
template <class Acc>
struct Scratch {
  std::vector<float> a = std::vector<float>(size_t(kTileM * kBlockK));
  std::vector<float> w = std::vector<float>(size_t(kTileN * kBlockK));
  std::vector<Acc> acc = std::vector<Acc>(size_t(kTileM * kTileN));
};

template <class Acc>
struct Tiled {
  static void run(const Plan &p) { for_each_tile(p, kTileM, kTileN, run_tile); }

  static void run_tile(const Plan &p, int64_t b, int64_t m0, int64_t rows, int64_t n0, int64_t cols) {
    thread_local Scratch<Acc> s;
    std::fill(s.acc.begin(), s.acc.begin() + rows * kTileN, Acc(0));
    for (int64_t k0 = 0; k0 < p.k; k0 += kBlockK) {
      const int64_t kc = std::min(kBlockK, p.k - k0);
      int64_t lda, ldw;
      const float *a = fp32_rows(p.a, b, m0, rows, k0, kc, s.a.data(), kBlockK, true, &lda);
      const float *w = fp32_rows(p.w, b, n0, cols, k0, kc, s.w.data(), kBlockK, true, &ldw);
      dot_tile(a, lda, rows, w, ldw, cols, kc, s.acc.data(), kTileN);
    }
    store_tile(p, b, m0, rows, n0, cols, s.acc.data(), kTileN);
  }
};

}  // namespace

aiter_status gemm_tiled(const GemmArgs &g, const GpuCall *) { return run_with_acc<Tiled>(g); }

}  // namespace cpu
}  // namespace aiter
