// CPU attention over a paged KV cache: decode (1 to 8 new query tokens per
// sequence) and prefill over the cache (any number of new tokens per sequence,
// packed by cu_seqlens_q).  The new tokens are the last positions of their
// sequence's context.  Work items are (sequence, block of new tokens, kv head);
// every new token and query head of the item shares each gathered K/V tile,
// dequantized from fp8 when the cache is fp8.
#include <algorithm>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/attention_tile.hpp"
#include "ops/attention.hpp"

namespace aiter {
namespace cpu {
namespace {

constexpr int64_t kTokenBlock = 16;  // new tokens an item (decode has at most 8)

struct TokenBlock {
  int64_t seq, begin, end;  // new tokens [begin, end) of sequence seq
};

int64_t new_tokens(const DecodeArgs &a, int64_t b) {
  return a.cu_seqlens_q != nullptr ? a.cu_seqlens_q[b + 1] - a.cu_seqlens_q[b] : a.q_tokens;
}

std::vector<TokenBlock> token_blocks(const DecodeArgs &a) {
  std::vector<TokenBlock> blocks;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t i = 0; i < new_tokens(a, b); i += kTokenBlock)
      blocks.push_back({b, i, std::min(new_tokens(a, b), i + kTokenBlock)});
  return blocks;
}

// Row (new token i, query head h) of sequence b: q/out are [B, (Nq,) Hq, D] for
// decode, packed [Tq, Hq, D] rows for prefill over the cache.
template <class T, class Base>
T *row_at(const DecodeArgs &a, Base *base, int64_t seq_stride, const TokenHeadStrides &s, int64_t b, int64_t i,
          int64_t h) {
  if (a.cu_seqlens_q != nullptr) return static_cast<T *>(base) + (a.cu_seqlens_q[b] + i) * s.token + h * s.head;
  return static_cast<T *>(base) + b * seq_stride + i * s.token + h * s.head;
}

// One item: its new tokens times kv head g's query heads over the context.
template <class T, class C>
void attend_item(const DecodeArgs &a, const TokenBlock &blk, int64_t g, attn::QueryRows &rows, attn::KvTile &tile) {
  const AttentionShape &sh = a.shape;
  const int64_t group = sh.q_heads / sh.kv_heads, d = sh.head_dim, b = blk.seq;
  const int64_t len = a.context_lens[b], nq = new_tokens(a, b);
  rows.reset((blk.end - blk.begin) * group);
  for (int64_t i = blk.begin, r = 0; i < blk.end; ++i) {
    int64_t lo, hi;
    attn::visible_keys(len - nq + i, len, a.causal, sh.window_left, &lo, &hi);  // the last positions
    for (int64_t h = g * group; h < (g + 1) * group; ++h, ++r)
      rows.set(r, row_at<const T>(a, a.q, a.q_seq_stride, a.q_strides, b, i, h), sh.softmax_scale, lo, hi);
  }

  const PagedCache &cache = a.cache;
  const int32_t *blocks = a.block_table + b * a.block_table_stride;
  attn::attend_keys<C>(rows, tile, cache.k_scale, cache.v_scale, [&](int64_t j, const C **key, const C **value) {
    const int64_t slot = int64_t(blocks[j / cache.page_size]) * cache.page_size + j % cache.page_size;
    const int64_t offset = (slot * sh.kv_heads + g) * d;
    *key = static_cast<const C *>(cache.k) + offset;
    *value = static_cast<const C *>(cache.v) + offset;
  });
  for (int64_t i = blk.begin, r = 0; i < blk.end; ++i)
    for (int64_t h = g * group; h < (g + 1) * group; ++h, ++r) {
      rows.store(r, row_at<T>(a, a.out, a.out_seq_stride, a.out_strides, b, i, h));
      if (a.lse != nullptr) a.lse[(a.cu_seqlens_q[b] + i) * sh.q_heads + h] = rows.lse(r);
    }
}

template <class T, class C>
void attend_paged(const DecodeArgs &a) {
  const std::vector<TokenBlock> blocks = token_blocks(a);
  const int64_t kv_heads = a.shape.kv_heads, group = a.shape.q_heads / kv_heads;
  const attn::Kernel kernel = attn::pick_kernel<T, C>();
  parallel_for(int64_t(blocks.size()) * kv_heads, 1, [&](int64_t begin, int64_t end) {
    attn::QueryRows rows(kTokenBlock * group, a.shape.head_dim, a.shape.v_head_dim, a.shape.softcap, kernel);
    attn::KvTile tile(a.shape.head_dim, a.shape.v_head_dim, kernel);
    for (int64_t w = begin; w < end; ++w) attend_item<T, C>(a, blocks[size_t(w / kv_heads)], w % kv_heads, rows, tile);
  });
}

aiter_status run_paged(const DecodeArgs &a) {
  if (a.shape.q_heads == 0) return AITER_OK;
  visit_cached(a.dtype, a.cache.dtype, [&](auto t, auto c) { attend_paged<decltype(t), decltype(c)>(a); });
  return AITER_OK;
}

}  // namespace

aiter_status paged_decode_attention(const DecodeArgs &a) { return run_paged(a); }
aiter_status paged_prefill_attention(const DecodeArgs &a) { return run_paged(a); }

}  // namespace cpu
}  // namespace aiter
