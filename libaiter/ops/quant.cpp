// aiter_quant_per_tensor_dynamic, aiter_quant_per_token_dynamic,
// aiter_quant_per_tensor_static: argument checks and dispatch.
#include "ops/quant.hpp"

#include <cfloat>
#include <cmath>

#include "core/backend.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

const OpImpl<QuantArgs> kPerTensorDynamic{"aiter_quant_per_tensor_dynamic", cpu::quant_per_tensor_dynamic,
                                            gpu::quant_per_tensor_dynamic};
const OpImpl<QuantArgs> kPerTokenDynamic{"aiter_quant_per_token_dynamic", cpu::quant_per_token_dynamic,
                                           gpu::quant_per_token_dynamic};
const OpImpl<QuantArgs> kPerTensorStatic{"aiter_quant_per_tensor_static", cpu::quant_per_tensor_static,
                                           gpu::quant_per_tensor_static};

// x [..., H] in a float dtype, out of x's shape in an 8-bit dtype; null checks done by the caller.
void check_x_out(ArgCheck &c, QuantArgs &a, DLTensor *out, const DLTensor *x) {
  c.min_ndim(x, "x", 1).dtype(x, "x", {DType::f32, DType::f16, DType::bf16});
  c.dtype(out, "out", {DType::i8, DType::e4m3fn, DType::e4m3fnuz, DType::e5m2});
  c.same_shape(out, "out", x, "x").same_device(out, "out", x, "x");
  c.rows(x, "x", &a.x_rows).rows(out, "out", &a.out_rows);
  if (!c.ok()) return;
  a.x_dtype = dtype_of(x->dtype);
  a.out_dtype = dtype_of(out->dtype);
  a.x = data_ptr<const void>(x);
  a.out = data_ptr<void>(out);
}

// Every scale is fp32, next to x; the single one is [1] or [1, 1].
void check_single_scale(ArgCheck &c, const DLTensor *scale, const DLTensor *x) {
  c.dtype(scale, "scale", {DType::f32}).same_device(scale, "scale", x, "x");
  if (!c.ok()) return;
  const bool single = (scale->ndim == 1 || scale->ndim == 2) && numel(scale) == 1;
  c.require(single, AITER_ERR_INVALID_ARGUMENT, "scale: expected shape [1] or [1, 1], got %s",
            shape_string(scale).c_str());
}

// One scale per row: x's shape with the last dim 1, compact so that row r's scale is scale[r].
void check_token_scale(ArgCheck &c, const DLTensor *scale, const DLTensor *x) {
  if (!c.ok()) return;  // x and scale may be NULL
  c.dtype(scale, "scale", {DType::f32}).same_device(scale, "scale", x, "x").ndim(scale, "scale", x->ndim);
  for (int i = 0; i + 1 < x->ndim; ++i) c.dim(scale, "scale", i, x->shape[i], "the same dim of x");
  c.dim(scale, "scale", -1, 1, "one scale per row of x").contiguous(scale, "scale");
}

// A static scale is data, but on the host it can be read before anything is written:
// a scale that is not a normal positive number would turn the output into inf / NaN.
void check_static_scale_value(ArgCheck &c, const DLTensor *scale) {
  if (!c.ok() || scale->device.device_type != kDLCPU) return;
  const float s = *data_ptr<const float>(scale);
  c.require(std::isfinite(s) && s >= FLT_MIN, AITER_ERR_INVALID_ARGUMENT,
            "scale: expected a finite value >= %g (FLT_MIN), got %g", double(FLT_MIN), double(s));
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_quant_per_tensor_dynamic(DLTensor *out, DLTensor *scale, const DLTensor *x,
                                                      void *stream) {
  return guard(kPerTensorDynamic.name, [&] {
    ArgCheck c(kPerTensorDynamic.name);
    QuantArgs a{};
    c.tensor(out, "out").tensor(scale, "scale").tensor(x, "x");
    check_x_out(c, a, out, x);
    check_single_scale(c, scale, x);
    if (!c.ok()) return c.status();
    a.scale = data_ptr<float>(scale);
    a.scale_count = 1;
    return run(kPerTensorDynamic, x, a, stream);
  });
}

AITER_API aiter_status aiter_quant_per_token_dynamic(DLTensor *out, DLTensor *scale, const DLTensor *x,
                                                     void *stream) {
  return guard(kPerTokenDynamic.name, [&] {
    ArgCheck c(kPerTokenDynamic.name);
    QuantArgs a{};
    c.tensor(out, "out").tensor(scale, "scale").tensor(x, "x");
    check_x_out(c, a, out, x);
    check_token_scale(c, scale, x);
    if (!c.ok()) return c.status();
    a.scale = data_ptr<float>(scale);
    a.scale_count = numel(scale);
    return run(kPerTokenDynamic, x, a, stream);
  });
}

AITER_API aiter_status aiter_quant_per_tensor_static(DLTensor *out, const DLTensor *x, const DLTensor *scale,
                                                     void *stream) {
  return guard(kPerTensorStatic.name, [&] {
    ArgCheck c(kPerTensorStatic.name);
    QuantArgs a{};
    c.tensor(out, "out").tensor(x, "x").tensor(scale, "scale");
    check_x_out(c, a, out, x);
    check_single_scale(c, scale, x);
    check_static_scale_value(c, scale);
    if (!c.ok()) return c.status();
    a.scale_in = data_ptr<const float>(scale);
    return run(kPerTensorStatic, x, a, stream);
  });
}

}  // extern "C"
