// CPU rotary embedding: the (token, head) rows of q and k are spread over the
// worker threads; each row's rotated pairs are gathered into fp32 scratch, so
// the rotation itself is one contiguous loop gcc can vectorize.  NeoX rows
// (two contiguous halves) rotate on AVX-512 where the CPU has it.
#include <algorithm>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/isa.hpp"
#include "cpu/vec512.hpp"
#include "ops/rope.hpp"

namespace aiter {
namespace cpu {
namespace {

// cos and sin of one position as fp32, whatever the cache's dtype.
using CacheRowLoader = void (*)(const void *cache, int64_t position, int64_t rotary, float *cos, float *sin);

template <class C>
void load_cache_row(const void *cache, int64_t position, int64_t rotary, float *cos, float *sin) {
  const C *row = static_cast<const C *>(cache) + position * rotary;
  const int64_t half = rotary / 2;
  for (int64_t i = 0; i < half; ++i) cos[i] = to_f32(row[i]);
  for (int64_t i = 0; i < half; ++i) sin[i] = to_f32(row[half + i]);
}

int64_t position_at(const RopeArgs &a, int64_t token) {
  const int64_t at = token * a.pos_stride;
  return a.pos_dtype == DType::i32 ? int64_t(static_cast<const int32_t *>(a.positions)[at])
                                   : static_cast<const int64_t *>(a.positions)[at];
}

// Pair i is (x[i * Step], x[second + i * Step]): Step 1 with second = R/2 is
// NeoX (the two halves), Step 2 with second = 1 is GPT-J (interleaved).
template <class T, int Step>
void rotate_row(T *x, int64_t half, const float *__restrict cos, const float *__restrict sin,
                float *__restrict x1, float *__restrict x2) {
  const int64_t second = Step == 1 ? half : 1;
  for (int64_t i = 0; i < half; ++i) {
    x1[i] = to_f32(x[i * Step]);
    x2[i] = to_f32(x[second + i * Step]);
  }
  for (int64_t i = 0; i < half; ++i) {
    const float a = x1[i], b = x2[i];
    x1[i] = a * cos[i] - b * sin[i];
    x2[i] = b * cos[i] + a * sin[i];
  }
  for (int64_t i = 0; i < half; ++i) {
    x[i * Step] = from_f32<T>(x1[i]);
    x[second + i * Step] = from_f32<T>(x2[i]);
  }
}

#ifdef AITER_VEC512
// NeoX on AVX-512: 16 pairs a step straight from the two halves, the same fp32
// products as rotate_row and one rounding to T.  Each step loads both halves
// before it stores either, so the row is rotated in place.
template <class T>
__attribute__((target(AITER_TARGET_VEC512))) void rotate_neox_avx512(T *x, int64_t half, const float *cos,
                                                                     const float *sin) {
  for (int64_t i = 0; i < half; i += 16) {
    const int64_t n = half - i;
    const __m512 a = vec512::load(x + i, n), b = vec512::load(x + half + i, n);
    const __m512 c = vec512::load(cos + i, n), s = vec512::load(sin + i, n);
    vec512::store(x + i, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)), n);
    vec512::store(x + half + i, _mm512_fmadd_ps(b, c, _mm512_mul_ps(a, s)), n);
  }
}
#endif

template <class T, int Step>
void rotate(T *x, int64_t half, const float *cos, const float *sin, float *x1, float *x2, bool vector) {
#ifdef AITER_VEC512
  if (Step == 1 && vector) return rotate_neox_avx512(x, half, cos, sin);
#endif
  (void)vector;
  rotate_row<T, Step>(x, half, cos, sin, x1, x2);
}

// The row of flat index `item`: the q heads of a token come first, then its k heads.
template <class T>
T *row_at(const RopeArgs &a, int64_t item, int64_t *token) {
  const int64_t heads = a.q.heads + a.k.heads;
  *token = item / heads;
  int64_t head = item % heads;
  const RopeHeads &h = head < a.q.heads ? a.q : a.k;
  if (head >= a.q.heads) head -= a.q.heads;
  return static_cast<T *>(h.data) + *token * h.token_stride + head * h.head_stride;
}

template <class T, int Step>
void rope_rows(const RopeArgs &a, CacheRowLoader load) {
  const int64_t half = a.rotary_dim / 2;
  const int64_t items = a.tokens * (a.q.heads + a.k.heads);
  const int64_t grain = std::max<int64_t>(1, 16384 / a.rotary_dim);
  const bool vector = isa_at_least(Isa::avx512);
  parallel_for(items, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(size_t(4 * half));
    float *cos = scratch.data(), *sin = cos + half, *x1 = sin + half, *x2 = x1 + half;
    int64_t loaded = -1;  // the token whose cos/sin are in scratch
    for (int64_t item = begin; item < end; ++item) {
      int64_t token;
      T *x = row_at<T>(a, item, &token);
      if (token != loaded) {
        load(a.cache, position_at(a, token), a.rotary_dim, cos, sin);
        loaded = token;
      }
      rotate<T, Step>(x, half, cos, sin, x1, x2, vector);
    }
  });
}

}  // namespace

aiter_status rope(const RopeArgs &a) {
  if (a.tokens == 0 || a.q.heads + a.k.heads == 0) return AITER_OK;
  const CacheRowLoader load =
      visit_float(a.cache_dtype, [](auto tag) -> CacheRowLoader { return load_cache_row<decltype(tag)>; });
  visit_float(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (a.style == AITER_ROPE_NEOX)
      rope_rows<T, 1>(a, load);
    else
      rope_rows<T, 2>(a, load);
  });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
