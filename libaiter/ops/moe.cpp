// aiter_topk_softmax: argument checks and dispatch.
#include "ops/moe.hpp"

#include "core/backend.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

const OpImpl<TopkSoftmaxArgs> kTopkSoftmax{"aiter_topk_softmax", cpu::topk_softmax, nullptr};

// A row view of a [rows, cols] tensor.  An empty tensor's strides say nothing
// (NumPy gives it zero strides), so its layout is not checked.
void rows_of(ArgCheck &c, const DLTensor *t, const char *name, RowView *view) {
  if (!c.ok()) return;  // t's shape may not be [rows, cols] then
  if (numel(t) == 0)
    *view = RowView{0, t->shape[1], t->shape[1]};
  else
    c.rows(t, name, view);
}

void check_topk_softmax(ArgCheck &c, TopkSoftmaxArgs &a, DLTensor *weights, DLTensor *ids, const DLTensor *gating,
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
  rows_of(c, gating, "gating", &a.gating_rows);
  rows_of(c, weights, "topk_weights", &a.weights_rows);
  rows_of(c, ids, "topk_ids", &a.ids_rows);
  if (!c.ok()) return;
  a.dtype = dtype_of(gating->dtype);
  a.gating = data_ptr<const void>(gating);
  a.weights = data_ptr<float>(weights);
  a.ids = data_ptr<int32_t>(ids);
  a.renormalize = renormalize != 0;
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_topk_softmax(DLTensor *topk_weights, DLTensor *topk_ids, const DLTensor *gating,
                                          int32_t renormalize, void *stream) {
  return guard(kTopkSoftmax.name, [&] {
    ArgCheck c(kTopkSoftmax.name);
    TopkSoftmaxArgs a{};
    check_topk_softmax(c, a, topk_weights, topk_ids, gating, renormalize);
    return c.ok() ? run(kTopkSoftmax, gating, a, stream) : c.status();
  });
}

}  // extern "C"
