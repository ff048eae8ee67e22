// GPU launchers of the MoE routing and sorting kernels (kernels/moe/routing.cu).
#include <algorithm>
#include <string>

#include "gpu/launch.hpp"
#include "gpu/moe_sort.hpp"
#include "kernels/moe/moe_params.h"
#include "ops/moe.hpp"

namespace aiter {
namespace gpu {
namespace {
int kind_code(DType t) { return t == DType::f16 ? 1 : t == DType::bf16 ? 2 : 0; }  // RoutingParams' float kinds
}  // namespace

aiter_status route(const RoutingArgs &a, const GpuCall &call) {
  const int64_t experts = a.gating_rows.cols, tokens = a.gating_rows.rows;
  if (tokens == 0) return AITER_OK;
  if (experts > kMoeMaxExperts)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: at most %d experts on the GPU, got %lld", a.op, kMoeMaxExperts,
                (long long)experts);
  int per = 1;
  while (per * 32 < experts) per *= 2;
  RoutingParams p{};
  p.gating = a.gating;
  p.bias = a.bias;
  p.weights = a.weights;
  p.ids = a.ids;
  p.tokens = tokens;
  p.gating_stride = a.gating_rows.row_stride;
  p.weights_stride = a.weights_rows.row_stride;
  p.ids_stride = a.ids_rows.row_stride;
  p.experts = int(experts);
  p.k = int(a.weights_rows.cols);
  p.groups = a.groups;
  p.topk_group = a.topk_group;
  p.gating_kind = kind_code(a.dtype);
  p.bias_kind = kind_code(a.bias_dtype);
  p.sigmoid = a.sigmoid;
  p.renormalize = a.renormalize;
  p.scale = a.scale;
  const int64_t per_block = kRouteThreads / 32;
  const int64_t blocks = (tokens + per_block - 1) / per_block;
  if (blocks > INT32_MAX) return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: too many tokens for the GPU grid", a.op);
  const std::string variant = std::to_string(per);
  return launch(call, "moe_route", variant, Dim3{unsigned(blocks), 1, 1}, unsigned(kRouteThreads), p);
}

namespace {

SortingParams sort_params(const SortingArgs &a) {
  SortingParams p{};
  p.ids = a.ids;
  p.mask = a.mask;
  p.sorted = a.sorted;
  p.block_experts = a.block_experts;
  p.block_runs = a.block_runs;
  p.num_valid = a.num_valid;
  p.tokens = a.ids_rows.rows;
  p.ids_stride = a.ids_rows.row_stride;
  p.rows = a.rows;
  p.blocks = a.blocks;
  p.topk = int(a.ids_rows.cols);
  p.experts = a.experts;
  p.block = a.block;
  p.mask_bytes = a.mask_bytes;
  return p;
}

aiter_status check_experts(const SortingArgs &a) {
  if (a.experts <= kMoeMaxExperts) return AITER_OK;
  return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: at most %d experts on the GPU, got %d", a.op, kMoeMaxExperts,
              a.experts);
}

// Blocks of 1024 threads zeroing `bytes`: about 4 16-byte stores a thread, at most 1024 blocks.
int zero_blocks(int64_t bytes) {
  const int64_t per_block = int64_t(kSortThreads) * 16 * 4;
  return int(std::min<int64_t>(1024, (bytes + per_block - 1) / per_block));
}

// AITER_MOE_SORT=single: the fused MoE sorts with the one-block kernel (read once).
bool single_forced() {
  static const bool forced = env_is("AITER_MOE_SORT", "single");
  return forced;
}

}  // namespace

aiter_status moe_sorting(const SortingArgs &a, const GpuCall &call) {
  aiter_status s = check_experts(a);
  if (s != AITER_OK) return s;
  // Even with no pairs the block writes num_valid = 0 and the -1 blocks.
  return launch(call, "moe_sort", "any", Dim3{1, 1, 1}, unsigned(kSortThreads), sort_params(a));
}

aiter_status moe_sorting_fused(const SortingArgs &a, const SortExtras &extras, const GpuCall &call) {
  aiter_status s = check_experts(a);
  if (s != AITER_OK) return s;
  SortingParams p = sort_params(a);
  const int64_t pairs = a.ids_rows.rows * a.ids_rows.cols;
  const int64_t parts = (pairs + kSortChunk - 1) / kSortChunk;
  const bool many = !extras.one_block && !single_forced() && parts > 1 &&
                    size_t(parts) * size_t(a.experts) * sizeof(int) <= extras.scratch_bytes;
  p.parts = many ? int(parts) : 0;
  p.partial = static_cast<int *>(extras.scratch);
  p.zero = extras.zero;
  p.zero_bytes = extras.zero != nullptr ? extras.zero_bytes : 0;
  p.zero_blocks = p.zero_bytes > 0 ? zero_blocks(p.zero_bytes) : 0;
  const unsigned count_grid = unsigned(p.parts + p.zero_blocks);
  if (count_grid > 0) s = launch(call, "moe_sort_count", "any", Dim3{count_grid, 1, 1}, unsigned(kSortThreads), p);
  if (s != AITER_OK) return s;
  if (!many) return launch(call, "moe_sort", "any", Dim3{1, 1, 1}, unsigned(kSortThreads), p);
  return launch(call, "moe_sort_scatter", "any", Dim3{unsigned(p.parts), 1, 1}, unsigned(kSortThreads), p);
}

}  // namespace gpu
}  // namespace aiter
