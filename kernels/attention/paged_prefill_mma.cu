// Prefill over a paged cache on NVIDIA tensor cores (mma.sync m16n8k16, ldmatrix,
// cp.async; sm_80 and up), for 16-bit q and caches of q's dtype.  The math is
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
// - a key whose block id is out of range is zero-filled and masked.
//
// fp8 caches, fp32 q and the AMD targets run paged_prefill.cu.
#include "../common/numeric.h"
#include "flash_warp.h"
#include "paged_rows.h"

namespace {

constexpr int kThreads = 128, kRows = 64, kKeys = 64;

template <class T, int D>
struct Tiles {
  T q[kRows * D];
  T k[2][kKeys * D];
  T v[2][kKeys * D];
  long long key_off[3][kKeys];  // a tile's keys: element offset of their rows in the caches
  unsigned key_ok[3][2];        // bit k of word k / 32: key k is in range with a valid block id
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
template <class T, int D>
__device__ __forceinline__ void store_key_rows(Tiles<T, D> &s, const KeyRows &kr, int slot, int start, int i,
                                               int id) {
  const long long key = (long long)start + i;
  const bool ok = key < kr.end && id >= 0 && id < kr.num_blocks;
  s.key_off[slot][i] = ok ? ((long long)id * kr.page_size + key % kr.page_size) * kr.slot_elems + kr.head_elems : 0;
  const unsigned mask = __ballot_sync(0xffffffffu, ok);
  if ((i & 31) == 0) s.key_ok[slot][i >> 5] = mask;
}

// The K and V rows of the tile whose offsets are in rotation slot `slot`, into buffer `buf`.
template <class T, int D>
__device__ __forceinline__ void copy_keys(Tiles<T, D> &s, const T *k, const T *v, int slot, int buf) {
  constexpr int kChunks = D / 8;
  for (int c = int(thread_x()); c < kKeys * kChunks; c += kThreads) {
    const int r = c / kChunks, chunk = c % kChunks;
    const bool valid = (s.key_ok[slot][r >> 5] >> (r & 31)) & 1u;
    const long long off = s.key_off[slot][r] + chunk * 8;
    copy16(smem_addr(s.k[buf] + swizzled<D>(r, chunk)), k + off, valid);
    copy16(smem_addr(s.v[buf] + swizzled<D>(r, chunk)), v + off, valid);
  }
}

template <class T, int D>
__device__ __forceinline__ void paged_prefill_mma(const PagedPrefillParams &p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<Tiles<T, D> *>(smem_raw);
  __shared__ paged::SeqTile st_shared;
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
  const T *k_cache = static_cast<const T *>(p.k_cache), *v_cache = static_cast<const T *>(p.v_cache);

  // Prologue: warps 0-1 map tile 0 (slot 0), warps 2-3 tile 1 (slot 1).
  if (first < end) {
    const int i = t % 64, start = t < 64 || end - first <= kKeys ? first : first + kKeys;
    store_key_rows(s, kr, t / 64, start, i, t < 64 || end - first > kKeys ? fetch_block_id(kr, start, i) : -1);
  }
  const T *q_base = static_cast<const T *>(p.q) + (long long)head * p.q_head_stride;
  copy_rows<T, D, kRows, kThreads>(s.q, q_base, p.q_token_stride, row0, row_end);
  sync_block();
  if (first < end) copy_keys(s, k_cache, v_cache, 0, 0);
  commit();
  wait_pending<0>();
  sync_block();
  uint32_t qf[D / 16][4];
  load_q_fragments<T, D>(s.q, warp, lane, qf);
  FlashRows<T, D> rows;
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
    // Tile + 2's block ids: loaded now, stored after the math (the load in flight meanwhile).
    const bool map_after = t < 64 && end - tile > 2 * kKeys;
    const int after_id = map_after ? fetch_block_id(kr, tile + 2 * kKeys, t) : -1;
    const unsigned long long ok =
        (unsigned long long)s.key_ok[slot][0] | ((unsigned long long)s.key_ok[slot][1] << 32);
    float sc[kKeys / 8][4];
    tile_scores<T, D, kKeys>(qf, s.k[buf], lane, sc);
    // Logits; the mask only where the warp's rows do not all see the whole tile
    // (the diagonal, the window's edge, the context's end, invalid block ids).
    log2_logits<kKeys>(sc, p.sm.scale, p.sm.softcap);
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
    rows.absorb<kKeys>(sc, s.v[buf], lane);
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
    rows.store(r, dst, p.lse != nullptr ? p.lse + (long long)token * p.q_heads + head : nullptr, tq);
  }
}

}  // namespace

#define AITER_PAGED_PREFILL_MMA_KERNEL(name, T, D) \
  AITER_ENTRY(name, kThreads, PagedPrefillParams, paged_prefill_mma<T, D>)

// smem = sizeof(Tiles<T, D>): (64 + 4 * 64) rows of D 16-bit elements, plus three
// tiles' key offsets and masks.
// aiter-kernel-family: op=paged_prefill_attention variant=mma.{dt}.{shape} symbol=aiter_paged_prefill_mma_{dt}_{shape} block=128 smem={smem} dt=f16,bf16 shape=d64:42520,d128:83480
AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_f16_d64, half_t, 64)
AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_f16_d128, half_t, 128)
AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_bf16_d64, bf16_t, 64)
AITER_PAGED_PREFILL_MMA_KERNEL(aiter_paged_prefill_mma_bf16_d128, bf16_t, 128)
static_assert(sizeof(Tiles<bf16_t, 64>) == 42520 && sizeof(Tiles<bf16_t, 128>) == 83480, "update smem above");
