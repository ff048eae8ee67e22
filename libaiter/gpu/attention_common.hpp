// What the attention launchers (gpu/attention_decode.cpp, gpu/attention_prefill.cpp)
// share: the softmax settings every kernel takes, and alignment tests.
#pragma once

#include <cstdint>

#include "kernels/attention/attention_params.h"
#include "kernels/common/quant_kind.h"
#include "ops/attention.hpp"

namespace aiter {
namespace gpu {

inline QuantKind attention_quant_kind(DType cache) {
  switch (cache) {
    case DType::e4m3fn: return kQuantE4m3fn;
    case DType::e4m3fnuz: return kQuantE4m3fnuz;
    case DType::e5m2: return kQuantE5m2;
    default: return kQuantNone;
  }
}

inline SoftmaxParams softmax_params(const AttentionShape &s, float k_scale, float v_scale, DType cache) {
  SoftmaxParams p{};
  p.scale = s.softmax_scale;
  p.softcap = s.softcap;
  p.k_scale = k_scale;
  p.v_scale = v_scale;
  p.window_left = s.window_left;
  p.quant = attention_quant_kind(cache);
  return p;
}

// The Triton prefill kernel (attention_prefill_triton.cpp) where this build has
// it and the call fits it; *taken false otherwise (nothing launched).
aiter_status prefill_attention_triton(const PrefillArgs &a, const GpuCall &call, bool *taken);

inline bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Every row of a [tokens, heads, D] tensor starts on a 16-byte boundary (the
// stride of a dim of extent 1 is never used, so it may be anything).
inline bool rows_aligned16(const void *data, const TokenHeadStrides &s, int64_t tokens, int64_t heads,
                           int64_t per_16_bytes) {
  return aligned16(data) && (tokens <= 1 || s.token % per_16_bytes == 0) && (heads <= 1 || s.head % per_16_bytes == 0);
}

}  // namespace gpu
}  // namespace aiter
