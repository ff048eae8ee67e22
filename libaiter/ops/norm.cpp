// aiter_rmsnorm, aiter_add_rmsnorm, aiter_layernorm: argument checks and dispatch.
#include "ops/norm.hpp"

#include <cmath>

#include "core/backend.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

const OpImpl<NormArgs> kRmsNorm{"aiter_rmsnorm", cpu::rmsnorm, gpu::rmsnorm};
const OpImpl<NormArgs> kAddRmsNorm{"aiter_add_rmsnorm", cpu::add_rmsnorm, gpu::add_rmsnorm};
const OpImpl<NormArgs> kLayerNorm{"aiter_layernorm", cpu::layernorm, gpu::layernorm};
const OpImpl<NormArgs> kRmsNormQuant{"aiter_rmsnorm_quant", cpu::rmsnorm_quant, gpu::rmsnorm_quant};
const OpImpl<NormArgs> kAddRmsNormQuant{"aiter_add_rmsnorm_quant", cpu::add_rmsnorm_quant, gpu::add_rmsnorm_quant};

// x and out (same shape; same dtype unless quantized), weight [H] and, when given, bias [H].
void check_common(ArgCheck &c, NormArgs &a, DLTensor *out, const DLTensor *x, const DLTensor *weight,
                  const DLTensor *bias, float epsilon, bool quantized = false) {
  c.tensor(x, "x").tensor(weight, "weight").optional(bias, "bias").tensor(out, "out");
  c.min_ndim(x, "x", 1).dtype(x, "x", {DType::f32, DType::f16, DType::bf16});
  c.same_shape(out, "out", x, "x");
  if (quantized)
    c.dtype(out, "out", {DType::i8, DType::e4m3fn, DType::e4m3fnuz, DType::e5m2});
  else
    c.same_dtype(out, "out", x, "x");
  c.same_device(weight, "weight", x, "x").same_device(bias, "bias", x, "x").same_device(out, "out", x, "x");
  c.rows(x, "x", &a.x_rows).rows(out, "out", &a.out_rows);
  if (!c.ok()) return;
  const int64_t hidden = a.x_rows.cols;
  c.ndim(weight, "weight", 1).dim(weight, "weight", 0, hidden, "the last dim of x").contiguous(weight, "weight");
  c.dtype(weight, "weight", {dtype_of(x->dtype), DType::f32});
  if (bias != nullptr) {
    c.ndim(bias, "bias", 1).dim(bias, "bias", 0, hidden, "the last dim of x").contiguous(bias, "bias");
    c.same_dtype(bias, "bias", weight, "weight");
  }
  c.require(std::isfinite(epsilon) && epsilon >= 0.0f, AITER_ERR_INVALID_ARGUMENT,
            "epsilon: expected a finite value >= 0, got %g", double(epsilon));
  if (!c.ok()) return;
  a.dtype = dtype_of(x->dtype);
  a.param_dtype = dtype_of(weight->dtype);
  a.x = data_ptr<const void>(x);
  a.weight = data_ptr<const void>(weight);
  a.bias = bias ? data_ptr<const void>(bias) : nullptr;
  a.out = data_ptr<void>(out);
  a.epsilon = epsilon;
}

// scale: x's shape with the last dim 1, fp32, compact, one value per row.
void check_scale(ArgCheck &c, NormArgs &a, DLTensor *out, DLTensor *scale, const DLTensor *x) {
  c.tensor(scale, "scale");
  if (!c.ok()) return;
  c.ndim(scale, "scale", x->ndim).dtype(scale, "scale", {DType::f32}).contiguous(scale, "scale");
  c.same_device(scale, "scale", x, "x");
  for (int d = 0; c.ok() && d + 1 < x->ndim; ++d) c.dim(scale, "scale", d, x->shape[d], "x's shape, last dim 1");
  c.dim(scale, "scale", -1, 1, "x's shape, last dim 1");
  if (!c.ok()) return;
  a.quant_dtype = dtype_of(out->dtype);
  a.scale = data_ptr<float>(scale);
  a.scale_count = numel(scale);
}

// residual [x's shape, x's dtype] read, residual_out written.
void check_residual(ArgCheck &c, NormArgs &a, DLTensor *residual_out, const DLTensor *x, const DLTensor *residual) {
  c.tensor(residual, "residual").tensor(residual_out, "residual_out");
  if (!c.ok()) return;
  c.same_shape(residual, "residual", x, "x").same_dtype(residual, "residual", x, "x");
  c.same_shape(residual_out, "residual_out", x, "x").same_dtype(residual_out, "residual_out", x, "x");
  c.same_device(residual, "residual", x, "x").same_device(residual_out, "residual_out", x, "x");
  c.rows(residual, "residual", &a.residual_rows).rows(residual_out, "residual_out", &a.residual_out_rows);
  if (!c.ok()) return;
  a.residual = data_ptr<const void>(residual);
  a.residual_out = data_ptr<void>(residual_out);
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_rmsnorm(DLTensor *out, const DLTensor *x, const DLTensor *weight, float epsilon,
                                     void *stream) {
  return guard(kRmsNorm.name, [&] {
    ArgCheck c(kRmsNorm.name);
    NormArgs a{};
    check_common(c, a, out, x, weight, nullptr, epsilon);
    return c.ok() ? run(kRmsNorm, x, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_add_rmsnorm(DLTensor *out, DLTensor *residual_out, const DLTensor *x,
                                         const DLTensor *residual, const DLTensor *weight, float epsilon,
                                         void *stream) {
  return guard(kAddRmsNorm.name, [&] {
    ArgCheck c(kAddRmsNorm.name);
    NormArgs a{};
    c.tensor(residual, "residual").tensor(residual_out, "residual_out");
    check_common(c, a, out, x, weight, nullptr, epsilon);
    check_residual(c, a, residual_out, x, residual);
    return c.ok() ? run(kAddRmsNorm, x, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_layernorm(DLTensor *out, const DLTensor *x, const DLTensor *weight,
                                       const DLTensor *bias, float epsilon, void *stream) {
  return guard(kLayerNorm.name, [&] {
    ArgCheck c(kLayerNorm.name);
    NormArgs a{};
    check_common(c, a, out, x, weight, bias, epsilon);
    return c.ok() ? run(kLayerNorm, x, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_rmsnorm_quant(DLTensor *out, DLTensor *scale, const DLTensor *x, const DLTensor *weight,
                                           float epsilon, void *stream) {
  return guard(kRmsNormQuant.name, [&] {
    ArgCheck c(kRmsNormQuant.name);
    NormArgs a{};
    check_common(c, a, out, x, weight, nullptr, epsilon, true);
    check_scale(c, a, out, scale, x);
    return c.ok() ? run(kRmsNormQuant, x, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_add_rmsnorm_quant(DLTensor *out, DLTensor *scale, DLTensor *residual_out,
                                               const DLTensor *x, const DLTensor *residual, const DLTensor *weight,
                                               float epsilon, void *stream) {
  return guard(kAddRmsNormQuant.name, [&] {
    ArgCheck c(kAddRmsNormQuant.name);
    NormArgs a{};
    c.tensor(residual, "residual").tensor(residual_out, "residual_out");
    check_common(c, a, out, x, weight, nullptr, epsilon, true);
    check_scale(c, a, out, scale, x);
    check_residual(c, a, residual_out, x, residual);
    return c.ok() ? run(kAddRmsNormQuant, x, a, stream) : c.status();
  });
}

}  // extern "C"
