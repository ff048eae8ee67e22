// aiter_silu_and_mul, aiter_gelu_and_mul: argument checks and dispatch.
#include "ops/activation.hpp"

#include "core/backend.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

const OpImpl<ActivationArgs> kSiluAndMul{"aiter_silu_and_mul", cpu::silu_and_mul, nullptr};
const OpImpl<ActivationArgs> kGeluAndMul{"aiter_gelu_and_mul", cpu::gelu_and_mul, nullptr};

// x [..., 2d] and out [..., d]: same dtype, device and leading dims.
void check_gated(ArgCheck &c, ActivationArgs &a, DLTensor *out, const DLTensor *x) {
  c.tensor(x, "x").tensor(out, "out");
  c.min_ndim(x, "x", 1).dtype(x, "x", {DType::f32, DType::f16, DType::bf16});
  c.same_dtype(out, "out", x, "x").same_device(out, "out", x, "x");
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
    c.require(approx == AITER_GELU_EXACT || approx == AITER_GELU_TANH, AITER_ERR_INVALID_ARGUMENT,
              "approx: expected AITER_GELU_EXACT (0) or AITER_GELU_TANH (1), got %d", int(approx));
    a.approx = approx;
    return c.ok() ? run(kGeluAndMul, x, a, stream) : c.status();
  });
}

}  // extern "C"
