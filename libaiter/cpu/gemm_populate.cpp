// A GEMM's contiguous output mapped before the kernels write it: the shared
// helper (cpu/populate.cpp, which says why) over the output's bytes.
#include "cpu/gemm_plan.hpp"

#include <cstdint>

#include "cpu/populate.hpp"

namespace aiter {
namespace cpu {
namespace gemm {
namespace {

// The output's bytes as one range, or 0 where its rows or matrices have gaps
// (pages there may hold what is not the GEMM's to write).
int64_t contiguous_bytes(const Plan &p) {
  const int64_t row = p.n * p.out_elem_bytes, matrix = p.m * row;
  if (p.m > 1 && p.out_row_bytes != row) return 0;
  if (p.batch > 1 && p.out_batch_bytes != matrix) return 0;
  return p.batch * matrix;
}

}  // namespace

void populate_output(const Plan &p) { populate_range(p.out, contiguous_bytes(p)); }

}  // namespace gemm
}  // namespace cpu
}  // namespace aiter
