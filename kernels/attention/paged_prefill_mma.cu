// Prefill over a paged cache on NVIDIA tensor cores (mma.sync m16n8k16, ldmatrix,
// cp.async; sm_80 and up), for 16-bit q and caches of q's dtype or fp8.  The math is
// prefill_mma.cu's (FlashAttention-2 order: a block of 4 warps takes 64 new
// tokens of one query head, each warp 16, and streams their keys through two
// shared-memory buffers 64 keys at a time, the next tile's copy in flight during
// the math; S stays in registers and becomes P's A fragments); what differs is
// where rows come from:
//
// - a block is a tile of one sequence (paged_rows.h), found from cu_seqlens_q;
// - a key tile's rows are copied through the sequence's block-table row: the
//   block ids of tile k + 2 are loaded during tile k's math (their latency
//   hidden behind it), checked, and turned into per-key cache offsets and a
//   validity mask in shared memory, three tiles of them in rotation (the
//   tile being computed, the one whose copy is in flight, the next);
// - a key whose block id is out of range is zero-filled and masked;
// - fp8 caches (e4m3fn, e4m3fnuz, e5m2): a tile's raw bytes are copied (half a
//   16-bit tile's) into two buffers of their own, and once landed widened
//   exactly to fp16 (fp8_widen.h) into one 16-bit tile that the same math
//   reads, in fp16 whatever q's type: a bf16 query is scaled by a power of two
//   that puts the block's largest element in [2^13, 2^14) and rounded to fp16
//   once (as the decode kernels do), so no widened value is converted again to
//   bf16.  The scales (the query's factor and the widening's power of two) go
//   into the logits' factor and the output's.  A barrier more a tile than the
//   16-bit path.
//
// fp32 q and the AMD targets run paged_prefill.cu.
#include "../common/numeric.h"
#include "flash_warp.h"
#include "fp8_widen.h"
#include "paged_rows.h"

namespace {

constexpr int kThreads = 128, kRows = 64, kKeys = 64;

// fp8 caches' raw tiles: two buffers of [kKeys][D] codes each for K and V.
template <bool Fp8, int D>
struct RawTiles {
  uint8_t raw_k[2 * kKeys * D], raw_v[2 * kKeys * D];
};
template <int D>
struct RawTiles<false, D> {};

// CK: the cache's QuantKind (kQuantNone: q's dtype).  16-bit caches: two
// buffers of K and V; fp8: two buffers of raw codes and one widened tile.
template <class T, int D, int CK>
struct Tiles : RawTiles<CK != kQuantNone, D> {
  static constexpr bool kFp8 = CK != kQuantNone;
  static constexpr int kBufs = kFp8 ? 1 : 2;
  T q[kRows * D];
  T k[kBufs][kKeys * D];
  T v[kBufs][kKeys * D];
  long long key_off[3][kKeys];  // a tile's keys: element offset of their rows in the caches
  unsigned key_ok[3][2];        // bit k of word k / 32: key k is in range with a valid block id
};

// The block's query rows [first, end) (rows past end: zeros) into the swizzled
// fp16 tile, times the block's fp16_range factor; returns its inverse.  For a
// bf16 query over an fp8 cache.
template <class T, int D, int Rows, int Threads>
__device__ float copy_rows_fp16(half_t *tile, const T *base, long long token_stride, int first, int end,
                                unsigned *top_bits) {
  constexpr int kChunks = D / 8;
  if (thread_x() == 0) *top_bits = 0u;
  sync_block();
  unsigned top = 0u;
  for (int c = int(thread_x()); c < Rows * kChunks; c += Threads) {
    const int r = c / kChunks, chunk = c % kChunks;
    if (first + r >= end) continue;
    const uint4 w = *reinterpret_cast<const uint4 *>(base + (long long)(first + r) * token_stride + chunk * 8);
    top = max(top, __vmaxu2(__vmaxu2(w.x & 0x7fff7fffu, w.y & 0x7fff7fffu), __vmaxu2(w.z & 0x7fff7fffu, w.w & 0x7fff7fffu)));
  }
  atomicMax(top_bits, max(top >> 16, top & 0xffffu));  // 16-bit magnitudes order as their bits
  sync_block();
  const uint32_t bits = *top_bits;  // bf16 bits of the block's largest |element|
  const Fp16Range range = fp16_range((bits >> 7) & 0xffu, bits == 0u);
  const float scale = range.scale;
  for (int c = int(thread_x()); c < Rows * kChunks; c += Threads) {
    const int r = c / kChunks, chunk = c % kChunks;
    uint4 h{0u, 0u, 0u, 0u};
    if (first + r < end) {
      const uint4 w = *reinterpret_cast<const uint4 *>(base + (long long)(first + r) * token_stride + chunk * 8);
      auto half2 = [&](uint32_t x) {
        return Mma<half_t>::pack(bits_f32(x << 16) * scale, bits_f32(x & 0xffff0000u) * scale);
      };
      h = uint4{half2(w.x), half2(w.y), half2(w.z), half2(w.w)};
    }
    *reinterpret_cast<uint4 *>(tile + swizzled<D>(r, chunk)) = h;
  }
  return range.unscale;
}

// What a widened fp8 value is multiplied by (the cache's scale and the
// widening's power of two); 1 for 16-bit caches.  Taken from the parameters
// where used, not kept in a register across the key loop (D128 has none spare).
template <int CK>
__device__ __forceinline__ float cache_factor(float scale) {
  return CK == kQuantNone ? 1.0f : scale * fp8_fold<CK>();
}

// The caches' element type: T, or fp8 codes as bytes.
template <class T, int CK>
struct CacheElem {
  using type = uint8_t;
};
template <class T>
struct CacheElem<T, kQuantNone> {
  using type = T;
};

// What a block needs to find its keys' rows.
struct KeyRows {
  const int *table_row;
  long long num_blocks;
  long long slot_elems;  // elements between cache slots (kv_heads * D)
  long long head_elems;  // this kv head's row within a slot
  int page_size, end;    // end: the block's last key position + 1
};

// Lane `i` (0..63) of warps 0-1: the raw block id of key start + i, -1 past the end.
__device__ __forceinline__ int fetch_block_id(const KeyRows &kr, int start, int i) {
  const long long key = (long long)start + i;  // no int overflow near 2^31
  return key < kr.end ? kr.table_row[key / kr.page_size] : -1;
}

// Lane `i` of warps 0-1: key start + i's offset and validity into rotation slot `slot`.
template <class Tl>
__device__ __forceinline__ void store_key_rows(Tl &s, const KeyRows &kr, int slot, int start, int i,
                                               int id) {
  const long long key = (long long)start + i;
  const bool ok = key < kr.end && id >= 0 && id < kr.num_blocks;
  s.key_off[slot][i] = ok ? ((long long)id * kr.page_size + key % kr.page_size) * kr.slot_elems + kr.head_elems : 0;
  const unsigned mask = __ballot_sync(0xffffffffu, ok);
  if ((i & 31) == 0) s.key_ok[slot][i >> 5] = mask;
}

// The K and V rows of the tile whose offsets are in rotation slot `slot`, into
// buffer `buf`: 16-bit rows swizzled into the tiles, fp8 rows as they are into
// the raw buffers.  C: the cache's element type.
template <class T, int D, int CK, class C>
__device__ __forceinline__ void copy_keys(Tiles<T, D, CK> &s, const C *k, const C *v, int slot, int buf) {
  constexpr int kPerChunk = 16 / int(sizeof(C)), kChunks = D / kPerChunk;
  for (int c = int(thread_x()); c < kKeys * kChunks; c += kThreads) {
    const int r = c / kChunks, chunk = c % kChunks;
    const bool valid = (s.key_ok[slot][r >> 5] >> (r & 31)) & 1u;
    const long long off = s.key_off[slot][r] + chunk * kPerChunk;
    if constexpr (Tiles<T, D, CK>::kFp8) {
      const int at = (buf * kKeys + r) * D + chunk * 16;
      copy16(smem_addr(s.raw_k + at), k + off, valid);
      copy16(smem_addr(s.raw_v + at), v + off, valid);
    } else {
      copy16(smem_addr(s.k[buf] + swizzled<D>(r, chunk)), k + off, valid);
      copy16(smem_addr(s.v[buf] + swizzled<D>(r, chunk)), v + off, valid);
    }
  }
}

// 16 fp8 codes at `raw` widened to fp16 into chunks 2 * chunk and 2 * chunk + 1
// of row r of a 16-bit tile (one permute for two pairs where the hardware
// widens e4m3fn).
template <int D, int CK>
__device__ __forceinline__ void widen_chunk(const uint8_t *raw, half_t *tile, int r, int chunk) {
  const uint4 w = *reinterpret_cast<const uint4 *>(raw);
  uint32_t h[8];
  fp8_pairs<CK, 0, 1, 2, 3>(w.x, h[0], h[1]);
  fp8_pairs<CK, 0, 1, 2, 3>(w.y, h[2], h[3]);
  fp8_pairs<CK, 0, 1, 2, 3>(w.z, h[4], h[5]);
  fp8_pairs<CK, 0, 1, 2, 3>(w.w, h[6], h[7]);
  *reinterpret_cast<uint4 *>(tile + swizzled<D>(r, 2 * chunk)) = uint4{h[0], h[1], h[2], h[3]};
  *reinterpret_cast<uint4 *>(tile + swizzled<D>(r, 2 * chunk + 1)) = uint4{h[4], h[5], h[6], h[7]};
}

// fp8: raw buffer `buf` widened into the 16-bit tiles (swizzled as copy_keys
// lays 16-bit rows), a 16-byte chunk of K and of V a thread a step.
template <class T, int D, int CK>
__device__ __forceinline__ void widen_keys(Tiles<T, D, CK> &s, int buf) {
  constexpr int kChunks = D / 16;
#pragma unroll 1  // one chunk's registers at a time: the key loop has few spare at D128
  for (int c = int(thread_x()); c < kKeys * kChunks; c += kThreads) {
    const int r = c / kChunks, chunk = c % kChunks, at = (buf * kKeys + r) * D + chunk * 16;
    widen_chunk<D, CK>(s.raw_k + at, s.k[0], r, chunk);
    widen_chunk<D, CK>(s.raw_v + at, s.v[0], r, chunk);
  }
}

template <class T, int D, int CK>
__device__ __forceinline__ void paged_prefill_mma(const PagedPrefillParams &p) {
  using C = typename CacheElem<T, CK>::type;
  using M = typename ProductType<T, CK>::type;
  constexpr bool kFp8 = CK != kQuantNone;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<Tiles<M, D, CK> *>(smem_raw);
  __shared__ paged::SeqTile st_shared;
  __shared__ unsigned q_top;
  const int t = int(thread_x()), warp = t / 32, lane = t % 32, g = lane / 4, tq = lane % 4;
  if (t == 0) st_shared = paged::find_tile(p, 1, kRows, block_x());
  sync_block();
  paged::SeqTile st = st_shared;
  if (!st.valid) return;  // the whole block
  // The sequence's last tiles see the most keys (causal): they run first, so
  // the grid's tail is made of short blocks.
  st.tile = (st.lq + kRows - 1) / kRows - 1 - st.tile;
  const int head = int(block_y()), kvh = head / (p.q_heads / p.kv_heads);
  const int i0 = st.tile * kRows;                   // the block's first new token (within the sequence)
  const int row0 = st.q0 + i0, row_end = st.q0 + st.lq;  // its q rows, and the sequence's end
  // This thread's two rows: warp * 16 + g and + 8.
  int lo[2], hi[2];
  paged::visible_keys(p, st, i0 + warp * 16 + g, &lo[0], &hi[0]);
  paged::visible_keys(p, st, i0 + warp * 16 + g + 8, &lo[1], &hi[1]);
  for (int r = 0; r < 2; ++r)
    if (i0 + warp * 16 + g + 8 * r >= st.lq) lo[r] = hi[r] = 0;
  // The block's keys: the union of its rows' ranges (the first row sees the
  // fewest from the start, the last the most at the end).
  int first, end;
  {
    const int last = (i0 + kRows < st.lq ? i0 + kRows : st.lq) - 1;
    int lo0, hi0, lo1, hi1;
    paged::visible_keys(p, st, i0, &lo0, &hi0);
    paged::visible_keys(p, st, last, &lo1, &hi1);
    first = lo0 < hi0 ? lo0 : 0;  // the first row before the context: the first visible row is at position 0
    end = hi1 > first ? hi1 : first;
  }
  const KeyRows kr{p.block_table + (long long)st.seq * p.table_stride, p.num_blocks, (long long)p.kv_heads * D,
                   (long long)kvh * D, p.page_size, end};
  const C *k_cache = static_cast<const C *>(p.k_cache), *v_cache = static_cast<const C *>(p.v_cache);

  // Prologue: warps 0-1 map tile 0 (slot 0), warps 2-3 tile 1 (slot 1).
  if (first < end) {
    const int i = t % 64, start = t < 64 || end - first <= kKeys ? first : first + kKeys;
    store_key_rows(s, kr, t / 64, start, i, t < 64 || end - first > kKeys ? fetch_block_id(kr, start, i) : -1);
  }
  const T *q_base = static_cast<const T *>(p.q) + (long long)head * p.q_head_stride;
  float q_unscale = 1.0f;  // what q's rows in the tile were multiplied by, inverted
  if constexpr (std::is_same_v<M, T>)
    copy_rows<T, D, kRows, kThreads>(s.q, q_base, p.q_token_stride, row0, row_end);
  else
    q_unscale = copy_rows_fp16<T, D, kRows, kThreads>(s.q, q_base, p.q_token_stride, row0, row_end, &q_top);
  sync_block();
  if (first < end) copy_keys(s, k_cache, v_cache, 0, 0);
  commit();
  wait_pending<0>();
  sync_block();
  uint32_t qf[D / 16][4];
  load_q_fragments<M, D>(s.q, warp, lane, qf);
  FlashRows<M, D> rows;
  int buf = 0, slot = 0;
  for (int tile = first; tile < end;
       tile += end - tile > kKeys ? kKeys : end - tile, buf ^= 1, slot = slot == 2 ? 0 : slot + 1) {
    if (tile > first) {
      wait_pending<0>();
      sync_block();  // tile's copy landed; every warp is done with the other buffer and the old slot
    }
    const int next_slot = slot == 2 ? 0 : slot + 1, after_slot = next_slot == 2 ? 0 : next_slot + 1;
    if (end - tile > kKeys) copy_keys(s, k_cache, v_cache, next_slot, buf ^ 1);
    commit();
    if constexpr (kFp8) {  // every warp is past the last tile's math (the barrier above)
      widen_keys(s, buf);
      sync_block();
    }
    const int kb = kFp8 ? 0 : buf;  // the 16-bit tiles read
    // Tile + 2's block ids: loaded now, stored after the math (the load in flight meanwhile).
    const bool map_after = t < 64 && end - tile > 2 * kKeys;
    const int after_id = map_after ? fetch_block_id(kr, tile + 2 * kKeys, t) : -1;
    const unsigned long long ok =
        (unsigned long long)s.key_ok[slot][0] | ((unsigned long long)s.key_ok[slot][1] << 32);
    float sc[kKeys / 8][4];
    tile_scores<M, D, kKeys>(qf, s.k[kb], lane, sc);
    // Logits; the mask only where the warp's rows do not all see the whole tile
    // (the diagonal, the window's edge, the context's end, invalid block ids).
    log2_logits<kKeys>(sc, p.sm.scale * cache_factor<CK>(p.sm.k_scale) * q_unscale, p.sm.softcap);
    const int rlo[2] = {lo[0] - tile, lo[1] - tile}, rhi[2] = {hi[0] - tile, hi[1] - tile};  // no overflow: all >= 0
    const bool whole = ok == ~0ull && rlo[0] <= 0 && rlo[1] <= 0 && rhi[0] >= kKeys && rhi[1] >= kKeys;
    if (!__all_sync(0xffffffffu, whole)) {
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e / 2, kl = nt * 8 + tq * 2 + e % 2;
          if (!(((ok >> kl) & 1ull) && rlo[r] <= kl && kl < rhi[r])) sc[nt][e] = kNegInf;
        }
    }
    rows.absorb<kKeys>(sc, s.v[kb], lane);
    // Slot after_slot held tile - 1's rows, last read before this iteration's barrier.
    if (map_after) store_key_rows(s, kr, after_slot, tile + 2 * kKeys, t, after_id);
  }
  // Out (and lse) for the rows that exist.
  rows.finish();
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int token = row0 + warp * 16 + g + 8 * r;
    if (token >= row_end) continue;
    T *dst = static_cast<T *>(p.out) + (long long)token * p.out_token_stride + (long long)head * p.out_head_stride;
    rows.store(r, dst, p.lse != nullptr ? p.lse + (long long)token * p.q_heads + head : nullptr, tq, cache_factor<CK>(p.sm.v_scale));
  }
}

}  // namespace

#define AITER_PAGED_PREFILL_MMA_KERNEL(name, T, D, CK) \
  AITER_ENTRY(name, kThreads, PagedPrefillParams, (paged_prefill_mma<T, D, CK>))

// smem = sizeof(Tiles<T, D, CK>): 16-bit caches (64 + 4 * 64) rows of D 16-bit
// elements, fp8 (64 + 2 * 64) of them and 4 * 64 rows of D bytes; plus three
// tiles' key offsets and masks.
// aiter-kernel-family: op=paged_prefill_attention variant=mma.{dt}.{shape} symbol=aiter_paged_prefill_mma_{dt}_{shape} block=128 smem={smem} dt=f16,bf16 shape=d64:42520,d128:83480
// aiter-kernel-family: op=paged_prefill_attention variant=mma.{dt}.{cache}.{shape} symbol=aiter_paged_prefill_mma_{dt}_{cache}_{shape} block=128 smem={smem} dt=f16,bf16 cache=e4m3fn,e4m3fnuz,e5m2 shape=d64:42520,d128:83480
#define PAGED_PREFILL_MMA_DTYPE(dt, T)                                                     \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_d64, T, 64, kQuantNone)              \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_d128, T, 128, kQuantNone)            \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_e4m3fn_d64, T, 64, kQuantE4m3fn)     \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_e4m3fn_d128, T, 128, kQuantE4m3fn)   \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_e4m3fnuz_d64, T, 64, kQuantE4m3fnuz) \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_e4m3fnuz_d128, T, 128, kQuantE4m3fnuz) \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_e5m2_d64, T, 64, kQuantE5m2)         \
  AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_##dt##_e5m2_d128, T, 128, kQuantE5m2)
PAGED_PREFILL_MMA_DTYPE(f16, half_t)
PAGED_PREFILL_MMA_DTYPE(bf16, bf16_t)
static_assert(sizeof(Tiles<bf16_t, 64, kQuantNone>) == 42520 && sizeof(Tiles<bf16_t, 128, kQuantNone>) == 83480,
              "update smem above");
static_assert(sizeof(Tiles<bf16_t, 64, kQuantE4m3fn>) == 42520 && sizeof(Tiles<bf16_t, 128, kQuantE4m3fn>) == 83480,
              "update smem above");
