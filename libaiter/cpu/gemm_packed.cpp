// "cpu.packed": the GotoBLAS / BLIS layout.  Tiles of kTileM x kTileN, one
// thread each, as in cpu.tiled; but per K block the tile's rows of A are packed
// into panels of kPanelA rows and its rows of W into panels of kPanelW rows,
// interleaved along K, so that the outer-product kernel reads both with unit
// stride and keeps a 6 x 16 block of sums in registers with no reduction across
// lanes at the end.  A W panel (16 KB) stays in L1 while the tile's A panels
// stream past it from L2.  Rows past the edge of the matrix are zeros in the
// panels and are not stored.
//
// Blockscale runs the kernel once per 128-wide K group and multiplies that
// group's sums by a_scale[m, g] * w_scale[n / 128, g] before adding them up.
#include <algorithm>
#include <vector>

#include "cpu/gemm_kernels.hpp"
#include "cpu/gemm_plan.hpp"

namespace aiter {
namespace cpu {
namespace {

using namespace gemm;

constexpr int64_t kTileM = 16 * kPanelA;
constexpr int64_t kTileN = 8 * kPanelW;
constexpr int64_t kBlockK = 256;
static_assert(kBlockK <= kMaxExactK && kBlockK % kScaleBlock == 0, "K blocks: exact int8 sums, whole groups");

// Rows [row0, row0 + rows) and columns [k0, k0 + kc) of matrix b of `op` as
// panels of R rows, each R * kc floats, one after the other: panel p holds
// element k of its row r at [k * R + r], zeros for rows past the end.  Each
// row is converted into `row` (in L1) on the way, unless it is fp32 already.
template <int R>
void pack_panels(const Operand &op, int64_t b, int64_t row0, int64_t rows, int64_t k0, int64_t kc, float *row,
                 float *panels) {
  for (int64_t p0 = 0; p0 < rows; p0 += R) {
    float *panel = panels + p0 * kc;
    const int64_t valid = std::min<int64_t>(R, rows - p0);
    for (int64_t r = 0; r < valid; ++r) {
      int64_t ld;
      const float *src = fp32_rows(op, b, row0 + p0 + r, 1, k0, kc, row, kBlockK, false, &ld);
      for (int64_t k = 0; k < kc; ++k) panel[k * R + r] = src[k];
    }
    for (int64_t r = valid; r < R; ++r)
      for (int64_t k = 0; k < kc; ++k) panel[k * R + r] = 0.0f;
  }
}

template <class Acc>
struct Scratch {
  std::vector<float> row = std::vector<float>(size_t(kBlockK));  // one converted row
  std::vector<float> a_panels = std::vector<float>(size_t(kTileM * kBlockK));
  std::vector<float> w_panels = std::vector<float>(size_t(kTileN * kBlockK));
  std::vector<Acc> acc = std::vector<Acc>(size_t(kTileM * kTileN));
};

// The part of a tile one kernel call computes: panel rows of A and W.
struct Block {
  int64_t i0, rows;  // within the tile
  int64_t j0, cols;
};

template <class Acc>
struct Packed {
  static void run(const Plan &p) { for_each_tile(p, kTileM, kTileN, run_tile); }

  static void run_tile(const Plan &p, int64_t b, int64_t m0, int64_t rows, int64_t n0, int64_t cols) {
    thread_local Scratch<Acc> s;
    const PanelKernel kernel = panel_kernel();
    std::fill(s.acc.begin(), s.acc.begin() + rows * kTileN, Acc(0));
    // Blockscale: one kernel call per K group, so that each group's sums get their scales.
    const int64_t segment = p.block_scaled() ? kScaleBlock : kBlockK;
    for (int64_t k0 = 0; k0 < p.k; k0 += kBlockK) {
      const int64_t kc = std::min(kBlockK, p.k - k0);
      pack_panels<kPanelA>(p.a, b, m0, rows, k0, kc, s.row.data(), s.a_panels.data());
      pack_panels<kPanelW>(p.w, b, n0, cols, k0, kc, s.row.data(), s.w_panels.data());
      for (int64_t j0 = 0; j0 < cols; j0 += kPanelW)
        for (int64_t i0 = 0; i0 < rows; i0 += kPanelA) {
          const Block blk{i0, std::min<int64_t>(kPanelA, rows - i0), j0, std::min<int64_t>(kPanelW, cols - j0)};
          const float *a_panel = s.a_panels.data() + i0 * kc;
          const float *w_panel = s.w_panels.data() + j0 * kc;
          for (int64_t s0 = 0; s0 < kc; s0 += segment) {
            float sums[kPanelA * kPanelW];
            kernel(a_panel + s0 * kPanelA, w_panel + s0 * kPanelW, std::min(segment, kc - s0), sums);
            if (p.block_scaled())
              add_scaled(p, m0, n0, blk, (k0 + s0) / kScaleBlock, sums, s.acc.data());
            else
              add(blk, sums, s.acc.data());
          }
        }
    }
    store_tile(p, b, m0, rows, n0, cols, s.acc.data(), kTileN);
  }

  static void add(const Block &blk, const float *sums, Acc *acc) {
    for (int64_t i = 0; i < blk.rows; ++i)
      for (int64_t j = 0; j < blk.cols; ++j) acc[(blk.i0 + i) * kTileN + blk.j0 + j] += Acc(sums[i * kPanelW + j]);
  }

  // Sums of K group `group`, times a_scale[m, group] * w_scale[n / 128, group].
  static void add_scaled(const Plan &p, int64_t m0, int64_t n0, const Block &blk, int64_t group, const float *sums,
                         Acc *acc) {
    float w_scale[kPanelW];
    for (int64_t j = 0; j < blk.cols; ++j) w_scale[j] = p.w.group_scale(n0 + blk.j0 + j, group);
    for (int64_t i = 0; i < blk.rows; ++i) {
      const float a_scale = p.a.group_scale(m0 + blk.i0 + i, group);
      for (int64_t j = 0; j < blk.cols; ++j)
        acc[(blk.i0 + i) * kTileN + blk.j0 + j] += Acc(sums[i * kPanelW + j] * a_scale * w_scale[j]);
    }
  }
};

}  // namespace

aiter_status gemm_packed(const GemmArgs &g, const GpuCall *) { return run_with_acc<Packed>(g); }

}  // namespace cpu
}  // namespace aiter
