// CPU paged decode attention: one query token per sequence over its cached
// context.  Work items are (sequence, kv head); the group's query heads share each
// gathered K/V tile, dequantized from fp8 when the cache is fp8.
#include "core/parallel.hpp"
#include "cpu/attention_tile.hpp"
#include "ops/attention.hpp"

namespace aiter {
namespace cpu {
namespace {

// Sequence b, kv head g: its group of query heads over positions of the context.
template <class T, class C>
void decode_one(const DecodeArgs &a, int64_t b, int64_t g, attn::QueryRows &rows, attn::KvTile &tile) {
  const AttentionShape &sh = a.shape;
  const int64_t group = sh.q_heads / sh.kv_heads, d = sh.head_dim;
  const int64_t len = a.context_lens[b];
  int64_t lo, hi;
  attn::visible_keys(len - 1, len, true, sh.window_left, &lo, &hi);  // the query is the last position
  rows.reset(group);
  for (int64_t r = 0; r < group; ++r)
    rows.set(r, attn::at<T>(a.q, a.q_strides, b, g * group + r), sh.softmax_scale, lo, hi);

  const PagedCache &cache = a.cache;
  const int32_t *blocks = a.block_table + b * a.block_table_stride;
  attn::attend_keys<C>(rows, tile, cache.k_scale, cache.v_scale, [&](int64_t j, const C **key, const C **value) {
    const int64_t slot = int64_t(blocks[j / cache.page_size]) * cache.page_size + j % cache.page_size;
    const int64_t offset = (slot * sh.kv_heads + g) * d;
    *key = static_cast<const C *>(cache.k) + offset;
    *value = static_cast<const C *>(cache.v) + offset;
  });
  for (int64_t r = 0; r < group; ++r) rows.store(r, attn::at<T>(a.out, a.out_strides, b, g * group + r));
}

template <class T, class C>
void decode(const DecodeArgs &a) {
  const int64_t kv_heads = a.shape.kv_heads, group = a.shape.q_heads / kv_heads;
  parallel_for(a.batch * kv_heads, 1, [&](int64_t begin, int64_t end) {
    attn::QueryRows rows(group, a.shape.head_dim);
    attn::KvTile tile(a.shape.head_dim);
    for (int64_t w = begin; w < end; ++w) decode_one<T, C>(a, w / kv_heads, w % kv_heads, rows, tile);
  });
}

}  // namespace

aiter_status paged_decode_attention(const DecodeArgs &a) {
  if (a.shape.q_heads == 0) return AITER_OK;
  visit_float(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (is_fp8(a.cache.dtype))
      visit_fp8(a.cache.dtype, [&](auto cache_tag) { decode<T, decltype(cache_tag)>(a); });
    else
      decode<T, T>(a);
  });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
