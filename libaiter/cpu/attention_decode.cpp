// CPU paged decode attention: 1 to 8 new query tokens per sequence (the last
// positions of its context, causal among themselves) over its cached context.
// Work items are (sequence, kv head); every new token and query head of the
// group shares each gathered K/V tile, dequantized from fp8 when the cache is fp8.
#include "core/parallel.hpp"
#include "cpu/attention_tile.hpp"
#include "ops/attention.hpp"

namespace aiter {
namespace cpu {
namespace {

// Row (new token i, query head h) of sequence b in a [B, (Nq,) Hq, D] tensor.
template <class T, class Base>
T *row_at(Base *base, int64_t seq_stride, const TokenHeadStrides &s, int64_t b, int64_t i, int64_t h) {
  return static_cast<T *>(base) + b * seq_stride + i * s.token + h * s.head;
}

// Sequence b, kv head g: its new tokens times its group of query heads over
// positions of the context.
template <class T, class C>
void decode_one(const DecodeArgs &a, int64_t b, int64_t g, attn::QueryRows &rows, attn::KvTile &tile) {
  const AttentionShape &sh = a.shape;
  const int64_t group = sh.q_heads / sh.kv_heads, d = sh.head_dim;
  const int64_t len = a.context_lens[b];
  rows.reset(a.q_tokens * group);
  for (int64_t i = 0, r = 0; i < a.q_tokens; ++i) {
    int64_t lo, hi;
    attn::visible_keys(len - a.q_tokens + i, len, true, sh.window_left, &lo, &hi);  // the last positions
    for (int64_t h = g * group; h < (g + 1) * group; ++h, ++r)
      rows.set(r, row_at<const T>(a.q, a.q_seq_stride, a.q_strides, b, i, h), sh.softmax_scale, lo, hi);
  }

  const PagedCache &cache = a.cache;
  const int32_t *blocks = a.block_table + b * a.block_table_stride;
  attn::attend_keys<C>(rows, tile, cache.k_scale, cache.v_scale, [&](int64_t j, const C **key, const C **value) {
    const int64_t slot = int64_t(blocks[j / cache.page_size]) * cache.page_size + j % cache.page_size;
    const int64_t offset = (slot * sh.kv_heads + g) * d;
    *key = static_cast<const C *>(cache.k) + offset;
    *value = static_cast<const C *>(cache.v) + offset;
  });
  for (int64_t i = 0, r = 0; i < a.q_tokens; ++i)
    for (int64_t h = g * group; h < (g + 1) * group; ++h, ++r)
      rows.store(r, row_at<T>(a.out, a.out_seq_stride, a.out_strides, b, i, h));
}

template <class T, class C>
void decode(const DecodeArgs &a) {
  const int64_t kv_heads = a.shape.kv_heads, group = a.shape.q_heads / kv_heads;
  parallel_for(a.batch * kv_heads, 1, [&](int64_t begin, int64_t end) {
    attn::QueryRows rows(a.q_tokens * group, a.shape.head_dim, a.shape.v_head_dim, a.shape.softcap);
    attn::KvTile tile(a.shape.head_dim, a.shape.v_head_dim);
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
