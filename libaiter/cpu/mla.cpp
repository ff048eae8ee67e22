// CPU MLA decode (the reference backend): per sequence, its visible latent rows
// are converted once to fp32 (fp8 dequantized with kv_scale), then every new
// token and query head attends over them: logits against the whole 576-wide
// rows, values their first 512 elements.  The split plan is a GPU matter: the
// CPU computes each row in one pass and never touches the workspace.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.hpp"
#include "ops/mla.hpp"

namespace aiter {
namespace cpu {
namespace {

constexpr int64_t D = kMlaLatentDim, DV = kMlaValueDim;

// Latent rows 0..len-1 of sequence b, as fp32, through its block-table row.
template <class C>
void gather_latents(const MlaDecodeArgs &a, int64_t b, int64_t len, std::vector<float> &rows) {
  rows.resize(size_t(len * D));
  const int32_t *blocks = a.block_table + b * a.block_table_stride;
  const C *cache = static_cast<const C *>(a.kv_cache);
  for (int64_t j = 0; j < len; ++j) {
    const int64_t slot = int64_t(blocks[j / a.page_size]) * a.page_size + j % a.page_size;
    const C *src = cache + slot * D;
    for (int64_t d = 0; d < D; ++d) rows[size_t(j * D + d)] = to_f32(src[d]) * a.kv_scale;
  }
}

// One row (new token, head): softmax over positions [0, visible) of the latents.
template <class T>
void attend_row(const MlaDecodeArgs &a, const T *q, const std::vector<float> &latents, int64_t visible,
                std::vector<float> &logits, T *out, float *lse) {
  float qf[D];
  for (int64_t d = 0; d < D; ++d) qf[d] = to_f32(q[d]);
  float top = -std::numeric_limits<float>::infinity();
  logits.resize(size_t(std::max<int64_t>(visible, 1)));
  for (int64_t j = 0; j < visible; ++j) {
    const float *k = &latents[size_t(j * D)];
    float dot = 0.0f;
    for (int64_t d = 0; d < D; ++d) dot += qf[d] * k[d];
    logits[size_t(j)] = dot * a.softmax_scale;
    top = std::max(top, logits[size_t(j)]);
  }
  float acc[DV] = {};
  double total = 0.0;
  for (int64_t j = 0; j < visible; ++j) {
    const float p = std::exp(logits[size_t(j)] - top);
    total += p;
    const float *v = &latents[size_t(j * D)];
    for (int64_t d = 0; d < DV; ++d) acc[d] += p * v[d];
  }
  const float inv = total > 0.0 ? float(1.0 / total) : 0.0f;
  for (int64_t d = 0; d < DV; ++d) out[d] = from_f32<T>(acc[d] * inv);
  if (lse != nullptr)
    *lse = visible > 0 ? float(double(top) + std::log(total)) : -std::numeric_limits<float>::infinity();
}

template <class T, class C>
void decode(const MlaDecodeArgs &a) {
  const int64_t heads = a.q_heads, tokens = a.q_tokens;
  parallel_for(a.batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> latents, logits;
    for (int64_t b = begin; b < end; ++b) {
      const int64_t len = a.context_lens[b];
      gather_latents<C>(a, b, len, latents);
      for (int64_t i = 0; i < tokens; ++i) {
        const int64_t visible = std::max<int64_t>(len - tokens + i + 1, 0);  // causal among the new tokens
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t row = (b * tokens + i) * heads + h;
          attend_row<T>(a, static_cast<const T *>(a.q) + row * D, latents, visible, logits,
                        static_cast<T *>(a.out) + row * DV, a.lse != nullptr ? a.lse + row : nullptr);
        }
      }
    }
  });
}

// One 576-wide cache row from the token's kv_c (512) and k_pe (64).
template <class T, class C>
void write_row(const MlaCacheWriteArgs &a, int64_t t, C *dst) {
  const T *kv_c = static_cast<const T *>(a.kv_c) + t * a.kv_c_stride;
  const T *k_pe = static_cast<const T *>(a.k_pe) + t * a.k_pe_stride;
  for (int64_t d = 0; d < D; ++d) {
    const T x = d < DV ? kv_c[d] : k_pe[d - DV];
    if constexpr (std::is_same_v<C, T>)
      dst[d] = x;  // a bit-exact copy
    else
      dst[d] = from_f32<C>(to_f32(x) / a.scale);
  }
}

template <class T, class C>
void write_cache(const MlaCacheWriteArgs &a) {
  parallel_for(a.tokens, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t slot = a.slots_are_int64 ? static_cast<const int64_t *>(a.slot_mapping)[t]
                                             : static_cast<const int32_t *>(a.slot_mapping)[t];
      if (slot >= 0) write_row<T, C>(a, t, static_cast<C *>(a.kv_cache) + slot * D);  // negative: padding
    }
  });
}

}  // namespace

aiter_status mla_decode(const MlaDecodeArgs &a) {
  if (a.batch == 0 || a.q_heads == 0) return AITER_OK;
  visit_float(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (is_fp8(a.cache_dtype))
      visit_fp8(a.cache_dtype, [&](auto cache_tag) { decode<T, decltype(cache_tag)>(a); });
    else
      decode<T, T>(a);
  });
  return AITER_OK;
}

aiter_status concat_and_cache_mla(const MlaCacheWriteArgs &a) {
  visit_float(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (is_fp8(a.cache_dtype))
      visit_fp8(a.cache_dtype, [&](auto cache_tag) { write_cache<T, decltype(cache_tag)>(a); });
    else
      write_cache<T, T>(a);
  });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
