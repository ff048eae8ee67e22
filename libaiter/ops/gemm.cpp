// aiter_gemm_a16w16, aiter_gemm_a8w8: argument checks and dispatch to the
// selected kernel variant (tuning/select.hpp).
#include "ops/gemm.hpp"

#include <iterator>

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

}  // namespace

const TunedOp<GemmArgs> &gemm_op(GemmOp op) {
  static const auto table = [] {
    std::vector<TunedOp<GemmArgs>> t;
    for (const OpNames &o : kOpNames)
      t.push_back(TunedOp<GemmArgs>{o.symbol, o.name, cpu::gemm_variants(o.op), gpu::gemm_variants(o.op), gemm_key});
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

// Rows `row_stride` elements apart; a single row has no stride to speak of.
MatrixRef matrix_ref(const DLTensor *t) {
  return MatrixRef{data_ptr<const void>(t), t->shape[0] > 1 ? stride(t, 0) : t->shape[1]};
}

// A [M, K] and W [N, K] of one of `in_dtypes` (the same), out [M, N] (+ bias
// [N]): 2-D, unit stride along the rows, extents that agree, one device.
// Fills everything in `g` but the scales.
void check_operands(ArgCheck &c, GemmArgs &g, DLTensor *out, const DLTensor *a, const DLTensor *w,
                    const DLTensor *bias, std::initializer_list<DType> in_dtypes) {
  c.tensor(a, "a").tensor(w, "w").tensor(out, "out").optional(bias, "bias");
  c.ndim(a, "a", 2).ndim(w, "w", 2).ndim(out, "out", 2);
  c.dtype(a, "a", in_dtypes).same_dtype(w, "w", a, "a");
  c.same_device(w, "w", a, "a").same_device(out, "out", a, "a").same_device(bias, "bias", a, "a");
  unit_last_stride(c, a, "a"), unit_last_stride(c, w, "w"), unit_last_stride(c, out, "out");
  if (!c.ok()) return;
  g.m = a->shape[0];
  g.k = a->shape[1];
  g.n = w->shape[0];
  c.dim(w, "w", 1, g.k, "K, the last dim of a");
  c.dim(out, "out", 0, g.m, "M, the rows of a").dim(out, "out", 1, g.n, "N, the rows of w");
  c.dtype(out, "out", kOutDtypes);
  if (!c.ok()) return;
  g.out_dtype = dtype_of(out->dtype);
  // Overlapping output rows would be written by several threads at once.
  const int64_t out_stride = g.m > 1 ? stride(out, 0) : g.n;
  c.require(g.m <= 1 || g.n == 0 || out_stride >= g.n, AITER_ERR_INVALID_ARGUMENT,
            "out: rows overlap (row stride %lld < row length %lld)", (long long)out_stride, (long long)g.n);
  if (bias != nullptr) {
    c.ndim(bias, "bias", 1).dim(bias, "bias", 0, g.n, "N, the rows of w");
    contiguous(c, bias, "bias");
    if (g.out_dtype == DType::f32)
      c.dtype(bias, "bias", {DType::f32});
    else
      c.dtype(bias, "bias", {DType::f32, g.out_dtype});
  }
  if (!c.ok()) return;
  g.in_dtype = dtype_of(a->dtype);
  g.a = matrix_ref(a);
  g.w = matrix_ref(w);
  g.out = data_ptr<void>(out);
  g.out_row_stride = out_stride;
  g.bias = bias ? data_ptr<const void>(bias) : nullptr;
  g.bias_dtype = bias ? dtype_of(bias->dtype) : DType::unknown;
}

// A scale with one value per row of the output ([len, 1], when per_row) or per
// column ([1, len]), or one for the whole tensor ([1] or [1, 1]); fp32,
// contiguous.  Returns its data and sets *per_element when it has `len` values.
const float *check_scale(ArgCheck &c, const DLTensor *s, const char *name, bool per_row, int64_t len,
                         const char *len_name, const DLTensor *ref, bool *per_element) {
  c.tensor(s, name).same_device(s, name, ref, "a").dtype(s, name, {DType::f32});
  contiguous(c, s, name);
  if (!c.ok()) return nullptr;
  const bool one = (s->ndim == 1 && s->shape[0] == 1) || (s->ndim == 2 && s->shape[0] == 1 && s->shape[1] == 1);
  const bool vector = s->ndim == 2 && s->shape[per_row ? 0 : 1] == len && s->shape[per_row ? 1 : 0] == 1;
  const long long n = (long long)len;
  c.require(one || vector, AITER_ERR_INVALID_ARGUMENT,
            per_row ? "%s: expected shape [%s, 1] = [%lld, 1] (per token) or [1] / [1, 1] (per tensor), got %s"
                    : "%s: expected shape [1, %s] = [1, %lld] (per channel) or [1] / [1, 1] (per tensor), got %s",
            name, len_name, n, shape_string(s).c_str());
  *per_element = !one;
  return c.ok() ? data_ptr<const float>(s) : nullptr;
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_gemm_a16w16(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                         const DLTensor *bias, void *stream) {
  const TunedOp<GemmArgs> &op = gemm_op(GemmOp::a16w16);
  return guard(op.symbol, [&] {
    ArgCheck c(op.symbol);
    GemmArgs g{};
    check_operands(c, g, out, a, w, bias, {DType::f32, DType::f16, DType::bf16});
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
    check_operands(c, g, out, a, w, bias, {DType::i8, DType::e4m3fn, DType::e4m3fnuz, DType::e5m2});
    g.a_scale = check_scale(c, a_scale, "a_scale", true, g.m, "M", a, &g.a_scale_per_token);
    g.w_scale = check_scale(c, w_scale, "w_scale", false, g.n, "N", a, &g.w_scale_per_channel);
    return c.ok() ? run_tuned(op, a, g, stream) : c.status();
  });
}

}  // extern "C"
