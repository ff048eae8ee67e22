// The CPU attention core shared by prefill and decode: a set of query rows of one
// kv-head group, each with its own visible key range, streamed over tiles of
// keys/values converted once to fp32 (flash-attention order: the tile is reused by
// every query of the group).  Softmax is online: each row keeps a running max, a
// running sum and an fp32 accumulator, and is rounded to the output type once.
//
// Two implementations of the arithmetic, chosen per call from cpu_isa()
// (pick_kernel): the portable loops below, and AVX-512 blocks of 4 query rows
// x 64 keys (attention_avx512.cpp) whose scores come from fp32 FMA or, where
// q is bf16, the keys bf16 or fp8 and the CPU has AVX512_BF16, from vdpbf16ps
// on bf16 pairs of the stored values; the weighted sum of values is fp32 FMA
// in both.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dtype.hpp"
#include "ops/attention.hpp"

namespace aiter {
namespace cpu {
namespace attn {

constexpr int64_t kKeyTile = 64;

enum class Kernel {
  portable,     // plain loops (any CPU)
  avx512,       // fp32 FMA over the fp32 tile
  avx512_bf16,  // q . k by vdpbf16ps over bf16 pairs (q and k stored as bf16), p . v in fp32 FMA
};

template <class C>
constexpr bool is_fp8_v = std::is_same_v<C, e4m3fn_t> || std::is_same_v<C, e4m3fnuz_t> || std::is_same_v<C, e5m2_t>;

// The fastest kernel this CPU (capped by AITER_CPU_ISA) runs for queries of type
// T over keys stored as C: the bf16 one needs bf16 queries and keys that are
// bf16 values, stored as such or as fp8 codes (every fp8 value is a bf16 one;
// the cache's k_scale then multiplies the scores), so that the pairs it
// multiplies are the stored values, unrounded.
Kernel pick_kernel(bool bf16_operands);
template <class T, class C>
Kernel pick_kernel() {
  return pick_kernel(std::is_same_v<T, bf16_t> && (std::is_same_v<C, bf16_t> || is_fp8_v<C>));
}

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
// attention_avx512.cpp: a Kernel::avx512_bf16 tile from `count` bf16 key and value
// rows (16 x 16 pairs transposed in registers; values widened to fp32).
void fill_bf16_avx512(const bf16_t *const *keys, const bf16_t *const *values, int64_t count, int64_t d, int64_t dv,
                      uint32_t *key_pairs, float *value_rows);
// A Kernel::avx512 tile (fp32 keys transposed, fp32 values) from rows of any
// stored type, times the scales (fp8: decoded through its table, by gathers),
// 16 x 16 blocks transposed in registers.
#define AITER_ATTN_FILL_FP32(C)                                                                                      \
  void fill_fp32_avx512(const C *const *keys, const C *const *values, int64_t count, int64_t d, int64_t dv,      \
                        float k_scale, float v_scale, float *keys_t, float *value_rows)
AITER_ATTN_FILL_FP32(float);
AITER_ATTN_FILL_FP32(half_t);
AITER_ATTN_FILL_FP32(bf16_t);
AITER_ATTN_FILL_FP32(e4m3fn_t);
AITER_ATTN_FILL_FP32(e4m3fnuz_t);
AITER_ATTN_FILL_FP32(e5m2_t);
// attention_avx512.cpp: n accumulated values times inv, rounded to T (as from_f32).
void store_row_avx512(const float *acc, float inv, int64_t n, float *out);
void store_row_avx512(const float *acc, float inv, int64_t n, half_t *out);
void store_row_avx512(const float *acc, float inv, int64_t n, bf16_t *out);

// The same from fp8 codes: keys decoded to bf16 pairs exactly (unscaled: the
// scores take k_scale), values to fp32 times v_scale.
#define AITER_ATTN_FILL_FP8_PAIRS(C)                                                                                   \
  void fill_pairs_avx512(const C *const *keys, const C *const *values, int64_t count, int64_t d, int64_t dv,       \
                         float v_scale, uint32_t *key_pairs, float *value_rows)
AITER_ATTN_FILL_FP8_PAIRS(e4m3fn_t);
AITER_ATTN_FILL_FP8_PAIRS(e4m3fnuz_t);
AITER_ATTN_FILL_FP8_PAIRS(e5m2_t);

// For Kernel::avx512_bf16 the keys stay bf16 instead, as 32-bit pairs of
// adjacent dims transposed ([(D + 1) / 2][kKeyTile], an odd D's last pair
// padded with zero), the operand layout of vdpbf16ps.
class KvTile {
 public:
  KvTile(int64_t head_dim, int64_t v_head_dim, Kernel kernel = Kernel::portable)
      : d_(head_dim),
        dv_(v_head_dim),
        vector_fill_(kernel != Kernel::portable),
        pairs_(kernel == Kernel::avx512_bf16),
        keys_t_(pairs_ ? 0 : size_t(head_dim * kKeyTile)),
        key_pairs_(pairs_ ? size_t((head_dim + 1) / 2 * kKeyTile) : 0),
        values_(size_t(v_head_dim * kKeyTile)) {}

  void start(int64_t first, int64_t count) { first_ = first, count_ = count; }
  // Rows [0, count()) from the stored key/value rows of those positions.
  template <class C>
  void set_rows(const C *const *keys, const C *const *values, float k_scale, float v_scale) {
    key_scale_ = 1.0f;
    if constexpr (std::is_same_v<C, bf16_t>) {
      if (pairs_) return fill_bf16_avx512(keys, values, count_, d_, dv_, key_pairs_.data(), values_.data());
    }
    if constexpr (is_fp8_v<C>) {
      if (pairs_) {
        key_scale_ = k_scale;
        return fill_pairs_avx512(keys, values, count_, d_, dv_, v_scale, key_pairs_.data(), values_.data());
      }
    }
    if (vector_fill_)
      return fill_fp32_avx512(keys, values, count_, d_, dv_, k_scale, v_scale, keys_t_.data(), values_.data());
    for (int64_t r = 0; r < count_; ++r) set_row(r, keys[r], values[r], k_scale, v_scale);
  }
  // Row r of the tile, from the stored key/value rows times their dequantization scales.
  template <class C>
  void set_row(int64_t r, const C *key, const C *value, float k_scale, float v_scale) {
    float *vrow = values_.data() + r * dv_;
    if constexpr (std::is_same_v<C, bf16_t>) {
      if (pairs_) {
        set_key_pairs(r, key);  // k_scale applies to fp8 caches only: 1 here
        for (int64_t i = 0; i < dv_; ++i) vrow[i] = to_f32(value[i]);
        return;
      }
    }
    for (int64_t i = 0; i < d_; ++i) keys_t_[size_t(i * kKeyTile + r)] = to_f32(key[i]) * k_scale;
    for (int64_t i = 0; i < dv_; ++i) vrow[i] = to_f32(value[i]) * v_scale;
  }

  int64_t first() const { return first_; }
  int64_t count() const { return count_; }
  float key_scale() const { return key_scale_; }  // what the bf16 pairs' scores still need (fp8: k_scale)
  int64_t head_dim() const { return d_; }
  int64_t v_head_dim() const { return dv_; }
  const float *key_column(int64_t i) const { return keys_t_.data() + i * kKeyTile; }
  const uint32_t *key_pair_column(int64_t i) const { return key_pairs_.data() + i * kKeyTile; }
  const float *value_row(int64_t r) const { return values_.data() + r * dv_; }

 private:
  void set_key_pairs(int64_t r, const bf16_t *key) {
    for (int64_t i = 0; i < d_ / 2; ++i)
      key_pairs_[size_t(i * kKeyTile + r)] = uint32_t(key[2 * i].bits) | uint32_t(key[2 * i + 1].bits) << 16;
    if (d_ % 2 != 0) key_pairs_[size_t(d_ / 2 * kKeyTile + r)] = key[d_ - 1].bits;
  }
  int64_t d_, dv_, first_ = 0, count_ = 0;
  float key_scale_ = 1.0f;
  bool vector_fill_, pairs_;
  std::vector<float> keys_t_;
  std::vector<uint32_t> key_pairs_;
  std::vector<float> values_;
};

// Up to `capacity` query rows and their online-softmax state; logits pass through
// softcap * tanh(logits / softcap) when softcap > 0.
class QueryRows {
 public:
  QueryRows(int64_t capacity, int64_t head_dim, int64_t v_head_dim, float softcap, Kernel kernel = Kernel::portable);

  // Starts `n` fresh rows (no key seen yet).
  void reset(int64_t n);
  // Row r: query = src * scale (the softmax scale folded in), seeing keys [lo, hi).
  template <class T>
  void set(int64_t r, const T *src, float scale, int64_t lo, int64_t hi) {
    scale_ = scale;
    bool done = false;
    if constexpr (std::is_same_v<T, bf16_t>) {
      if (kernel_ == Kernel::avx512_bf16) set_pairs(r, src), done = true;  // scaled after the dot products
    }
    if (!done) {
      float *q = query_.data() + r * d_;
      for (int64_t i = 0; i < d_; ++i) q[i] = to_f32(src[i]) * scale;
    }
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
    if (kernel_ != Kernel::portable) return store_row_avx512(acc, inv, dv_, out);
    for (int64_t i = 0; i < dv_; ++i) out[i] = from_f32<T>(acc[i] * inv);
  }
  // Row r's log-sum-exp of its (scaled, capped) logits; -inf if it saw no key.
  float lse(int64_t r) const {
    const float sum = sum_[size_t(r)];
    return sum > 0.0f ? max_[size_t(r)] + std::log(sum) : -std::numeric_limits<float>::infinity();
  }

 private:
  void set_pairs(int64_t r, const bf16_t *src) {
    const int64_t d2 = (d_ + 1) / 2;
    uint32_t *q = query_pairs_.data() + r * d2;
    for (int64_t i = 0; i < d_ / 2; ++i) q[i] = uint32_t(src[2 * i].bits) | uint32_t(src[2 * i + 1].bits) << 16;
    if (d_ % 2 != 0) q[d2 - 1] = src[d_ - 1].bits;
  }
  void attend_row(int64_t r, const KvTile &tile);
  // attention_avx512.cpp: every row against the tile, in blocks of rows [r0, r0 + n) (n <= 4).
  void attend_avx512(const KvTile &tile);
  void attend_block_avx512(int64_t r0, int64_t n, const KvTile &tile);
  int64_t d_, dv_, n_ = 0, lo_min_ = 0, hi_max_ = 0;
  float softcap_, scale_ = 1.0f;
  Kernel kernel_;
  std::vector<float> query_;
  std::vector<uint32_t> query_pairs_;  // Kernel::avx512_bf16: the unscaled bf16 query, as pairs
  std::vector<float> acc_, max_, sum_, scores_;
  std::vector<int64_t> lo_, hi_;
};

// Streams key positions [rows.lo_min(), rows.hi_max()) through `tile`, kKeyTile at
// a time; rows_at(j, &key, &value) gives the stored rows of position j.  The rows
// of the next tile are found, and asked of memory (prefetched), before the
// current one is filled: a paged cache's rows are scattered (a decode item
// reads each once, at the speed of memory, which the prefetcher cannot
// foresee across pages).
template <class C, class RowsAt>
void attend_keys(QueryRows &rows, KvTile &tile, float k_scale, float v_scale, RowsAt &&rows_at) {
  const C *keys[2][kKeyTile], *values[2][kKeyTile];
  const int64_t key_bytes = tile.head_dim() * int64_t(sizeof(C)), value_bytes = tile.v_head_dim() * int64_t(sizeof(C));
  auto find = [&](int64_t first, int b, bool prefetch) {
    const int64_t count = std::min(kKeyTile, rows.hi_max() - first);
    for (int64_t r = 0; r < count; ++r) {
      rows_at(first + r, &keys[b][r], &values[b][r]);
      if (!prefetch) continue;
      for (int64_t i = 0; i < key_bytes; i += 64) __builtin_prefetch(reinterpret_cast<const char *>(keys[b][r]) + i);
      for (int64_t i = 0; i < value_bytes; i += 64) __builtin_prefetch(reinterpret_cast<const char *>(values[b][r]) + i);
    }
  };
  int b = 0;
  if (rows.lo_min() < rows.hi_max()) find(rows.lo_min(), b, false);
  for (int64_t first = rows.lo_min(); first < rows.hi_max(); first += kKeyTile, b ^= 1) {
    if (first + kKeyTile < rows.hi_max()) find(first + kKeyTile, b ^ 1, true);
    tile.start(first, std::min(kKeyTile, rows.hi_max() - first));
    tile.set_rows(keys[b], values[b], k_scale, v_scale);
    rows.attend(tile);
  }
}

}  // namespace attn
}  // namespace cpu
}  // namespace aiter
