// CPU MLA decode: multi-query attention of every new token and query head of a
// sequence over its latent rows, keys the whole 576-wide rows, values their
// first 512 elements.  It runs on the CPU attention core (cpu/attention_tile.hpp):
// a work item is a block of a sequence's (token, head) rows, streamed
// flash-style over tiles of 64 latent rows read once through the block table
// (fp8 dequantized with kv_scale), with online softmax; the scores and the
// p . v sums by the AVX-512 blocks (vdpbf16ps where q and the cache are bf16
// or fp8 and the CPU has AVX512_BF16) or the portable loops, from cpu_isa().
// The split plan is a GPU matter: the CPU computes each row in one pass and
// never touches the workspace.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/attention_tile.hpp"
#include "ops/mla.hpp"

namespace aiter {
namespace cpu {
namespace {

constexpr int64_t D = kMlaLatentDim, DV = kMlaValueDim;
// Query rows a work item: the rows share each latent tile, so more rows per
// item read the cache fewer times; 64 keep their fp32 accumulators (128 KB)
// in L2 and leave items for both cores at DeepSeek's 16 to 128 heads.
constexpr int64_t kRowBlock = 64;

// Rows [first, first + count) of sequence b (row = token * heads + head) over
// its visible latent rows: each new token sees the context up to itself.
template <class T, class C>
void attend_rows(const MlaDecodeArgs &a, int64_t b, int64_t first, int64_t count, attn::QueryRows &rows,
                 attn::KvTile &tile) {
  const int64_t len = a.context_lens[b], tokens = a.q_tokens, heads = a.q_heads;
  const int64_t base = b * tokens * heads;
  rows.reset(count);
  for (int64_t r = 0; r < count; ++r) {
    const int64_t i = (first + r) / heads;
    const int64_t visible = std::clamp<int64_t>(len - tokens + i + 1, 0, len);  // causal among the new tokens
    rows.set(r, static_cast<const T *>(a.q) + (base + first + r) * D, a.softmax_scale, 0, visible);
  }
  const int32_t *blocks = a.block_table + b * a.block_table_stride;
  const C *cache = static_cast<const C *>(a.kv_cache);
  attn::attend_keys<C>(rows, tile, a.kv_scale, a.kv_scale, [&](int64_t j, const C **key, const C **value) {
    const int64_t slot = int64_t(blocks[j / a.page_size]) * a.page_size + j % a.page_size;
    *key = *value = cache + slot * D;  // the value is the key's first 512 elements
  });
  for (int64_t r = 0; r < count; ++r) {
    const int64_t row = base + first + r;
    rows.store(r, static_cast<T *>(a.out) + row * DV);
    if (a.lse != nullptr) a.lse[row] = rows.lse(r);
  }
}

template <class T, class C>
void decode(const MlaDecodeArgs &a) {
  const int64_t per_seq = a.q_tokens * a.q_heads, blocks = (per_seq + kRowBlock - 1) / kRowBlock;
  const attn::Kernel kernel = attn::pick_kernel<T, C>();
  parallel_for(a.batch * blocks, 1, [&](int64_t begin, int64_t end) {
    attn::QueryRows rows(kRowBlock, D, DV, 0.0f, kernel);
    attn::KvTile tile(D, DV, kernel);
    for (int64_t w = begin; w < end; ++w) {
      const int64_t first = (w % blocks) * kRowBlock;
      attend_rows<T, C>(a, w / blocks, first, std::min(kRowBlock, per_seq - first), rows, tile);
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
  visit_cached(a.dtype, a.cache_dtype, [&](auto t, auto c) { decode<decltype(t), decltype(c)>(a); });
  return AITER_OK;
}

aiter_status concat_and_cache_mla(const MlaCacheWriteArgs &a) {
  visit_cached(a.dtype, a.cache_dtype, [&](auto t, auto c) { write_cache<decltype(t), decltype(c)>(a); });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
