// Paged decode attention: each block takes R rows (new token, query head) of one
// sequence and kv head -- the query heads that share the kv head, so each cached
// byte is read once for all of them -- over one split of the context.  With one
// split the block writes the output; with several it writes its partial result
// and log-sum-exp to the workspace, and merge_splits combines them.
//
// The block table and context lengths live in device memory, unchecked by the
// host: a length is clamped to the table's capacity, and a key whose block id
// is out of range is skipped (masked), so no index leads outside the cache.
#include "attend.h"
#include "paged_rows.h"

namespace {

using attn::kThreads;

// Key positions of sequence b to cache offsets through its block-table row.
using PagedSource = paged::PagedRows;

template <class T, class C, int D, int R>
__device__ __forceinline__ void decode_block(const DecodeParams &p) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<attn::Smem<D, D, R> *>(smem_raw);
  const int b = int(block_x()) / p.splits, split = int(block_x()) % p.splits;
  const int kvh = int(block_y()) / p.row_blocks, rb = int(block_y()) % p.row_blocks;
  const int group = p.q_heads / p.kv_heads, t = int(thread_x());
  const long long capacity = (long long)p.max_blocks * p.page_size;
  if (t == 0) {
    const long long len = p.context_lens[b];  // read once
    s.scalar = int(len < 0 ? 0 : len > capacity ? capacity : len);
  }
  sync_block();
  const int len = s.scalar;
  if (t < R) {  // row t: new token i (at position len - q_tokens + i), query head h
    const int n = rb * R + t, i = n / group;
    int lo = 0, hi = 0;
    if (n < p.q_tokens * group) {
      const int pos = len - p.q_tokens + i;
      hi = pos + 1 < 0 ? 0 : pos + 1;
      lo = p.sm.window_left >= 0 && pos - p.sm.window_left > 0 ? pos - p.sm.window_left : 0;
    }
    s.lo[t] = lo;
    s.hi[t] = hi;
  }
  for (int e = t; e < R * D; e += kThreads) {
    const int r = e / D, n = rb * R + r;
    const T *q_row = nullptr;
    if (n < p.q_tokens * group)
      q_row = static_cast<const T *>(p.q) + b * p.q_seq_stride + (long long)(n / group) * p.q_token_stride +
              (long long)(kvh * group + n % group) * p.q_head_stride;
    attn::load_query_elem(s, r, e % D, q_row, p.sm.scale);
  }
  sync_block();
  int first, end;
  attn::key_range(s, (long long)split * p.split_keys, (long long)(split + 1) * p.split_keys, &first, &end);
  const PagedSource src{p.block_table + (long long)b * p.table_stride, p.num_blocks, p.page_size, p.kv_heads, kvh, D};
  using L = attn::PvLayout<D, R>;
  attn::attend(s, static_cast<const C *>(p.k_cache), static_cast<const C *>(p.v_cache), first, end, src, p.sm,
               p.vec != 0, [&](int r, int col, const float (&o)[4], float lse) {
                 const int n = rb * R + r;
                 if (n >= p.q_tokens * group) return;
                 const int i = n / group, h = kvh * group + n % group;
                 if (p.splits == 1) {
                   T *dst = static_cast<T *>(p.out) + b * p.out_seq_stride + (long long)i * p.out_token_stride +
                            (long long)h * p.out_head_stride + col;
                   attn::store_cols<T, L::kW>(dst, o);
                   return;
                 }
                 const long long slot = (((long long)b * p.q_tokens + i) * p.q_heads + h) * p.splits + split;
                 float *dst = p.partial_out + slot * D + col;
#pragma unroll
                 for (int w = 0; w < L::kW; ++w) dst[w] = o[w];
                 if (col == 0) p.partial_lse[slot] = lse;
               });
}

// One row (token, head) of the output from its splits' partial results: each
// weighted by exp(its lse - the largest), a split that saw no key by 0.
template <class T>
__device__ __forceinline__ void merge_row(const DecodeMergeParams &p) {
  const long long row = block_x();
  const float *lse = p.partial_lse + row * p.splits;
  float top = attn::kNegInf;
  for (int s = 0; s < p.splits; ++s) top = fmaxf(top, lse[s]);
  float total = 0.0f;
  for (int s = 0; s < p.splits; ++s) total += lse[s] == attn::kNegInf ? 0.0f : fast_exp(lse[s] - top);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  const long long token = row / p.q_heads;  // (sequence, new token)
  T *dst = static_cast<T *>(p.out) + token / p.q_tokens * p.out_seq_stride + token % p.q_tokens * p.out_token_stride +
           row % p.q_heads * p.out_head_stride;
  const float *part = p.partial_out + row * p.splits * p.head_dim;
  for (int d = int(thread_x()); d < p.head_dim; d += kThreads) {
    float acc = 0.0f;
    for (int s = 0; s < p.splits; ++s)
      if (lse[s] != attn::kNegInf) acc += fast_exp(lse[s] - top) * part[s * p.head_dim + d];
    dst[d] = from_f32<T>(acc * inv);
  }
}

}  // namespace

#define AITER_DECODE_KERNEL(name, T, C, D, R) \
  AITER_ENTRY(name, kThreads, DecodeParams, decode_block<T, C, D, R>)
#define AITER_MERGE_KERNEL(name, T) AITER_ENTRY(name, kThreads, DecodeMergeParams, merge_row<T>)

// Variants: q dtype . cache (same dtype, or fp8 of any kind) . head dim . rows a
// block (4 for groups of up to 4 query heads, 8 up to 8, else 16).  smem =
// sizeof(attn::Smem<D, D, R>), checked by static_asserts at the end.
// aiter-kernel-family: op=paged_decode_attention variant={dt}.{cache}.{shape} symbol=aiter_decode_{dt}_{cache}_d{sym} block=128 smem={smem} dt=f32,f16,bf16 cache=same,fp8 shape=d64.r4:64_r4:18660,d64.r8:64_r8:20292,d64.r16:64_r16:23556,d128.r4:128_r4:36068,d128.r8:128_r8:38724,d128.r16:128_r16:44036
AITER_DECODE_KERNEL(aiter_decode_f32_same_d64_r4, float, float, 64, 4)
AITER_DECODE_KERNEL(aiter_decode_f32_same_d64_r8, float, float, 64, 8)
AITER_DECODE_KERNEL(aiter_decode_f32_same_d64_r16, float, float, 64, 16)
AITER_DECODE_KERNEL(aiter_decode_f32_same_d128_r4, float, float, 128, 4)
AITER_DECODE_KERNEL(aiter_decode_f32_same_d128_r8, float, float, 128, 8)
AITER_DECODE_KERNEL(aiter_decode_f32_same_d128_r16, float, float, 128, 16)
AITER_DECODE_KERNEL(aiter_decode_f32_fp8_d64_r4, float, uint8_t, 64, 4)
AITER_DECODE_KERNEL(aiter_decode_f32_fp8_d64_r8, float, uint8_t, 64, 8)
AITER_DECODE_KERNEL(aiter_decode_f32_fp8_d64_r16, float, uint8_t, 64, 16)
AITER_DECODE_KERNEL(aiter_decode_f32_fp8_d128_r4, float, uint8_t, 128, 4)
AITER_DECODE_KERNEL(aiter_decode_f32_fp8_d128_r8, float, uint8_t, 128, 8)
AITER_DECODE_KERNEL(aiter_decode_f32_fp8_d128_r16, float, uint8_t, 128, 16)
AITER_DECODE_KERNEL(aiter_decode_f16_same_d64_r4, half_t, half_t, 64, 4)
AITER_DECODE_KERNEL(aiter_decode_f16_same_d64_r8, half_t, half_t, 64, 8)
AITER_DECODE_KERNEL(aiter_decode_f16_same_d64_r16, half_t, half_t, 64, 16)
AITER_DECODE_KERNEL(aiter_decode_f16_same_d128_r4, half_t, half_t, 128, 4)
AITER_DECODE_KERNEL(aiter_decode_f16_same_d128_r8, half_t, half_t, 128, 8)
AITER_DECODE_KERNEL(aiter_decode_f16_same_d128_r16, half_t, half_t, 128, 16)
AITER_DECODE_KERNEL(aiter_decode_f16_fp8_d64_r4, half_t, uint8_t, 64, 4)
AITER_DECODE_KERNEL(aiter_decode_f16_fp8_d64_r8, half_t, uint8_t, 64, 8)
AITER_DECODE_KERNEL(aiter_decode_f16_fp8_d64_r16, half_t, uint8_t, 64, 16)
AITER_DECODE_KERNEL(aiter_decode_f16_fp8_d128_r4, half_t, uint8_t, 128, 4)
AITER_DECODE_KERNEL(aiter_decode_f16_fp8_d128_r8, half_t, uint8_t, 128, 8)
AITER_DECODE_KERNEL(aiter_decode_f16_fp8_d128_r16, half_t, uint8_t, 128, 16)
AITER_DECODE_KERNEL(aiter_decode_bf16_same_d64_r4, bf16_t, bf16_t, 64, 4)
AITER_DECODE_KERNEL(aiter_decode_bf16_same_d64_r8, bf16_t, bf16_t, 64, 8)
AITER_DECODE_KERNEL(aiter_decode_bf16_same_d64_r16, bf16_t, bf16_t, 64, 16)
AITER_DECODE_KERNEL(aiter_decode_bf16_same_d128_r4, bf16_t, bf16_t, 128, 4)
AITER_DECODE_KERNEL(aiter_decode_bf16_same_d128_r8, bf16_t, bf16_t, 128, 8)
AITER_DECODE_KERNEL(aiter_decode_bf16_same_d128_r16, bf16_t, bf16_t, 128, 16)
AITER_DECODE_KERNEL(aiter_decode_bf16_fp8_d64_r4, bf16_t, uint8_t, 64, 4)
AITER_DECODE_KERNEL(aiter_decode_bf16_fp8_d64_r8, bf16_t, uint8_t, 64, 8)
AITER_DECODE_KERNEL(aiter_decode_bf16_fp8_d64_r16, bf16_t, uint8_t, 64, 16)
AITER_DECODE_KERNEL(aiter_decode_bf16_fp8_d128_r4, bf16_t, uint8_t, 128, 4)
AITER_DECODE_KERNEL(aiter_decode_bf16_fp8_d128_r8, bf16_t, uint8_t, 128, 8)
AITER_DECODE_KERNEL(aiter_decode_bf16_fp8_d128_r16, bf16_t, uint8_t, 128, 16)

// aiter-kernel-family: op=paged_decode_attention variant=merge.{dt} symbol=aiter_decode_merge_{dt} block=128 smem=0 dt=f32,f16,bf16
AITER_MERGE_KERNEL(aiter_decode_merge_f32, float)
AITER_MERGE_KERNEL(aiter_decode_merge_f16, half_t)
AITER_MERGE_KERNEL(aiter_decode_merge_bf16, bf16_t)

// The manifest's smem figures above are these structs' sizes.
static_assert(sizeof(attn::Smem<64, 64, 4>) == 18660, "update smem of d64.r4");
static_assert(sizeof(attn::Smem<64, 64, 8>) == 20292, "update smem of d64.r8");
static_assert(sizeof(attn::Smem<64, 64, 16>) == 23556, "update smem of d64.r16");
static_assert(sizeof(attn::Smem<128, 128, 4>) == 36068, "update smem of d128.r4");
static_assert(sizeof(attn::Smem<128, 128, 8>) == 38724, "update smem of d128.r8");
static_assert(sizeof(attn::Smem<128, 128, 16>) == 44036, "update smem of d128.r16");
