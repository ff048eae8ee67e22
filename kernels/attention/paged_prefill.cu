// Prefill over a paged cache on every target (no tensor-core instructions): the
// AMD targets' kernel, and NVIDIA's for fp32 q and fp8 caches.  A block takes a
// tile of 16 rows (new token, query head) of one sequence and one kv head -- the
// query heads of that kv head consecutive, so each cached byte is read once for
// the GQA group -- and streams the keys those rows see through attend.h's tile
// core, reading the cache rows through the sequence's block-table row.  Tiles,
// lengths, positions and block ids follow paged_rows.h.
#include "attend.h"
#include "paged_rows.h"

namespace {

using attn::kThreads;

template <class T, class C, int D, int R>
__device__ __forceinline__ void paged_prefill_block(const PagedPrefillParams &p) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<attn::Smem<D, D, R> *>(smem_raw);
  __shared__ paged::SeqTile st_shared;
  const int kvh = int(block_y()), group = p.q_heads / p.kv_heads, t = int(thread_x());
  if (t == 0) st_shared = paged::find_tile(p, group, R, block_x());
  sync_block();
  const paged::SeqTile st = st_shared;
  if (!st.valid) return;  // the whole block
  const long long rows = (long long)st.lq * group, n0 = (long long)st.tile * R;  // n: row within the sequence
  if (t < R) {
    int lo = 0, hi = 0;
    if (n0 + t < rows) paged::visible_keys(p, st, (n0 + t) / group, &lo, &hi);
    s.lo[t] = lo;
    s.hi[t] = hi;
  }
  for (int e = t; e < R * D; e += kThreads) {
    const long long n = n0 + e / D;
    const T *q_row = n >= rows ? nullptr
                               : static_cast<const T *>(p.q) + (st.q0 + n / group) * p.q_token_stride +
                                     (long long)(kvh * group + int(n % group)) * p.q_head_stride;
    attn::load_query_elem(s, e / D, e % D, q_row, p.sm.scale);
  }
  sync_block();
  int first, end;
  attn::key_range(s, 0, st.len, &first, &end);
  const paged::PagedRows src{p.block_table + (long long)st.seq * p.table_stride, p.num_blocks, p.page_size,
                             p.kv_heads, kvh, D};
  using L = attn::PvLayout<D, R>;
  attn::attend(s, static_cast<const C *>(p.k_cache), static_cast<const C *>(p.v_cache), first, end, src, p.sm,
               p.vec != 0, [&](int r, int col, const float (&o)[4], float lse) {
                 const long long n = n0 + r;
                 if (n >= rows) return;
                 const long long token = st.q0 + n / group;
                 const int h = kvh * group + int(n % group);
                 T *dst = static_cast<T *>(p.out) + token * p.out_token_stride + (long long)h * p.out_head_stride + col;
                 attn::store_cols<T, L::kW>(dst, o);
                 if (p.lse != nullptr && col == 0) p.lse[token * p.q_heads + h] = lse;
               });
}

}  // namespace

#define AITER_PAGED_PREFILL_KERNEL(name, T, C, D) \
  AITER_ENTRY(name, kThreads, PagedPrefillParams, paged_prefill_block<T, C, D, 16>)

// Variants: q dtype . cache (q's dtype, or fp8 of any kind: params.sm.quant) .
// head dim; 16 rows a block.  smem = sizeof(attn::Smem<D, D, 16>), checked below.
// aiter-kernel-family: op=paged_prefill_attention variant={dt}.{cache}.{shape} symbol=aiter_paged_prefill_{dt}_{cache}_{shape} block=128 smem={smem} dt=f32,f16,bf16 cache=same,fp8 shape=d64:23556,d128:44036
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f32_same_d64, float, float, 64)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f32_same_d128, float, float, 128)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f32_fp8_d64, float, uint8_t, 64)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f32_fp8_d128, float, uint8_t, 128)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f16_same_d64, half_t, half_t, 64)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f16_same_d128, half_t, half_t, 128)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f16_fp8_d64, half_t, uint8_t, 64)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_f16_fp8_d128, half_t, uint8_t, 128)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_bf16_same_d64, bf16_t, bf16_t, 64)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_bf16_same_d128, bf16_t, bf16_t, 128)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_bf16_fp8_d64, bf16_t, uint8_t, 64)
AITER_PAGED_PREFILL_KERNEL(aiter_paged_prefill_bf16_fp8_d128, bf16_t, uint8_t, 128)

// The manifest's smem figures above are these structs' sizes (the SeqTile is static).
static_assert(sizeof(attn::Smem<64, 64, 16>) == 23556, "update smem of d64");
static_assert(sizeof(attn::Smem<128, 128, 16>) == 44036, "update smem of d128");
