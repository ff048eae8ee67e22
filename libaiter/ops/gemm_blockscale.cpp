// aiter_gemm_a8w8_blockscale: fp8 operands with one scale per token and
// 128-wide K group (A, row- or column-major) and per 128 x 128 block (W),
// checked here, run by the selected kernel variant.
#include "core/error.hpp"
#include "ops/gemm_checks.hpp"

using namespace aiter;

namespace {
// ceil(extent / 128), free of overflow for any extent (an empty A may have K near INT64_MAX).
int64_t blocks_of(int64_t extent) { return extent / kScaleBlock + (extent % kScaleBlock != 0); }

// a_scale [M, groups], fp32, on a's device, laid out row-major (strides
// (groups, 1)) or column-major (strides (1, M): the transpose of a [groups, M]
// tensor, which F.scaled_mm requires and vLLM's per-token-group quant writes
// with column_major_scales).  The strides of extent-1 dims mean nothing, so a
// single row or group is row-major either way.
void check_a_scale(ArgCheck &c, GemmArgs &g, const DLTensor *s, const DLTensor *a, int64_t groups) {
  c.tensor(s, "a_scale").same_device(s, "a_scale", a, "a").dtype(s, "a_scale", {DType::f32});
  if (!c.ok()) return;
  c.require(s->ndim == 2 && s->shape[0] == g.m && s->shape[1] == groups, AITER_ERR_INVALID_ARGUMENT,
            "a_scale: expected shape [M, ceil(K / 128)] = [%lld, %lld] (per token and 128-wide K group), got %s",
            (long long)g.m, (long long)groups, shape_string(s).c_str());
  if (!c.ok()) return;
  const bool rows = g.m > 1 && numel(s) > 0, cols = groups > 1 && numel(s) > 0;
  const int64_t row_step = rows ? stride(s, 0) : groups, group_step = cols ? stride(s, 1) : 1;
  const bool row_major = row_step == groups && group_step == 1;
  const bool column_major = rows && cols && row_step == 1 && group_step == g.m;
  c.require(row_major || column_major, AITER_ERR_INVALID_ARGUMENT,
            "a_scale: expected strides (%lld, 1) (row-major) or (1, %lld) (column-major), got (%lld, %lld)",
            (long long)groups, (long long)g.m, (long long)row_step, (long long)group_step);
  if (!c.ok()) return;
  g.a_scale = data_ptr<const float>(s);
  g.a_scale_row_stride = row_major ? groups : 1;
  g.a_scale_group_stride = row_major ? 1 : g.m;
}
}  // namespace

extern "C" {

AITER_API aiter_status aiter_gemm_a8w8_blockscale(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                                  const DLTensor *a_scale, const DLTensor *w_scale,
                                                  void *stream) {
  const TunedOp<GemmArgs> &op = gemm_op(GemmOp::a8w8_blockscale);
  return guard(op.symbol, [&] {
    ArgCheck c(op.symbol);
    GemmArgs g{};
    check_operands(c, g, out, a, w, nullptr, {DType::e4m3fn, DType::e4m3fnuz}, false);
    const int64_t groups = blocks_of(g.k);
    const ScaleShape per_block{2, {blocks_of(g.n), groups}, "[ceil(N / 128), ceil(K / 128)]",
                               "per 128 x 128 block of w"};
    bool shaped;  // always, as no per-tensor form is allowed
    check_a_scale(c, g, a_scale, a, groups);
    g.w_scale = check_scale(c, w_scale, "w_scale", per_block, false, a, &shaped);
    g.block_scaled = true;
    return c.ok() ? run_tuned(op, a, g, stream) : c.status();
  });
}

}  // extern "C"
