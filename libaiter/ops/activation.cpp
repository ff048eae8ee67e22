// aiter_silu_and_mul, aiter_gelu_and_mul, aiter_silu_and_mul_quant: argument
// checks and dispatch.
#include "ops/activation.hpp"

#include "core/backend.hpp"
#include "core/caller_values.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

const OpImpl<ActivationArgs> kSiluAndMul{"aiter_silu_and_mul", cpu::silu_and_mul, gpu::silu_and_mul};
const OpImpl<ActivationArgs> kGeluAndMul{"aiter_gelu_and_mul", cpu::gelu_and_mul, gpu::gelu_and_mul};
const OpImpl<ActivationArgs> kSiluAndMulQuant{"aiter_silu_and_mul_quant", cpu::silu_and_mul_quant,
                                              gpu::silu_and_mul_quant};

// x [..., 2d] and out [..., d] with the same leading dims, on one device; the
// dtypes are checked by the caller.
void check_halves(ArgCheck &c, ActivationArgs &a, DLTensor *out, const DLTensor *x) {
  c.same_device(out, "out", x, "x");
  if (!c.ok()) return;
  const int last = x->ndim - 1;
  const int64_t width = x->shape[last];
  c.require(width % 2 == 0, AITER_ERR_INVALID_ARGUMENT,
            "x: expected an even last dim (the gate and the up halves), got shape %s", shape_string(x).c_str());
  c.ndim(out, "out", x->ndim);
  for (int i = 0; i < last; ++i) c.dim(out, "out", i, x->shape[i], "the same dim of x");
  c.dim(out, "out", last, width / 2, "half the last dim of x");
  c.rows(x, "x", &a.x_rows).rows(out, "out", &a.out_rows);
  if (!c.ok()) return;
  a.dtype = dtype_of(x->dtype);
  a.x = data_ptr<const void>(x);
  a.out = data_ptr<void>(out);
}

// x in a float dtype, out in the same.
void check_gated(ArgCheck &c, ActivationArgs &a, DLTensor *out, const DLTensor *x) {
  c.tensor(x, "x").tensor(out, "out");
  c.min_ndim(x, "x", 1).dtype(x, "x", {DType::f32, DType::f16, DType::bf16});
  c.same_dtype(out, "out", x, "x");
  check_halves(c, a, out, x);
}

// One fp32 scale per row: x's shape with the last dim 1, compact so that row r's scale is scale[r].
void check_row_scale(ArgCheck &c, ActivationArgs &a, DLTensor *scale, const DLTensor *x) {
  if (!c.ok()) return;  // x may be null, and x->ndim is read below
  c.dtype(scale, "scale", {DType::f32}).same_device(scale, "scale", x, "x").ndim(scale, "scale", x->ndim);
  for (int i = 0; i + 1 < x->ndim; ++i) c.dim(scale, "scale", i, x->shape[i], "the same dim of x");
  c.dim(scale, "scale", -1, 1, "one scale per row of x").contiguous(scale, "scale");
  if (!c.ok()) return;
  a.scale = data_ptr<float>(scale);
  a.scale_count = numel(scale);
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_silu_and_mul(DLTensor *out, const DLTensor *x, void *stream) {
  return guard(kSiluAndMul.name, [&] {
    ArgCheck c(kSiluAndMul.name);
    ActivationArgs a{};
    check_gated(c, a, out, x);
    return c.ok() ? run(kSiluAndMul, x, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_gelu_and_mul(DLTensor *out, const DLTensor *x, aiter_gelu_approx approx,
                                          void *stream) {
  return guard(kGeluAndMul.name, [&] {
    ArgCheck c(kGeluAndMul.name);
    ActivationArgs a{};
    check_gated(c, a, out, x);
    // The enum arrives from C as any int; only the two declared values mean something.
    const int32_t approx_value = enum_value(approx);
    c.require(approx_value == AITER_GELU_EXACT || approx_value == AITER_GELU_TANH, AITER_ERR_INVALID_ARGUMENT,
              "approx: expected AITER_GELU_EXACT (0) or AITER_GELU_TANH (1), got %d", int(approx_value));
    a.approx = approx_value == AITER_GELU_TANH ? AITER_GELU_TANH : AITER_GELU_EXACT;
    return c.ok() ? run(kGeluAndMul, x, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_silu_and_mul_quant(DLTensor *out, DLTensor *scale, const DLTensor *x, void *stream) {
  return guard(kSiluAndMulQuant.name, [&] {
    ArgCheck c(kSiluAndMulQuant.name);
    ActivationArgs a{};
    c.tensor(out, "out").tensor(scale, "scale").tensor(x, "x");
    c.min_ndim(x, "x", 1).dtype(x, "x", {DType::f32, DType::f16, DType::bf16});
    c.dtype(out, "out", {DType::i8, DType::e4m3fn, DType::e4m3fnuz, DType::e5m2});
    check_halves(c, a, out, x);
    check_row_scale(c, a, scale, x);
    if (!c.ok()) return c.status();
    a.quant_dtype = dtype_of(out->dtype);
    return run(kSiluAndMulQuant, x, a, stream);
  });
}

}  // extern "C"
