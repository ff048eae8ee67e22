// Checked arguments of the mixture-of-experts routing ops, shared by every backend.
#pragma once

#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

struct TopkSoftmaxArgs {
  DType dtype;  // of gating: fp32, fp16 or bf16
  const void *gating;
  RowView gating_rows;  // tokens x experts
  float *weights;       // fp32
  RowView weights_rows;  // tokens x k
  int32_t *ids;
  RowView ids_rows;  // tokens x k
  bool renormalize;
};

namespace cpu {
aiter_status topk_softmax(const TopkSoftmaxArgs &a);
}  // namespace cpu

}  // namespace aiter
