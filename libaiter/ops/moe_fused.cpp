// aiter_fused_moe and its workspace query: argument checks, the workspace
// layout, dispatch.
#include <algorithm>
#include <cstddef>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "ops/moe.hpp"

namespace aiter {

namespace {
constexpr size_t kAlign = 256;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
constexpr int32_t kDefaultBlock = 64;
}  // namespace

MoeWorkspace moe_workspace(int64_t tokens, int64_t topk, int64_t experts, int64_t hidden, int64_t inter,
                           int64_t elem_bytes, int64_t block, bool weights_on_input) {
  MoeWorkspace w{};
  w.rows = moe_max_rows(tokens, topk, experts, block);
  w.blocks = block > 0 ? w.rows / block : 0;
  size_t at = 0;
  w.sorted = at, at += aligned(size_t(w.rows) * 4);
  w.block_experts = at, at += aligned(size_t(w.blocks) * 4);
  w.block_runs = at, at += aligned(size_t(w.blocks) * 8);
  w.num_valid = at, at += aligned(4);
  const bool fp8 = elem_bytes == 1;
  const int64_t act_bytes = 2;  // x, out and the intermediates are 16-bit
  w.x_sorted = at, at += weights_on_input && !fp8 ? aligned(size_t(w.rows * hidden * act_bytes)) : 0;
  w.inter = at, at += aligned(size_t(w.rows * inter * act_bytes));
  w.pair_out = at, at += aligned(size_t(tokens * topk * hidden * act_bytes));
  w.xq = at, at += fp8 ? aligned(size_t(w.rows * hidden)) : 0;
  // Scales: one a row, or one a 128-wide group of a row (block-scaled).
  w.x_scale = at, at += fp8 ? aligned(size_t(w.rows * std::max<int64_t>(1, (hidden + 127) / 128)) * 4) : 0;
  w.hq = at, at += fp8 ? aligned(size_t(w.rows * inter)) : 0;
  w.h_scale = at, at += fp8 ? aligned(size_t(w.rows * std::max<int64_t>(1, (inter + 127) / 128)) * 4) : 0;
  const int64_t pairs = tokens * topk;
  w.partials = at, at += pairs <= kMoeSplitMaxPairs ? aligned(size_t(kMoeMaxSplits * pairs * hidden) * 4) : 0;
  w.total = at;
  return w;
}

namespace {

const OpImpl<FusedMoeArgs> kFusedMoe{"aiter_fused_moe", cpu::fused_moe, gpu::fused_moe};
const OpImpl<FusedMoeArgs> kFusedMoeFp8{"aiter_fused_moe_fp8", cpu::fused_moe, gpu::fused_moe};

aiter_fused_moe_params defaults() {
  aiter_fused_moe_params p{};
  p.struct_size = sizeof(p);
  p.activation = AITER_MOE_ACT_SILU;
  return p;
}

bool read_params(ArgCheck &c, const aiter_fused_moe_params *in, aiter_fused_moe_params *p) {
  *p = defaults();
  if (in != nullptr) {
    c.require(in->struct_size >= sizeof(aiter_fused_moe_params), AITER_ERR_INVALID_ARGUMENT,
              "params: expected struct_size >= %zu, got %zu", sizeof(aiter_fused_moe_params), in->struct_size);
    if (!c.ok()) return false;
    *p = *in;
  }
  if (p->block_size == 0) p->block_size = kDefaultBlock;
  c.require(p->activation >= AITER_MOE_ACT_SILU && p->activation <= AITER_MOE_ACT_GELU_TANH,
            AITER_ERR_INVALID_ARGUMENT, "params.activation: expected 0 (SiLU), 1 (GELU) or 2 (tanh GELU), got %d",
            p->activation);
  c.require(p->block_size == 32 || p->block_size == 64 || p->block_size == 128, AITER_ERR_INVALID_ARGUMENT,
            "params.block_size: expected 0, 32, 64 or 128, got %d", p->block_size);
  c.require(p->variant >= 0 && p->variant <= 2, AITER_ERR_INVALID_ARGUMENT,
            "params.variant: expected 0 (auto), 1 (portable) or 2 (tensor cores), got %d", p->variant);
  return c.ok();
}

void rows2(ArgCheck &c, const DLTensor *t, const char *name, RowView *v) {
  if (!c.ok()) return;
  if (numel(t) == 0)
    *v = RowView{t->shape[0], t->shape[1], t->shape[1]};
  else
    c.rows(t, name, v);
}

void check_tensors(ArgCheck &c, FusedMoeArgs &a, DLTensor *out, const DLTensor *x, const DLTensor *w1,
                   const DLTensor *w2, const DLTensor *weights, const DLTensor *ids, bool fp8) {
  c.tensor(out, "out").tensor(x, "x").tensor(w1, "w1").tensor(w2, "w2").tensor(weights, "topk_weights");
  c.ndim(x, "x", 2).dtype(x, "x", {DType::bf16, DType::f16});
  c.ndim(w1, "w1", 3).contiguous(w1, "w1");
  if (fp8)
    c.dtype(w1, "w1", {DType::e4m3fn, DType::e4m3fnuz});
  else
    c.same_dtype(w1, "w1", x, "x");
  c.ndim(w2, "w2", 3).same_dtype(w2, "w2", w1, "w1").contiguous(w2, "w2");
  c.ndim(out, "out", 2).same_dtype(out, "out", x, "x").same_shape(out, "out", x, "x");
  c.ndim(weights, "topk_weights", 2).dtype(weights, "topk_weights", {DType::f32});
  for (const DLTensor *t : {(const DLTensor *)out, w1, w2, weights, ids}) c.same_device(t, "tensors", x, "x");
  if (!c.ok()) return;
  const int64_t hidden = x->shape[1], inter2 = w1->shape[1];
  c.dim(w1, "w1", 2, hidden, "the hidden size of x");
  c.require(inter2 % 2 == 0, AITER_ERR_INVALID_ARGUMENT,
            "w1: expected [experts, 2 * inter, hidden] (gate and up rows), got shape %s", shape_string(w1).c_str());
  if (!c.ok()) return;
  c.dim(w2, "w2", 0, w1->shape[0], "the experts of w1").dim(w2, "w2", 1, hidden, "the hidden size of x");
  c.dim(w2, "w2", 2, inter2 / 2, "the intermediate size (w1.shape[1] / 2)");
  c.dim(ids, "topk_ids", 0, x->shape[0], "the tokens of x");
  c.same_shape(weights, "topk_weights", ids, "topk_ids");
  c.require(hidden >= 1 && inter2 >= 2 && hidden <= INT32_MAX && inter2 <= INT32_MAX, AITER_ERR_INVALID_ARGUMENT,
            "w1: expected hidden and intermediate sizes in [1, 2^31), got shape %s", shape_string(w1).c_str());
  c.disjoint(ids, "topk_ids", out, "out");
  c.disjoint(x, "x", out, "out").disjoint(w1, "w1", out, "out").disjoint(w2, "w2", out, "out");
  c.disjoint(weights, "topk_weights", out, "out");
  RowView xr, outr, wr;
  rows2(c, x, "x", &xr);
  rows2(c, out, "out", &outr);
  rows2(c, weights, "topk_weights", &wr);
  if (!c.ok()) return;
  a.dtype = dtype_of(x->dtype);
  a.wdtype = dtype_of(w1->dtype);
  a.x = data_ptr<const void>(x), a.x_stride = xr.row_stride;
  a.out = data_ptr<void>(out), a.out_stride = outr.row_stride;
  a.w1 = data_ptr<const void>(w1), a.w2 = data_ptr<const void>(w2);
  a.weights = data_ptr<const float>(weights), a.weights_stride = wr.row_stride;
  a.tokens = x->shape[0], a.hidden = hidden, a.inter = inter2 / 2, a.local_experts = w1->shape[0];
}

void check_workspace(ArgCheck &c, FusedMoeArgs &a, DLTensor *ws, const DLTensor *out, const DLTensor *x,
                     const DLTensor *mask,
                     const MoeWorkspace &layout) {
  c.tensor(ws, "workspace").ndim(ws, "workspace", 1).dtype(ws, "workspace", {DType::u8});
  c.contiguous(ws, "workspace").same_device(ws, "workspace", x, "x");
  if (!c.ok()) return;
  c.require(size_t(ws->shape[0]) >= layout.total, AITER_ERR_INVALID_ARGUMENT,
            "workspace: expected at least %zu bytes (aiter_fused_moe_workspace_size), got %lld", layout.total,
            (long long)ws->shape[0]);
  char *base = data_ptr<char>(ws);
  c.require(layout.total == 0 || reinterpret_cast<uintptr_t>(base) % 16 == 0, AITER_ERR_INVALID_ARGUMENT,
            "workspace: expected a 16-byte aligned start");
  if (mask) c.disjoint(mask, "expert_mask", ws, "workspace").disjoint(mask, "expert_mask", out, "out");
  if (!c.ok()) return;
  a.sort.sorted = reinterpret_cast<int32_t *>(base + layout.sorted);
  a.sort.rows = layout.rows;
  a.sort.block_experts = reinterpret_cast<int32_t *>(base + layout.block_experts);
  a.sort.block_runs = reinterpret_cast<int32_t *>(base + layout.block_runs);
  a.sort.blocks = layout.blocks;
  a.sort.num_valid = reinterpret_cast<int32_t *>(base + layout.num_valid);
  const bool fp8 = layout.xq != layout.x_scale;
  a.x_sorted = a.weights_on_input && !fp8 ? base + layout.x_sorted : nullptr;
  a.inter_buf = base + layout.inter;
  a.pair_out = base + layout.pair_out;
  a.xq = fp8 ? base + layout.xq : nullptr;
  a.x_scale = fp8 ? reinterpret_cast<float *>(base + layout.x_scale) : nullptr;
  a.hq = fp8 ? base + layout.hq : nullptr;
  a.h_scale = fp8 ? reinterpret_cast<float *>(base + layout.h_scale) : nullptr;
  // The last region: empty (null) where the pairs are too many to split stage 2.
  a.partials = layout.total > layout.partials ? reinterpret_cast<float *>(base + layout.partials) : nullptr;
}

// The scales of fp8 weights, fp32 and compact: one per weight row (2 dims), or
// one per 128 x 128 block (3 dims: block-scaled).
void check_scales(ArgCheck &c, FusedMoeArgs &a, const DLTensor *w1, const DLTensor *w2, const DLTensor *s1,
                  const DLTensor *s2) {
  c.tensor(s1, "w1_scale").tensor(s2, "w2_scale");
  c.min_ndim(s1, "w1_scale", 2).dtype(s1, "w1_scale", {DType::f32}).contiguous(s1, "w1_scale");
  c.ndim(s2, "w2_scale", s1 != nullptr ? s1->ndim : 2).dtype(s2, "w2_scale", {DType::f32}).contiguous(s2, "w2_scale");
  c.same_device(s1, "w1_scale", w1, "w1").same_device(s2, "w2_scale", w1, "w1");
  if (!c.ok()) return;
  c.require(s1->ndim <= 3, AITER_ERR_INVALID_ARGUMENT,
            "w1_scale: expected 2 dims (per channel) or 3 (128 x 128 blocks), got %d", s1->ndim);
  if (!c.ok()) return;
  const bool block = s1->ndim == 3;
  const int64_t g = block ? 128 : 1;
  if (block)
    c.require(a.hidden % 128 == 0 && a.inter % 128 == 0, AITER_ERR_UNSUPPORTED_SHAPE,
              "w1_scale: block-scaled fp8 needs hidden and inter multiples of 128, got %lld and %lld",
              (long long)a.hidden, (long long)a.inter);
  c.dim(s1, "w1_scale", 0, w1->shape[0], "the experts of w1");
  c.dim(s1, "w1_scale", 1, w1->shape[1] / g, block ? "w1.shape[1] / 128" : "w1.shape[1]");
  if (block) c.dim(s1, "w1_scale", 2, a.hidden / g, "hidden / 128");
  c.dim(s2, "w2_scale", 0, w2->shape[0], "the experts of w2");
  c.dim(s2, "w2_scale", 1, a.hidden / g, block ? "hidden / 128" : "w2.shape[1]");
  if (block) c.dim(s2, "w2_scale", 2, a.inter / g, "inter / 128");
  if (!c.ok()) return;
  a.group = block ? 128 : 0;
  a.w1_scale = data_ptr<const float>(s1);
  a.w2_scale = data_ptr<const float>(s2);
}

aiter_status fused_moe_op(const OpImpl<FusedMoeArgs> &op, DLTensor *out, DLTensor *workspace, const DLTensor *x,
                          const DLTensor *w1, const DLTensor *w2, const DLTensor *w1_scale,
                          const DLTensor *w2_scale, const DLTensor *topk_weights, const DLTensor *topk_ids,
                          const DLTensor *expert_mask, const aiter_fused_moe_params *params, void *stream) {
  const bool fp8 = &op == &kFusedMoeFp8;
  ArgCheck c(op.name);
  FusedMoeArgs a{};
  aiter_fused_moe_params p;
  if (!read_params(c, params, &p)) return c.status();
  c.tensor(topk_ids, "topk_ids").tensor(w1, "w1").optional(expert_mask, "expert_mask");
  c.ndim(w1, "w1", 3);
  if (!c.ok()) return c.status();
  const int64_t experts = expert_mask && expert_mask->ndim == 1 ? expert_mask->shape[0] : w1->shape[0];
  check_sort_inputs(c, a.sort, topk_ids, expert_mask, experts, p.block_size);
  check_tensors(c, a, out, x, w1, w2, topk_weights, topk_ids, fp8);
  if (fp8) check_scales(c, a, w1, w2, w1_scale, w2_scale);
  if (!c.ok()) return c.status();
  a.topk = a.sort.ids_rows.cols;
  a.act = p.activation;
  a.weights_on_input = p.weights_on_input != 0;
  a.variant = p.variant;
  const MoeWorkspace layout = moe_workspace(a.tokens, a.topk, experts, a.hidden, a.inter, fp8 ? 1 : 2,
                                            p.block_size, a.weights_on_input);
  check_workspace(c, a, workspace, out, x, expert_mask, layout);
  c.disjoint(x, "x", workspace, "workspace").disjoint(w1, "w1", workspace, "workspace");
  c.disjoint(w2, "w2", workspace, "workspace").disjoint(topk_weights, "topk_weights", workspace, "workspace");
  c.disjoint(topk_ids, "topk_ids", workspace, "workspace").disjoint(out, "out", workspace, "workspace");
  if (fp8) {
    c.disjoint(w1_scale, "w1_scale", workspace, "workspace").disjoint(w2_scale, "w2_scale", workspace, "workspace");
    c.disjoint(w1_scale, "w1_scale", out, "out").disjoint(w2_scale, "w2_scale", out, "out");
  }
  if (!c.ok()) return c.status();
  // params.variant 0: the tuned selection; 1 / 2 ask for the portable or tensor-core stages.
  return p.variant == kMoeAuto ? run_fused_moe_tuned(a, x, stream) : run(op, x, a, stream);
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API void aiter_fused_moe_params_init(aiter_fused_moe_params *params) {
  if (params != nullptr) *params = defaults();
}

AITER_API size_t aiter_fused_moe_workspace_size(int64_t tokens, int64_t topk, int64_t experts, int64_t hidden,
                                                int64_t inter, int64_t elem_bytes,
                                                const aiter_fused_moe_params *params) {
  ArgCheck c("aiter_fused_moe_workspace_size");
  aiter_fused_moe_params p;
  if (!read_params(c, params, &p) || tokens < 0 || topk < 0 || experts < 0 || hidden < 0 || inter < 0 ||
      (elem_bytes != 1 && elem_bytes != 2) || tokens > (int64_t(1) << 32) || hidden > INT32_MAX || inter > INT32_MAX || topk > 4096)
    return 0;
  return moe_workspace(tokens, topk, experts, hidden, inter, elem_bytes, p.block_size, p.weights_on_input != 0).total;
}

AITER_API aiter_status aiter_fused_moe(DLTensor *out, DLTensor *workspace, const DLTensor *x, const DLTensor *w1,
                                       const DLTensor *w2, const DLTensor *topk_weights, const DLTensor *topk_ids,
                                       const DLTensor *expert_mask, const aiter_fused_moe_params *params,
                                       void *stream) {
  return guard(kFusedMoe.name, [&] {
    return fused_moe_op(kFusedMoe, out, workspace, x, w1, w2, nullptr, nullptr, topk_weights, topk_ids, expert_mask,
                        params, stream);
  });
}

AITER_API aiter_status aiter_fused_moe_fp8(DLTensor *out, DLTensor *workspace, const DLTensor *x,
                                           const DLTensor *w1, const DLTensor *w2, const DLTensor *w1_scale,
                                           const DLTensor *w2_scale, const DLTensor *topk_weights,
                                           const DLTensor *topk_ids, const DLTensor *expert_mask,
                                           const aiter_fused_moe_params *params, void *stream) {
  return guard(kFusedMoeFp8.name, [&] {
    return fused_moe_op(kFusedMoeFp8, out, workspace, x, w1, w2, w1_scale, w2_scale, topk_weights, topk_ids,
                        expert_mask, params, stream);
  });
}

}  // extern "C"
