// The register-blocked inner kernels of the CPU GEMM variants, each compiled for
// the baseline ISA and, on x86-64, for AVX2 + FMA; the library is built for the
// baseline, so the faster one is picked at run time from cpu_isa() (cpu/isa.hpp;
// AITER_CPU_ISA=portable forces the portable one, to test it on any machine).
#pragma once

#include <cstdint>

#include "core/dtype.hpp"

namespace aiter {
namespace cpu {
namespace gemm {

// ---- dot-product form: both operands run along K ----------------------------------
// acc[i * ld_acc + j] += dot(a row i, w row j) over kc <= kMaxExactK elements,
// for i < rows, j < cols; rows of a are lda floats apart, rows of w ldw.
// Blocks of 3 rows of A meet 4 rows of W; each pair keeps one partial sum per
// vector lane, added up at the end: a fixed summation order, no fast-math.
template <class Acc>
void dot_tile(const float *a, int64_t lda, int64_t rows, const float *w, int64_t ldw, int64_t cols, int64_t kc,
              Acc *acc, int64_t ld_acc);

// ---- outer-product form: packed panels ---------------------------------------------
// A panel holds kPanelA rows of A as a_panel[k * kPanelA + i], a W panel kPanelW
// rows of W as w_panel[k * kPanelW + j]; the kernel keeps the whole
// kPanelA x kPanelW block of sums in registers (no reduction across lanes) and
// writes sums[i * kPanelW + j] = sum over k < kc of a[i] w[j], in K order.
constexpr int kPanelA = 6;
constexpr int kPanelW = 16;
using PanelKernel = void (*)(const float *a_panel, const float *w_panel, int64_t kc, float *sums);
PanelKernel panel_kernel();

// ---- skinny form: a few rows of A, W read in its own dtype ---------------------------
// sums[i * kSkinnyRowsW + j] = dot(a row i, w_rows[j]) over kc <= kMaxExactK
// elements, for `rows` (1..kSkinnyRowsA) fp32 rows of A lda floats apart and the
// kSkinnyRowsW rows of W that w_rows point at (a row may repeat, to fill the
// block at the edge of W).  W is converted to fp32 in registers as it is
// loaded, which saves the store and reload of a converted copy: what a stream
// through W, used by only a few rows of A, is bound by.
constexpr int kSkinnyRowsA = 3;
constexpr int kSkinnyRowsW = 4;
using SkinnyKernel = void (*)(const float *a, int64_t lda, const void *const *w_rows, int64_t kc, float *sums);
// The kernel for `rows` rows of A and W of `w_dtype`, or null when W of that
// dtype has no in-register conversion (fp16, fp8): convert it to fp32 first
// and take the fp32 kernel.
SkinnyKernel skinny_kernel(DType w_dtype, int rows);

}  // namespace gemm
}  // namespace cpu
}  // namespace aiter
