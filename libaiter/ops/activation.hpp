// Checked arguments of the gated activations, shared by every backend.
#pragma once

#include "aiter/activation.h"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

struct ActivationArgs {
  DType dtype;      // of x and out
  const void *x;    // rows of 2*d: the gate, then the up projection
  RowView x_rows;
  void *out;        // rows of d
  RowView out_rows;
  aiter_gelu_approx approx;  // gelu_and_mul only
};

namespace cpu {
aiter_status silu_and_mul(const ActivationArgs &a);
aiter_status gelu_and_mul(const ActivationArgs &a);
}  // namespace cpu

}  // namespace aiter
