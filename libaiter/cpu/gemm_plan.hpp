// What every CPU GEMM variant shares: the checked arguments resolved into a
// Plan (operands as rows of bytes, the epilogue's scales and bias), operand rows
// converted to fp32, the store that scales, biases and rounds once, and the
// parallel walk over work items of every matrix of the batch.
//
// Accumulators are fp32, or int64 for int8 operands: a sum of up to
// kMaxExactK int8 products is an integer below 2^24, which fp32 computes
// exactly, so kernels sum K blocks of at most that length in fp32 and the
// variants add the block sums into int64.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cpu/populate.hpp"  // populate_range, for cpu.avx512's packed A
#include "ops/gemm.hpp"

namespace aiter {
namespace cpu {
namespace gemm {

constexpr int64_t kMaxExactK = 1024;  // 1024 * 128 * 128 = 2^24
static_assert(kMaxExactK * 128 * 128 <= (int64_t(1) << 24), "int8 block sums must stay exact in fp32");

using RowConverter = void (*)(const void *src, int64_t n, float *dst);
using RowWriter = void (*)(const float *src, int64_t n, void *dst);

// A or W: matrix b's rows of K elements, converted to fp32 block by block (or
// read in place when fp32).
struct Operand {
  const char *data;     // matrix 0, row 0
  int64_t row_bytes;    // distance between rows
  int64_t batch_bytes;  // distance between matrices
  int64_t elem_bytes;
  DType dtype;
  RowConverter convert;  // null for fp32
  // gemm_a8w8_blockscale: element k of row r is scaled by
  // group_scales[(r / rows_per_scale) * scale_row_stride + (k / kScaleBlock) *
  // scale_group_stride] (A's may be column-major); null otherwise.
  const float *group_scales = nullptr;
  int64_t rows_per_scale = 1;
  int64_t scale_row_stride = 0, scale_group_stride = 1;

  const char *row(int64_t b, int64_t r) const { return data + b * batch_bytes + r * row_bytes; }
  float group_scale(int64_t r, int64_t group) const {
    return group_scales[(r / rows_per_scale) * scale_row_stride + group * scale_group_stride];
  }
};

struct Plan {
  int64_t batch, m, n, k;
  Operand a, w;
  bool int8;  // exact integer sums: int64 accumulators
  char *out;
  int64_t out_row_bytes, out_batch_bytes, out_elem_bytes;
  RowWriter write;
  DType out_dtype;  // what `write` writes: f32, bf16 or f16
  const float *bias;  // fp32 [N], or null
  // gemm_a8w8 epilogue: out *= a_scale[b * a_scale_batch + m * a_scale_step]
  // * w_scale[b * w_scale_batch + n * w_scale_step]; null for a16w16 and
  // blockscale (whose scales live in the operands).
  const float *a_scale, *w_scale;
  int64_t a_scale_step, a_scale_batch, w_scale_step, w_scale_batch;
  bool block_scaled() const { return a.group_scales != nullptr; }
};

// The plan of `g`; `bias` keeps an fp32 copy of the bias for plan.bias.
Plan make_plan(const GemmArgs &g, std::vector<float> &bias);

// Maps the pages of a contiguous output (of at least 128 KB) that are not
// mapped yet, spread over the CPU threads, before a variant writes it: a page
// fault per fresh page inside the kernels cost far more (cpu/gemm_populate.cpp).
void populate_output(const Plan &p);

// Rows [row0, row0 + rows) and columns [k0, k0 + kc) of matrix b of `op` as
// fp32 rows `*ld` floats apart: the operand itself when it is fp32, else a copy
// in `scratch` (rows `scratch_ld` apart).  With `fold_group_scales`, block
// scales are multiplied into the copy (a[m, k] * a_scale[m, g] times
// w[n, k] * w_scale[n / 128, g] summed over K is the blockscale product).
const float *fp32_rows(const Operand &op, int64_t b, int64_t row0, int64_t rows, int64_t k0, int64_t kc,
                       float *scratch, int64_t scratch_ld, bool fold_group_scales, int64_t *ld);

// out[b][m0 + i][n0 + j] = acc[i * ld + j], times the epilogue scales, plus the
// bias, computed in fp32 and rounded once, for i < rows, j < cols.
template <class Acc>
void store_tile(const Plan &p, int64_t b, int64_t m0, int64_t rows, int64_t n0, int64_t cols, const Acc *acc,
                int64_t ld);

// fn(b, item) for every matrix b of the batch and item in [0, items), spread
// over the CPU threads (an item is one output tile: one writer per element),
// one item at a time up to 256 items; the threads take them in turn, so a
// thread's next item is most often `threads` further on.
void for_each_item(const Plan &p, int64_t items, const std::function<void(int64_t b, int64_t item)> &fn);

// fn(p, b, m0, rows, n0, cols) for every tile of tile_m x tile_n of every output
// matrix (smaller at the edges), spread over the CPU threads.  Tiles that
// follow each other share their rows of W, the bigger operand in inference.
void for_each_tile(const Plan &p, int64_t tile_m, int64_t tile_n,
                   void (*fn)(const Plan &p, int64_t b, int64_t m0, int64_t rows, int64_t n0, int64_t cols));

// run<Acc>(plan) with the accumulator type of the plan's operands.
template <template <class> class Run>
aiter_status run_with_acc(const GemmArgs &g) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return AITER_OK;
  std::vector<float> bias;
  const Plan p = make_plan(g, bias);
  populate_output(p);
  if (p.int8)
    Run<int64_t>::run(p);
  else
    Run<float>::run(p);
  return AITER_OK;
}

}  // namespace gemm

// The variants (cpu/gemm_tiled.cpp, gemm_skinny.cpp, gemm_packed.cpp).
aiter_status gemm_tiled(const GemmArgs &g, const GpuCall *);
aiter_status gemm_skinny(const GemmArgs &g, const GpuCall *);
aiter_status gemm_packed(const GemmArgs &g, const GpuCall *);
// cpu/gemm_avx512.cpp: runs where the CPU (and AITER_CPU_ISA) allow AVX-512.
aiter_status gemm_avx512(const GemmArgs &g, const GpuCall *);
bool gemm_avx512_supports(const GemmArgs &g);
// cpu/gemm_openblas.cpp: fp32 / bf16 / fp16 operands, where libopenblas.so.0 opens.
aiter_status gemm_openblas(const GemmArgs &g, const GpuCall *);
bool gemm_openblas_supports(const GemmArgs &g);
// cpu/gemm_onednn.cpp: fp32 / bf16 / fp16 operands, where libdnnl.so.2 opens.
aiter_status gemm_onednn(const GemmArgs &g, const GpuCall *);
bool gemm_onednn_supports(const GemmArgs &g);

}  // namespace cpu
}  // namespace aiter
