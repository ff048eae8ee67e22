// CPU moe_sorting: a counting sort of the token-expert pairs by expert, pairs
// of one expert in increasing order, each expert's rows padded to the block.
#include <vector>

#include "core/error.hpp"
#include "ops/moe.hpp"

namespace aiter {
namespace cpu {

aiter_status moe_sorting(const SortingArgs &a) {
  const int64_t tokens = a.ids_rows.rows, k = a.ids_rows.cols, pairs = tokens * k;
  std::vector<int64_t> count(size_t(a.experts), 0);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = a.ids[t * a.ids_rows.row_stride + j];
      if (e < 0 || e >= a.experts)
        return fail(AITER_ERR_INVALID_ARGUMENT, "%s: topk_ids[%lld, %lld] = %d is outside [0, %d)",
                    a.op, (long long)t, (long long)j, e, a.experts);
      if (mask_on(a.mask, a.mask_bytes, e)) ++count[size_t(e)];
    }
  std::vector<int64_t> next(size_t(a.experts));
  int64_t row = 0, local = 0;
  for (int32_t e = 0; e < a.experts; ++e) {
    next[size_t(e)] = row;
    const int64_t padded = (count[size_t(e)] + a.block - 1) / a.block * a.block;
    for (int64_t b = row / a.block; b < (row + padded) / a.block; ++b) a.block_experts[b] = int32_t(local);
    row += padded;
    local += mask_on(a.mask, a.mask_bytes, e) ? 1 : 0;
  }
  a.num_valid[0] = int32_t(row);
  for (int64_t r = 0; r < a.rows; ++r) a.sorted[r] = int32_t(pairs);
  for (int64_t b = row / a.block; b < a.blocks; ++b) a.block_experts[b] = -1;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = a.ids[t * a.ids_rows.row_stride + j];
      if (mask_on(a.mask, a.mask_bytes, e)) a.sorted[next[size_t(e)]++] = int32_t(t * k + j);
    }
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
