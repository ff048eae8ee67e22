// Checked arguments of the rotary position embedding, shared by every backend.
#pragma once

#include "aiter/rope.h"
#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace aiter {

// One of q or k: [tokens, heads, head_dim] with unit stride along head_dim.
struct RopeHeads {
  void *data = nullptr;  // null for an absent k
  int64_t heads = 0;
  int64_t token_stride = 0;  // in elements
  int64_t head_stride = 0;
};

struct RopeArgs {
  DType dtype;        // of q and k
  DType cache_dtype;  // fp32 or dtype
  DType pos_dtype;    // int32 or int64
  int64_t tokens;
  int64_t head_dim;
  int64_t rotary_dim;  // R: even, 2 <= R <= head_dim
  int64_t max_position;
  RopeHeads q, k;
  const void *positions;  // host tensors: every value checked to be in [0, max_position);
                          // device tensors: unread, the kernels bounds-check each one
  int64_t pos_stride;
  const void *cache;  // [max_position, rotary_dim], compact
  aiter_rope_style style;
};

namespace cpu {
aiter_status rope(const RopeArgs &a);
}  // namespace cpu

namespace gpu {
aiter_status rope(const RopeArgs &a, const GpuCall &call);
}  // namespace gpu

}  // namespace aiter
