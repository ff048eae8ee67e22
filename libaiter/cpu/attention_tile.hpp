// The CPU attention core shared by prefill and decode: a set of query rows of one
// kv-head group, each with its own visible key range, streamed over tiles of
// keys/values converted once to fp32 (flash-attention order: the tile is reused by
// every query of the group).  Softmax is online: each row keeps a running max, a
// running sum and an fp32 accumulator, and is rounded to the output type once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/dtype.hpp"
#include "ops/attention.hpp"

namespace aiter {
namespace cpu {
namespace attn {

constexpr int64_t kKeyTile = 64;

// Row (token, head) of a [tokens, heads, D] tensor.
template <class T>
const T *at(const void *base, const TokenHeadStrides &s, int64_t token, int64_t head) {
  return static_cast<const T *>(base) + token * s.token + head * s.head;
}
template <class T>
T *at(void *base, const TokenHeadStrides &s, int64_t token, int64_t head) {
  return static_cast<T *>(base) + token * s.token + head * s.head;
}

// Key positions [*lo, *hi) that a query at position `pos` sees among `len` keys:
// up to itself when causal, and at most window_left positions back when >= 0.
inline void visible_keys(int64_t pos, int64_t len, bool causal, int32_t window_left, int64_t *lo, int64_t *hi) {
  *hi = causal ? std::clamp<int64_t>(pos + 1, 0, len) : len;
  *lo = window_left >= 0 ? std::clamp<int64_t>(pos - window_left, 0, len) : 0;
}

// Keys and values at positions [first, first + count) of one kv head, in fp32.
// Keys are transposed ([D][kKeyTile]) so that a query's scores against the tile
// are an elementwise loop over keys, which vectorizes without reordering sums.
// Values have their own head dim Dv.
class KvTile {
 public:
  KvTile(int64_t head_dim, int64_t v_head_dim)
      : d_(head_dim), dv_(v_head_dim), keys_t_(size_t(head_dim * kKeyTile)), values_(size_t(v_head_dim * kKeyTile)) {}

  void start(int64_t first, int64_t count) { first_ = first, count_ = count; }
  // Row r of the tile, from the stored key/value rows times their dequantization scales.
  template <class C>
  void set_row(int64_t r, const C *key, const C *value, float k_scale, float v_scale) {
    float *vrow = values_.data() + r * dv_;
    for (int64_t i = 0; i < d_; ++i) keys_t_[size_t(i * kKeyTile + r)] = to_f32(key[i]) * k_scale;
    for (int64_t i = 0; i < dv_; ++i) vrow[i] = to_f32(value[i]) * v_scale;
  }

  int64_t first() const { return first_; }
  int64_t count() const { return count_; }
  const float *key_column(int64_t i) const { return keys_t_.data() + i * kKeyTile; }
  const float *value_row(int64_t r) const { return values_.data() + r * dv_; }

 private:
  int64_t d_, dv_, first_ = 0, count_ = 0;
  std::vector<float> keys_t_, values_;
};

// Up to `capacity` query rows and their online-softmax state; logits pass through
// softcap * tanh(logits / softcap) when softcap > 0.
class QueryRows {
 public:
  QueryRows(int64_t capacity, int64_t head_dim, int64_t v_head_dim, float softcap);

  // Starts `n` fresh rows (no key seen yet).
  void reset(int64_t n);
  // Row r: query = src * scale (the softmax scale folded in), seeing keys [lo, hi).
  template <class T>
  void set(int64_t r, const T *src, float scale, int64_t lo, int64_t hi) {
    float *q = query_.data() + r * d_;
    for (int64_t i = 0; i < d_; ++i) q[i] = to_f32(src[i]) * scale;
    lo_[size_t(r)] = lo, hi_[size_t(r)] = hi;
    lo_min_ = std::min(lo_min_, lo), hi_max_ = std::max(hi_max_, hi);
  }
  // The union of the rows' key ranges: the positions worth loading.
  int64_t lo_min() const { return lo_min_; }
  int64_t hi_max() const { return hi_max_; }

  // Folds the visible part of the tile into every row.
  void attend(const KvTile &tile);
  // Row r's softmax-weighted sum of values (zeros if it saw no key), rounded to T.
  template <class T>
  void store(int64_t r, T *out) const {
    const float sum = sum_[size_t(r)];
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const float *acc = acc_.data() + r * dv_;
    for (int64_t i = 0; i < dv_; ++i) out[i] = from_f32<T>(acc[i] * inv);
  }
  // Row r's log-sum-exp of its (scaled, capped) logits; -inf if it saw no key.
  float lse(int64_t r) const {
    const float sum = sum_[size_t(r)];
    return sum > 0.0f ? max_[size_t(r)] + std::log(sum) : -std::numeric_limits<float>::infinity();
  }

 private:
  void attend_row(int64_t r, const KvTile &tile);
  int64_t d_, dv_, n_ = 0, lo_min_ = 0, hi_max_ = 0;
  float softcap_;
  std::vector<float> query_, acc_, max_, sum_, scores_;
  std::vector<int64_t> lo_, hi_;
};

// Streams key positions [rows.lo_min(), rows.hi_max()) through `tile`, kKeyTile at
// a time; rows_at(j, &key, &value) gives the stored rows of position j.
template <class C, class RowsAt>
void attend_keys(QueryRows &rows, KvTile &tile, float k_scale, float v_scale, RowsAt &&rows_at) {
  for (int64_t first = rows.lo_min(); first < rows.hi_max(); first += kKeyTile) {
    const int64_t count = std::min(kKeyTile, rows.hi_max() - first);
    tile.start(first, count);
    for (int64_t r = 0; r < count; ++r) {
      const C *key, *value;
      rows_at(first + r, &key, &value);
      tile.set_row(r, key, value, k_scale, v_scale);
    }
    rows.attend(tile);
  }
}

}  // namespace attn
}  // namespace cpu
}  // namespace aiter
