// aiter_moe_sorting: argument checks and dispatch; the checks of topk_ids and
// the expert mask that fused_moe shares.
#include <algorithm>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "ops/moe.hpp"

namespace aiter {

int64_t moe_max_rows(int64_t tokens, int64_t topk, int64_t experts, int64_t block) {
  if (tokens <= 0 || topk <= 0 || experts <= 0 || block <= 0) return 0;
  const int64_t pairs = tokens * topk;
  return (pairs + std::min(experts, pairs) * (block - 1)) / block * block;
}

void check_sort_inputs(ArgCheck &c, SortingArgs &a, const DLTensor *ids, const DLTensor *mask, int64_t experts,
                       int64_t block) {
  c.tensor(ids, "topk_ids").optional(mask, "expert_mask");
  c.ndim(ids, "topk_ids", 2).dtype(ids, "topk_ids", {DType::i32});
  if (mask != nullptr) {
    c.ndim(mask, "expert_mask", 1).dtype(mask, "expert_mask", {DType::i32, DType::u8});
    c.same_device(mask, "expert_mask", ids, "topk_ids");
    if (c.ok()) c.dim(mask, "expert_mask", 0, experts, "the number of experts");
    c.contiguous(mask, "expert_mask");
  }
  c.require(experts >= 1, AITER_ERR_INVALID_ARGUMENT, "num_experts: expected at least 1, got %lld",
            (long long)experts);
  c.require(experts <= kMoeMaxExpertsAny, AITER_ERR_UNSUPPORTED_SHAPE, "num_experts: at most %d, got %lld",
            kMoeMaxExpertsAny, (long long)experts);
  c.require(block >= 1 && block <= 4096, AITER_ERR_INVALID_ARGUMENT,
            "block_size: expected 1 <= block_size <= 4096, got %lld", (long long)block);
  if (!c.ok()) return;
  const int64_t tokens = ids->shape[0], k = ids->shape[1];
  c.require(k >= 1, AITER_ERR_INVALID_ARGUMENT, "topk_ids: expected shape[1] (k) >= 1, got shape %s",
            shape_string(ids).c_str());
  c.require(tokens * k < INT32_MAX && moe_max_rows(tokens, k, experts, block) < INT32_MAX,
            AITER_ERR_UNSUPPORTED_SHAPE, "topk_ids: %lld x %lld pairs do not fit the int32 row ids",
            (long long)tokens, (long long)k);
  if (!c.ok()) return;
  if (numel(ids) == 0)
    a.ids_rows = RowView{tokens, k, k};
  else
    c.rows(ids, "topk_ids", &a.ids_rows);
  a.op = c.op();
  a.ids = data_ptr<const int32_t>(ids);
  a.mask = mask ? data_ptr<const void>(mask) : nullptr;
  a.mask_bytes = mask && dtype_of(mask->dtype) == DType::i32 ? 4 : 1;
  a.experts = int32_t(experts);
  a.block = int32_t(block);
}

namespace {

const OpImpl<SortingArgs> kMoeSorting{"aiter_moe_sorting", cpu::moe_sorting, gpu::moe_sorting};

// A 1-D int32 output of at least `least` elements.
void check_vector(ArgCheck &c, const DLTensor *t, const char *name, int64_t least, const char *what) {
  c.tensor(t, name).ndim(t, name, 1).dtype(t, name, {DType::i32}).contiguous(t, name);
  if (!c.ok()) return;
  c.require(t->shape[0] >= least, AITER_ERR_INVALID_ARGUMENT, "%s: expected at least %lld elements (%s), got %lld",
            name, (long long)least, what, (long long)t->shape[0]);
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API int64_t aiter_moe_sorting_max_rows(int64_t tokens, int64_t topk, int64_t experts, int64_t block_size) {
  if (tokens > (int64_t(1) << 40) || topk > (int64_t(1) << 20) || block_size > 4096) return -1;
  return moe_max_rows(tokens, topk, experts, block_size);
}

AITER_API aiter_status aiter_moe_sorting(DLTensor *sorted_ids, DLTensor *block_experts, DLTensor *num_valid,
                                         const DLTensor *topk_ids, const DLTensor *expert_mask, int32_t num_experts,
                                         int32_t block_size, void *stream) {
  return guard(kMoeSorting.name, [&] {
    ArgCheck c(kMoeSorting.name);
    SortingArgs a{};
    check_sort_inputs(c, a, topk_ids, expert_mask, num_experts, block_size);
    if (!c.ok()) return c.status();
    const int64_t rows = moe_max_rows(a.ids_rows.rows, a.ids_rows.cols, num_experts, block_size);
    check_vector(c, sorted_ids, "sorted_ids", rows, "aiter_moe_sorting_max_rows");
    check_vector(c, block_experts, "block_experts", rows / block_size, "the max rows / block_size");
    check_vector(c, num_valid, "num_valid", 1, "one count");
    c.same_device(sorted_ids, "sorted_ids", topk_ids, "topk_ids")
        .same_device(block_experts, "block_experts", topk_ids, "topk_ids")
        .same_device(num_valid, "num_valid", topk_ids, "topk_ids");
    const DLTensor *outs[] = {sorted_ids, block_experts, num_valid};
    const char *names[] = {"sorted_ids", "block_experts", "num_valid"};
    for (int i = 0; i < 3; ++i) {
      c.disjoint(topk_ids, "topk_ids", outs[i], names[i]);
      if (expert_mask) c.disjoint(expert_mask, "expert_mask", outs[i], names[i]);
      for (int j = 0; j < i; ++j) c.disjoint(outs[j], names[j], outs[i], names[i]);
    }
    if (!c.ok()) return c.status();
    a.sorted = data_ptr<int32_t>(sorted_ids);
    a.rows = sorted_ids->shape[0];
    a.block_experts = data_ptr<int32_t>(block_experts);
    a.blocks = block_experts->shape[0];
    a.num_valid = data_ptr<int32_t>(num_valid);
    return run(kMoeSorting, topk_ids, a, stream);
  });
}

}  // extern "C"
