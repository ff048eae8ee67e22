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
#include "mma16.h"
#include "paged_rows.h"

namespace {

constexpr int kThreads = 128, kRows = 64, kKeys = 64;
constexpr float kNegInf = -__builtin_huge_valf();

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// A [rows][D] tile of 16-bit elements in shared memory, its 16-byte chunks
// XOR-swizzled by row so that the 8 rows an ldmatrix reads hit different banks.
template <int D>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

template <class T, int D>
struct Tiles {
  T q[kRows * D];
  T k[2][kKeys * D];
  T v[2][kKeys * D];
  long long key_off[3][kKeys];  // a tile's keys: element offset of their rows in the caches
  unsigned key_ok[3][2];        // bit k of word k / 32: key k is in range with a valid block id
};

// Query rows [first, first + kRows) of one head into a swizzled tile; rows at
// or past `end` become zeros.
template <class T, int D>
__device__ __forceinline__ void copy_queries(T *tile, const T *base, long long token_stride, int first, int end) {
  constexpr int kChunks = D / 8;
  for (int c = int(thread_x()); c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, chunk = c % kChunks, token = first + r;
    const bool valid = token < end;
    copy16(smem_addr(tile + swizzled<D>(r, chunk)), base + (long long)(valid ? token : first) * token_stride + chunk * 8,
           valid);
  }
}

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
  copy_queries<T, D>(s.q, q_base, p.q_token_stride, row0, row_end);
  sync_block();
  if (first < end) copy_keys(s, k_cache, v_cache, 0, 0);
  commit();
  wait_pending<0>();
  sync_block();
  // Q fragments of the warp's 16 rows, all of D (A operand, k = head dim).
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int r = warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2), chunk = kk * 2 + lane / 16;
    ldsm_x4(smem_addr(s.q + swizzled<D>(r, chunk)), qf[kk]);
  }
  float o[D / 8][4] = {};
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
  // Logits in the log2 domain (exp2 with log2(e) folded into the scale).
  constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;
  const float cap = p.sm.softcap, scale = cap > 0.0f ? p.sm.scale : p.sm.scale * kLog2e;
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
    // S = Q K^T: 8 n-tiles of 8 keys.
    float sc[kKeys / 8][4] = {};
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk += 2) {  // one ldmatrix.x4: b0, b1 of two k-steps
        uint32_t b[4];
        ldsm_x4(smem_addr(s.k[buf] + swizzled<D>(nt * 8 + lane % 8, kk * 2 + lane / 8)), b);
        Mma<T>::run(sc[nt], qf[kk], b[0], b[1]);
        Mma<T>::run(sc[nt], qf[kk + 1], b[2], b[3]);
      }
    }
    // Logits; the mask only where the warp's rows do not all see the whole tile
    // (the diagonal, the window's edge, the context's end, invalid block ids).
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = sc[nt][e] * scale;
        if (cap > 0.0f) {
          const float ex = exp2f(2.0f * kLog2e * x / cap);  // tanh through exp
          x = cap * (1.0f - 2.0f / (ex + 1.0f)) * kLog2e;
        }
        sc[nt][e] = x;
      }
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
    // Online softmax per row (a row's 64 scores live in the 4 lanes of a quad).
    float top[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) top[e / 2] = fmaxf(top[e / 2], sc[nt][e]);
    float corr[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      top[r] = fmaxf(top[r], shfl_xor(top[r], 1));
      top[r] = fmaxf(top[r], shfl_xor(top[r], 2));
      const float m_new = fmaxf(m[r], top[r]);
      base[r] = m_new == kNegInf ? 0.0f : m_new;
      corr[r] = exp2f(m[r] - base[r]);
      m[r] = m_new;
      l[r] *= corr[r];
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[dt][e] *= corr[e / 2];
    // P (16 bits) as A fragments: k-chunk kc covers n-tiles 2kc and 2kc + 1.
#pragma unroll
    for (int kc = 0; kc < kKeys / 16; ++kc) {
      uint32_t a[4];
      float pr[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          pr[h][e] = exp2f(sc[2 * kc + h][e] - base[e / 2]);
          l[e / 2] += pr[h][e];
        }
      a[0] = Mma<T>::pack(pr[0][0], pr[0][1]);
      a[1] = Mma<T>::pack(pr[0][2], pr[0][3]);
      a[2] = Mma<T>::pack(pr[1][0], pr[1][1]);
      a[3] = Mma<T>::pack(pr[1][2], pr[1][3]);
      // O += P V: V [keys][D] read transposed, two d-tiles an ldmatrix.x4.
#pragma unroll
      for (int dt = 0; dt < D / 8; dt += 2) {
        uint32_t b[4];
        const int key = kc * 16 + (lane % 8) + 8 * ((lane / 8) % 2), chunk = dt + lane / 16;
        ldsm_x4_t(smem_addr(s.v[buf] + swizzled<D>(key, chunk)), b);
        Mma<T>::run(o[dt], a, b[0], b[1]);
        Mma<T>::run(o[dt + 1], a, b[2], b[3]);
      }
    }
    // Slot after_slot held tile - 1's rows, last read before this iteration's barrier.
    if (map_after) store_key_rows(s, kr, after_slot, tile + 2 * kKeys, t, after_id);
  }
  // Rows' sums over the quad, then out (and lse) for the rows that exist.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += shfl_xor(l[r], 1);
    l[r] += shfl_xor(l[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int token = row0 + warp * 16 + g + 8 * r;
    if (token >= row_end) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    T *dst = static_cast<T *>(p.out) + (long long)token * p.out_token_stride + (long long)head * p.out_head_stride;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      const uint32_t pair = Mma<T>::pack(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
      *reinterpret_cast<uint32_t *>(dst + dt * 8 + tq * 2) = pair;
    }
    if (p.lse != nullptr && tq == 0)
      p.lse[(long long)token * p.q_heads + head] = l[r] > 0.0f ? (m[r] + log2f(l[r])) * kLn2 : kNegInf;
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
