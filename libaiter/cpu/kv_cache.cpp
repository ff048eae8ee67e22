// CPU write of new keys and values into the paged cache: token t goes to slot
// slot_mapping[t] (validated), quantized to fp8 as x / scale when the cache is fp8.
#include <cstring>
#include <type_traits>

#include "core/parallel.hpp"
#include "cpu/attention_tile.hpp"
#include "cpu/isa.hpp"
#include "cpu/quantize.hpp"
#include "ops/attention.hpp"

namespace aiter {
namespace cpu {
namespace {

#ifdef AITER_VEC512
// x / scale (a division, as the scalar loop and the GPU kernel do, so that the
// codes agree bit for bit) for 16 elements at a time.
template <class C, class T>
__attribute__((target(AITER_TARGET_VEC512))) void quantize_row_avx512(C *dst, const T *src, int64_t d, float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < d; i += 16)
    vec512::store_bytes(dst + i, codes_of<C>(_mm512_div_ps(vec512::load(src + i, d - i), s)), d - i);
}
#endif

// One head row: a copy when the cache holds the source type, else x / scale in fp8.
template <class C, class T>
void store_row(C *dst, const T *src, int64_t d, float scale) {
  if constexpr (std::is_same_v<C, T>) {
    std::memcpy(dst, src, size_t(d) * sizeof(T));
  } else {
#ifdef AITER_VEC512
    if (isa_at_least(Isa::avx512)) return quantize_row_avx512(dst, src, d, scale);
#endif
    for (int64_t i = 0; i < d; ++i) dst[i] = from_f32<C>(to_f32(src[i]) / scale);
  }
}

int64_t slot_of(const CacheWriteArgs &a, int64_t t) {
  return a.slots_are_int64 ? static_cast<const int64_t *>(a.slot_mapping)[t]
                           : static_cast<const int32_t *>(a.slot_mapping)[t];
}

template <class T, class C>
void write_cache(const CacheWriteArgs &a) {
  const int64_t heads = a.kv_heads, d = a.head_dim;
  parallel_for(a.tokens, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t slot = slot_of(a, t);
      if (slot < 0) continue;  // padding
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t offset = (slot * heads + h) * d;
        store_row(static_cast<C *>(a.k_cache) + offset, attn::at<T>(a.key, a.key_strides, t, h), d, a.k_scale);
        store_row(static_cast<C *>(a.v_cache) + offset, attn::at<T>(a.value, a.value_strides, t, h), d, a.v_scale);
      }
    }
  });
}

}  // namespace

aiter_status reshape_and_cache(const CacheWriteArgs &a) {
  visit_cached(a.dtype, a.cache_dtype, [&](auto t, auto c) { write_cache<decltype(t), decltype(c)>(a); });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
