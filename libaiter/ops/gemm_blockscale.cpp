// aiter_gemm_a8w8_blockscale: fp8 operands with one scale per token and
// 128-wide K group (A) and per 128 x 128 block (W), checked here, run by the
// selected kernel variant.
#include "core/error.hpp"
#include "ops/gemm_checks.hpp"

using namespace aiter;

namespace {
// ceil(extent / 128), free of overflow for any extent (an empty A may have K near INT64_MAX).
int64_t blocks_of(int64_t extent) { return extent / kScaleBlock + (extent % kScaleBlock != 0); }
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
    const ScaleShape per_group{2, {g.m, groups}, "[M, ceil(K / 128)]", "per token and 128-wide K group"};
    const ScaleShape per_block{2, {blocks_of(g.n), groups}, "[ceil(N / 128), ceil(K / 128)]",
                               "per 128 x 128 block of w"};
    bool shaped;  // always, as no per-tensor form is allowed
    g.a_scale = check_scale(c, a_scale, "a_scale", per_group, false, a, &shaped);
    g.w_scale = check_scale(c, w_scale, "w_scale", per_block, false, a, &shaped);
    g.block_scaled = true;
    return c.ok() ? run_tuned(op, a, g, stream) : c.status();
  });
}

}  // extern "C"
