// aiter_gemm_a16w16, aiter_gemm_a8w8: argument checks and dispatch to the
// selected kernel variant (tuning/select.hpp); the tuned-op tables of every
// GEMM op and the checks the others share (ops/gemm_checks.hpp).
#include "ops/gemm.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "ops/gemm_checks.hpp"

#include "core/backend.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

void gemm_key(const GemmArgs &g, TuneKey *key) {
  key->batch = g.batch;
  key->m = g.m, key->n = g.n, key->k = g.k;
  key->a_dtype = g.in_dtype;
  key->out_dtype = g.out_dtype;
}

struct OpNames {
  GemmOp op;
  const char *symbol, *name;
};
constexpr OpNames kOpNames[] = {
    {GemmOp::a16w16, "aiter_gemm_a16w16", "gemm_a16w16"},
    {GemmOp::a8w8, "aiter_gemm_a8w8", "gemm_a8w8"},
    {GemmOp::a8w8_blockscale, "aiter_gemm_a8w8_blockscale", "gemm_a8w8_blockscale"},
    {GemmOp::batched_a16w16, "aiter_batched_gemm_a16w16", "batched_gemm_a16w16"},
    {GemmOp::batched_a8w8, "aiter_batched_gemm_a8w8", "batched_gemm_a8w8"},
};

template <GemmOp Op>
std::vector<const char *> names_of(DLDeviceType backend) {
  return variant_names(gemm_op(Op), backend);
}

// Made at the first GPU call (TunedOp::gpu_list): a CPU GEMM never reads them.
VariantList<GemmArgs> gpu_gemm_variants(int op) { return gpu::gemm_variants(GemmOp(op)); }

}  // namespace

const TunedOp<GemmArgs> &gemm_op(GemmOp op) {
  static const auto table = [] {
    std::vector<TunedOp<GemmArgs>> t;
    for (const OpNames &o : kOpNames)
      t.push_back(TunedOp<GemmArgs>{o.symbol, o.name, cpu::gemm_variants(o.op), {}, gemm_key, gpu_gemm_variants,
                                    int(o.op)});
    return t;
  }();
  return table[size_t(op)];
}

std::vector<TunedOpNames> gemm_tuned_op_names() {
  return {{"gemm_a16w16", names_of<GemmOp::a16w16>},
          {"gemm_a8w8", names_of<GemmOp::a8w8>},
          {"gemm_a8w8_blockscale", names_of<GemmOp::a8w8_blockscale>},
          {"batched_gemm_a16w16", names_of<GemmOp::batched_a16w16>},
          {"batched_gemm_a8w8", names_of<GemmOp::batched_a8w8>}};
}

namespace {

constexpr std::initializer_list<DType> kOutDtypes = {DType::f32, DType::f16, DType::bf16};

// Empty tensors (numpy gives them zero strides) have no layout to check.
void unit_last_stride(ArgCheck &c, const DLTensor *t, const char *name) {
  if (c.ok() && numel(t) > 0) c.unit_last_stride(t, name);
}
void contiguous(ArgCheck &c, const DLTensor *t, const char *name) {
  if (c.ok() && numel(t) > 0) c.contiguous(t, name);
}

// The matrices of `t` have their rows along dim `row_dim`, `row_stride`
// elements apart; a single row, or an empty tensor, has no stride to speak of
// (and an empty one's may be anything, INT64_MAX too: kernels never see it).
MatrixRef matrix_ref(const DLTensor *t, int row_dim) {
  const bool strided = numel(t) > 0 && t->shape[row_dim] > 1;
  return MatrixRef{data_ptr<const void>(t), strided ? stride(t, row_dim) : t->shape[row_dim + 1]};
}

// Matrix b starts b * batch_stride elements after matrix 0; with one matrix
// (or none) the stride means nothing (and may be anything).
int64_t batch_stride(const DLTensor *t, bool batched) {
  return batched && numel(t) > 0 && t->shape[0] > 1 ? stride(t, 0) : 0;
}

// A sufficient test that no two indices of `t` name the same element: taken in
// order of stride, each dim steps past everything the smaller ones span.  It
// accepts row-major layouts and their permutations (out[b] interleaved with
// rows of other matrices, as a view of an [M, B, N] buffer gives).
bool elements_disjoint(const DLTensor *t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, extent) of dims with more than one index
  for (int d = 0; d < t->ndim; ++d)
    if (t->shape[d] > 1) dims.emplace_back(stride(t, d), t->shape[d]);
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;  // elements covered by the smaller dims
  for (const auto &[step, extent] : dims) {
    if (step < span) return false;
    span = step * (extent - 1) + span;
  }
  return true;
}

// Overlapping output elements would be written by several threads at once.
// (An empty out has no layout: numpy gives it zero strides.)
void check_out_layout(ArgCheck &c, const DLTensor *out, const GemmArgs &g, bool batched) {
  if (numel(out) == 0) return;
  c.require(g.m <= 1 || g.out_row_stride >= g.n, AITER_ERR_INVALID_ARGUMENT,
            "out: rows overlap (row stride %lld < row length %lld)", (long long)g.out_row_stride, (long long)g.n);
  c.require(!batched || elements_disjoint(out), AITER_ERR_INVALID_ARGUMENT,
            "out: matrices overlap (batch stride %lld, row stride %lld, shape %s)", (long long)stride(out, 0),
            (long long)g.out_row_stride, shape_string(out).c_str());
}

void check_bias(ArgCheck &c, const DLTensor *bias, const GemmArgs &g) {
  if (bias == nullptr) return;
  c.ndim(bias, "bias", 1).dim(bias, "bias", 0, g.n, "N, the rows of w");
  contiguous(c, bias, "bias");
  if (g.out_dtype == DType::f32)
    c.dtype(bias, "bias", {DType::f32});
  else
    c.dtype(bias, "bias", {DType::f32, g.out_dtype});
}

}  // namespace

void check_operands(ArgCheck &c, GemmArgs &g, DLTensor *out, const DLTensor *a, const DLTensor *w,
                    const DLTensor *bias, std::initializer_list<DType> in_dtypes, bool batched) {
  const int lead = batched ? 1 : 0;  // dims before the matrices' two
  c.tensor(a, "a").tensor(w, "w").tensor(out, "out").optional(bias, "bias");
  c.ndim(a, "a", 2 + lead).ndim(w, "w", 2 + lead).ndim(out, "out", 2 + lead);
  c.dtype(a, "a", in_dtypes).same_dtype(w, "w", a, "a");
  c.same_device(w, "w", a, "a").same_device(out, "out", a, "a").same_device(bias, "bias", a, "a");
  unit_last_stride(c, a, "a"), unit_last_stride(c, w, "w"), unit_last_stride(c, out, "out");
  if (!c.ok()) return;
  g.batch = batched ? a->shape[0] : 1;
  g.m = a->shape[lead];
  g.k = a->shape[lead + 1];
  g.n = w->shape[lead];
  if (batched) c.dim(w, "w", 0, g.batch, "B, the batch of a").dim(out, "out", 0, g.batch, "B, the batch of a");
  c.dim(w, "w", lead + 1, g.k, "K, the last dim of a");
  c.dim(out, "out", lead, g.m, "M, the rows of a").dim(out, "out", lead + 1, g.n, "N, the rows of w");
  c.dtype(out, "out", kOutDtypes);
  if (!c.ok()) return;
  g.out_dtype = dtype_of(out->dtype);
  g.out_row_stride = g.m > 1 && numel(out) > 0 ? stride(out, lead) : g.n;
  check_out_layout(c, out, g, batched);
  check_bias(c, bias, g);
  if (!c.ok()) return;
  g.in_dtype = dtype_of(a->dtype);
  g.a = matrix_ref(a, lead);
  g.w = matrix_ref(w, lead);
  g.out = data_ptr<void>(out);
  g.a_batch_stride = batch_stride(a, batched);
  g.w_batch_stride = batch_stride(w, batched);
  g.out_batch_stride = batch_stride(out, batched);
  g.bias = bias ? data_ptr<const void>(bias) : nullptr;
  g.bias_dtype = bias ? dtype_of(bias->dtype) : DType::unknown;
}

const float *check_scale(ArgCheck &c, const DLTensor *s, const char *name, const ScaleShape &expected,
                         bool per_tensor_allowed, const DLTensor *a, bool *per_element) {
  c.tensor(s, name).same_device(s, name, a, "a").dtype(s, name, {DType::f32});
  contiguous(c, s, name);
  if (!c.ok()) return nullptr;
  const bool one = per_tensor_allowed && ((s->ndim == 1 && s->shape[0] == 1) ||
                                          (s->ndim == 2 && s->shape[0] == 1 && s->shape[1] == 1));
  const bool shaped = s->ndim == expected.ndim && std::equal(expected.dims, expected.dims + expected.ndim, s->shape);
  DLTensor want{};  // shape_string reads only ndim and shape
  want.ndim = expected.ndim;
  want.shape = const_cast<int64_t *>(expected.dims);
  c.require(one || shaped, AITER_ERR_INVALID_ARGUMENT, "%s: expected shape %s = %s (%s)%s, got %s", name,
            expected.names, shape_string(&want).c_str(), expected.kind,
            per_tensor_allowed ? " or [1] / [1, 1] (per tensor)" : "", shape_string(s).c_str());
  *per_element = !one;
  return c.ok() ? data_ptr<const float>(s) : nullptr;
}

}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_gemm_a16w16(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                         const DLTensor *bias, void *stream) {
  const TunedOp<GemmArgs> &op = gemm_op(GemmOp::a16w16);
  return guard(op.symbol, [&] {
    ArgCheck c(op.symbol);
    GemmArgs g{};
    check_operands(c, g, out, a, w, bias, kFloatInputs, false);
    return c.ok() ? run_tuned(op, a, g, stream) : c.status();
  });
}

AITER_API aiter_status aiter_gemm_a8w8(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                       const DLTensor *a_scale, const DLTensor *w_scale,
                                       const DLTensor *bias, void *stream) {
  const TunedOp<GemmArgs> &op = gemm_op(GemmOp::a8w8);
  return guard(op.symbol, [&] {
    ArgCheck c(op.symbol);
    GemmArgs g{};
    check_operands(c, g, out, a, w, bias, kQuantInputs, false);
    const ScaleShape per_token{2, {g.m, 1}, "[M, 1]", "per token"};
    const ScaleShape per_channel{2, {1, g.n}, "[1, N]", "per channel"};
    g.a_scale = check_scale(c, a_scale, "a_scale", per_token, true, a, &g.a_scale_per_token);
    g.w_scale = check_scale(c, w_scale, "w_scale", per_channel, true, a, &g.w_scale_per_channel);
    return c.ok() ? run_tuned(op, a, g, stream) : c.status();
  });
}

}  // extern "C"
