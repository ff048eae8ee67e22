// aiter_batched_gemm_a16w16, aiter_batched_gemm_a8w8: B independent products,
// checked like their unbatched forms (ops/gemm_checks.hpp) with a leading
// batch dim, and the per-token / per-channel scales one row per matrix.
#include "core/error.hpp"
#include "ops/gemm_checks.hpp"

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_batched_gemm_a16w16(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                                 const DLTensor *bias, void *stream) {
  const TunedOp<GemmArgs> &op = gemm_op(GemmOp::batched_a16w16);
  return guard(op.symbol, [&] {
    ArgCheck c(op.symbol);
    GemmArgs g{};
    check_operands(c, g, out, a, w, bias, kFloatInputs, true);
    return c.ok() ? run_tuned(op, a, g, stream) : c.status();
  });
}

AITER_API aiter_status aiter_batched_gemm_a8w8(DLTensor *out, const DLTensor *a, const DLTensor *w,
                                               const DLTensor *a_scale, const DLTensor *w_scale,
                                               const DLTensor *bias, void *stream) {
  const TunedOp<GemmArgs> &op = gemm_op(GemmOp::batched_a8w8);
  return guard(op.symbol, [&] {
    ArgCheck c(op.symbol);
    GemmArgs g{};
    check_operands(c, g, out, a, w, bias, kQuantInputs, true);
    const ScaleShape per_token{3, {g.batch, g.m, 1}, "[B, M, 1]", "per token"};
    const ScaleShape per_channel{3, {g.batch, 1, g.n}, "[B, 1, N]", "per channel"};
    g.a_scale = check_scale(c, a_scale, "a_scale", per_token, true, a, &g.a_scale_per_token);
    g.w_scale = check_scale(c, w_scale, "w_scale", per_channel, true, a, &g.w_scale_per_channel);
    // Contiguous, so matrix b's scales follow matrix b - 1's; one per-tensor
    // scale serves every matrix.
    g.a_scale_batch_stride = g.a_scale_per_token ? g.m : 0;
    g.w_scale_batch_stride = g.w_scale_per_channel ? g.n : 0;
    return c.ok() ? run_tuned(op, a, g, stream) : c.status();
  });
}

}  // extern "C"
