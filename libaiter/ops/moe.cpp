// The routing ops (topk_softmax, topk_sigmoid, grouped_topk): argument checks
// and dispatch.  Sorting and the fused MoE are in moe_sorting.cpp / moe_fused.cpp.
#include "ops/moe.hpp"

#include "core/backend.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

const OpImpl<RoutingArgs> kTopkSoftmax{"aiter_topk_softmax", cpu::route, gpu::route};
const OpImpl<RoutingArgs> kTopkSigmoid{"aiter_topk_sigmoid", cpu::route, gpu::route};
const OpImpl<RoutingArgs> kGroupedTopk{"aiter_grouped_topk", cpu::route, gpu::route};

// A row view of a [rows, cols] tensor.  An empty tensor's strides say nothing
// (NumPy gives it zero strides), so its layout is not checked.
void rows_of(ArgCheck &c, const DLTensor *t, const char *name, RowView *view) {
  if (!c.ok()) return;  // t's shape may not be [rows, cols] then
  if (numel(t) == 0)
    *view = RowView{0, t->shape[1], t->shape[1]};
  else
    c.rows(t, name, view);
}

// What every routing op checks: gating [T, E], topk_weights / topk_ids [T, k].
void check_topk(ArgCheck &c, RoutingArgs &a, DLTensor *weights, DLTensor *ids, const DLTensor *gating,
                int32_t renormalize) {
  c.tensor(weights, "topk_weights").tensor(ids, "topk_ids").tensor(gating, "gating");
  c.ndim(gating, "gating", 2).dtype(gating, "gating", {DType::f32, DType::f16, DType::bf16});
  c.ndim(weights, "topk_weights", 2).dtype(weights, "topk_weights", {DType::f32});
  c.dtype(ids, "topk_ids", {DType::i32});
  c.same_device(weights, "topk_weights", gating, "gating").same_device(ids, "topk_ids", gating, "gating");
  if (!c.ok()) return;
  const int64_t experts = gating->shape[1], k = weights->shape[1];
  c.dim(weights, "topk_weights", 0, gating->shape[0], "the tokens of gating");
  c.require(k >= 1 && k <= experts, AITER_ERR_INVALID_ARGUMENT,
            "topk_weights: expected shape[1] (k) in [1, %lld] (the experts of gating), got shape %s",
            (long long)experts, shape_string(weights).c_str());
  c.same_shape(ids, "topk_ids", weights, "topk_weights");
  c.require(experts <= INT32_MAX, AITER_ERR_UNSUPPORTED_SHAPE,
            "gating: %lld experts do not fit the int32 topk_ids", (long long)experts);
  c.disjoint(ids, "topk_ids", weights, "topk_weights");
  rows_of(c, gating, "gating", &a.gating_rows);
  rows_of(c, weights, "topk_weights", &a.weights_rows);
  rows_of(c, ids, "topk_ids", &a.ids_rows);
  if (!c.ok()) return;
  a.op = c.op();
  a.dtype = dtype_of(gating->dtype);
  a.gating = data_ptr<const void>(gating);
  a.weights = data_ptr<float>(weights);
  a.ids = data_ptr<int32_t>(ids);
  a.renormalize = renormalize != 0;
  a.groups = 1;
  a.topk_group = 1;
  a.scale = 1.0f;
}

void check_groups(ArgCheck &c, RoutingArgs &a, const DLTensor *gating, const DLTensor *bias, int32_t groups,
                  int32_t topk_group, int32_t scoring, float scale) {
  c.require(scoring == AITER_MOE_SCORE_SOFTMAX || scoring == AITER_MOE_SCORE_SIGMOID, AITER_ERR_INVALID_ARGUMENT,
            "scoring: expected AITER_MOE_SCORE_SOFTMAX (0) or AITER_MOE_SCORE_SIGMOID (1), got %d", scoring);
  c.optional(bias, "correction_bias");
  if (!c.ok()) return;
  const int64_t experts = a.gating_rows.cols, k = a.weights_rows.cols;
  c.require(groups >= 1 && experts % groups == 0, AITER_ERR_INVALID_ARGUMENT,
            "num_expert_group: expected a divisor of the %lld experts of gating, got %d", (long long)experts, groups);
  c.require(topk_group >= 1 && topk_group <= groups, AITER_ERR_INVALID_ARGUMENT,
            "topk_group: expected 1 <= topk_group <= num_expert_group (%d), got %d", groups, topk_group);
  if (!c.ok()) return;
  const int64_t kept = int64_t(topk_group) * (experts / groups);
  c.require(k <= kept, AITER_ERR_INVALID_ARGUMENT,
            "topk_weights: expected shape[1] (k) <= topk_group * experts per group (%lld), got %lld",
            (long long)kept, (long long)k);
  c.require(scale == scale, AITER_ERR_INVALID_ARGUMENT, "routed_scaling_factor: expected a number, got NaN");
  if (bias != nullptr) {
    c.require(scoring == AITER_MOE_SCORE_SIGMOID, AITER_ERR_INVALID_ARGUMENT,
              "correction_bias: expected sigmoid scoring (AITER_MOE_SCORE_SIGMOID) with a correction bias");
    c.ndim(bias, "correction_bias", 1).dim(bias, "correction_bias", 0, experts, "the experts of gating");
    c.same_device(bias, "correction_bias", gating, "gating");
    if (c.ok() && dtype_of(bias->dtype) != DType::f32) c.same_dtype(bias, "correction_bias", gating, "gating");
    c.require(!c.ok() || numel(bias) <= 1 || stride(bias, 0) == 1, AITER_ERR_INVALID_ARGUMENT,
              "correction_bias: expected unit stride, got %lld", (long long)(c.ok() ? stride(bias, 0) : 0));
  }
  if (!c.ok()) return;
  a.groups = groups;
  a.topk_group = topk_group;
  a.sigmoid = scoring == AITER_MOE_SCORE_SIGMOID;
  a.bias = bias ? data_ptr<const void>(bias) : nullptr;
  a.bias_dtype = bias ? dtype_of(bias->dtype) : DType::f32;
  a.scale = scale;
}

aiter_status topk_op(const OpImpl<RoutingArgs> &op, DLTensor *weights, DLTensor *ids, const DLTensor *gating,
                     int32_t renormalize, bool sigmoid, void *stream) {
  return guard(op.name, [&] {
    ArgCheck c(op.name);
    RoutingArgs a{};
    check_topk(c, a, weights, ids, gating, renormalize);
    a.sigmoid = sigmoid;
    return c.ok() ? run(op, gating, a, stream) : c.status();
  });
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_topk_softmax(DLTensor *topk_weights, DLTensor *topk_ids, const DLTensor *gating,
                                          int32_t renormalize, void *stream) {
  return topk_op(kTopkSoftmax, topk_weights, topk_ids, gating, renormalize, false, stream);
}

AITER_API aiter_status aiter_topk_sigmoid(DLTensor *topk_weights, DLTensor *topk_ids, const DLTensor *gating,
                                          int32_t renormalize, void *stream) {
  return topk_op(kTopkSigmoid, topk_weights, topk_ids, gating, renormalize, true, stream);
}

AITER_API aiter_status aiter_grouped_topk(DLTensor *topk_weights, DLTensor *topk_ids, const DLTensor *gating,
                                          const DLTensor *correction_bias, int32_t num_expert_group,
                                          int32_t topk_group, int32_t scoring, int32_t renormalize,
                                          float routed_scaling_factor, void *stream) {
  return guard(kGroupedTopk.name, [&] {
    ArgCheck c(kGroupedTopk.name);
    RoutingArgs a{};
    check_topk(c, a, topk_weights, topk_ids, gating, renormalize);
    check_groups(c, a, gating, correction_bias, num_expert_group, topk_group, scoring, routed_scaling_factor);
    return c.ok() ? run(kGroupedTopk, gating, a, stream) : c.status();
  });
}

}  // extern "C"
