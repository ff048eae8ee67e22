// CPU prefill attention over packed variable-length sequences, and the online-
// softmax core (QueryRows) that decode shares.  Work items are (sequence, block of
// queries, kv head): the item's K/V tiles are converted once and serve every query
// head of the group and every query of the block.
#include <cmath>
#include <limits>

#include "core/parallel.hpp"
#include "cpu/attention_tile.hpp"
#include "ops/attention.hpp"

namespace aiter {
namespace cpu {
namespace attn {

QueryRows::QueryRows(int64_t capacity, int64_t head_dim, int64_t v_head_dim, float softcap, Kernel kernel)
    : d_(head_dim),
      dv_(v_head_dim),
      softcap_(softcap),
      kernel_(kernel),
      query_(kernel == Kernel::avx512_bf16 ? 0 : size_t(capacity * head_dim)),
      query_pairs_(kernel == Kernel::avx512_bf16 ? size_t(capacity * ((head_dim + 1) / 2)) : 0),
      acc_(size_t(capacity * v_head_dim)),
      max_(size_t(capacity)),
      sum_(size_t(capacity)),
      scores_(size_t(4 * kKeyTile)),  // a row (portable) or a block of 4 rows (AVX-512)
      lo_(size_t(capacity)),
      hi_(size_t(capacity)) {}

void QueryRows::reset(int64_t n) {
  n_ = n;
  std::fill(acc_.begin(), acc_.begin() + n * dv_, 0.0f);
  std::fill(max_.begin(), max_.begin() + n, -std::numeric_limits<float>::infinity());
  std::fill(sum_.begin(), sum_.begin() + n, 0.0f);
  lo_min_ = std::numeric_limits<int64_t>::max();
  hi_max_ = std::numeric_limits<int64_t>::min();
}

void QueryRows::attend(const KvTile &tile) {
  if (kernel_ != Kernel::portable) return attend_avx512(tile);
  for (int64_t r = 0; r < n_; ++r) attend_row(r, tile);
}

void QueryRows::attend_row(int64_t r, const KvTile &tile) {
  const int64_t j0 = std::max(lo_[size_t(r)], tile.first()) - tile.first();
  const int64_t j1 = std::min(hi_[size_t(r)], tile.first() + tile.count()) - tile.first();
  if (j0 >= j1) return;
  const int64_t n = j1 - j0;
  float *__restrict s = scores_.data();
  const float *__restrict q = query_.data() + r * d_;
  std::fill(s, s + n, 0.0f);
  for (int64_t i = 0; i < d_; ++i) {
    const float qi = q[i];
    const float *__restrict k = tile.key_column(i) + j0;
    for (int64_t j = 0; j < n; ++j) s[j] += qi * k[j];
  }
  if (softcap_ > 0.0f)
    for (int64_t j = 0; j < n; ++j) s[j] = softcap_ * std::tanh(s[j] / softcap_);
  float tile_max = s[0];
  for (int64_t j = 1; j < n; ++j) tile_max = std::max(tile_max, s[j]);
  // Rescale what was accumulated under the old max to the new one.
  const float old_max = max_[size_t(r)];
  const float new_max = std::max(old_max, tile_max);
  const float correction = std::exp(old_max - new_max);
  float *__restrict acc = acc_.data() + r * dv_;
  float sum = sum_[size_t(r)] * correction;
  for (int64_t i = 0; i < dv_; ++i) acc[i] *= correction;
  for (int64_t j = 0; j < n; ++j) {
    const float p = std::exp(s[j] - new_max);
    const float *__restrict v = tile.value_row(j0 + j);
    sum += p;
    for (int64_t i = 0; i < dv_; ++i) acc[i] += p * v[i];
  }
  max_[size_t(r)] = new_max;
  sum_[size_t(r)] = sum;
}

}  // namespace attn

namespace {

constexpr int64_t kQueryBlock = 32;  // query tokens an item: each K/V tile it converts serves 32 x group rows

struct QueryBlock {
  int64_t seq, begin, end;  // query rows [begin, end) of sequence seq, 0-based within it
};

std::vector<QueryBlock> query_blocks(const PrefillArgs &a) {
  std::vector<QueryBlock> blocks;
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t len = a.cu_seqlens_q[b + 1] - a.cu_seqlens_q[b];
    for (int64_t i = 0; i < len; i += kQueryBlock) blocks.push_back({b, i, std::min(len, i + kQueryBlock)});
  }
  return blocks;
}

// One query block against kv head g: every query head of g's group.
template <class T>
void prefill_block(const PrefillArgs &a, const QueryBlock &blk, int64_t g, attn::QueryRows &rows, attn::KvTile &tile) {
  const AttentionShape &sh = a.shape;
  const int64_t group = sh.q_heads / sh.kv_heads;
  const int64_t q0 = a.cu_seqlens_q[blk.seq], k0 = a.cu_seqlens_k[blk.seq];
  const int64_t lq = a.cu_seqlens_q[blk.seq + 1] - q0, lk = a.cu_seqlens_k[blk.seq + 1] - k0;
  rows.reset((blk.end - blk.begin) * group);
  for (int64_t i = blk.begin, r = 0; i < blk.end; ++i) {
    int64_t lo, hi;
    attn::visible_keys(i + lk - lq, lk, a.causal, sh.window_left, &lo, &hi);  // ends aligned
    for (int64_t h = g * group; h < (g + 1) * group; ++h, ++r)
      rows.set(r, attn::at<T>(a.q, a.q_strides, q0 + i, h), sh.softmax_scale, lo, hi);
  }
  attn::attend_keys<T>(rows, tile, 1.0f, 1.0f, [&](int64_t j, const T **key, const T **value) {
    *key = attn::at<T>(a.k, a.k_strides, k0 + j, g);
    *value = attn::at<T>(a.v, a.v_strides, k0 + j, g);
  });
  for (int64_t i = blk.begin, r = 0; i < blk.end; ++i)
    for (int64_t h = g * group; h < (g + 1) * group; ++h, ++r) {
      rows.store(r, attn::at<T>(a.out, a.out_strides, q0 + i, h));
      if (a.lse != nullptr) a.lse[(q0 + i) * sh.q_heads + h] = rows.lse(r);
    }
}

// Items run last block first: under a causal mask the later query blocks see
// more keys, and the pool hands out its chunks in order, so the heavy ones start
// first and the light ones fill the gaps at the end.
template <class T>
void prefill(const PrefillArgs &a) {
  const std::vector<QueryBlock> blocks = query_blocks(a);
  const int64_t kv_heads = a.shape.kv_heads, group = a.shape.q_heads / kv_heads;
  const int64_t items = int64_t(blocks.size()) * kv_heads;
  const attn::Kernel kernel = attn::pick_kernel<T, T>();
  parallel_for(items, 1, [&](int64_t begin, int64_t end) {
    attn::QueryRows rows(kQueryBlock * group, a.shape.head_dim, a.shape.v_head_dim, a.shape.softcap, kernel);
    attn::KvTile tile(a.shape.head_dim, a.shape.v_head_dim, kernel);
    for (int64_t w = items - 1 - begin; w > items - 1 - end; --w)
      prefill_block<T>(a, blocks[size_t(w / kv_heads)], w % kv_heads, rows, tile);
  });
}

}  // namespace

aiter_status prefill_attention(const PrefillArgs &a) {
  if (a.shape.q_heads == 0) return AITER_OK;
  visit_float(a.dtype, [&](auto tag) { prefill<decltype(tag)>(a); });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
