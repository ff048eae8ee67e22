// What both paged-prefill kernels (paged_prefill.cu, paged_prefill_mma.cu) do
// with the index arrays in device memory, which the host never reads:
//
// - Tiles.  Sequence b's rows (its Lq new tokens, `per_token` rows each) are cut
//   into tiles of R rows, and its first tile is grid block
//   start(b) = floor(cu_q[b] * per_token / R) + b.  Since
//   start(b + 1) - start(b) >= floor(Lq * per_token / R) + 1 >= its tile count,
//   the sequences' tiles never collide, a tile never straddles two sequences
//   (so it reads one block-table row), and every tile lies below
//   floor(Tq * per_token / R) + B: the grid is the packed rows plus at most one
//   partial tile a sequence, never B x max(Lq).  A block finds its sequence by a
//   binary search over start(); a block that is no tile of a sequence (a gap
//   after a partial tile) exits at once.
// - Lengths.  A context length is read once and clamped to [0, table capacity].
// - Positions.  New token i of a sequence of Lq new tokens and length L sits at
//   position L - Lq + i and sees [max(pos - window_left, 0), pos + 1) (causal) or
//   [max(pos - window_left, 0), L) (not); a token whose position falls before
//   the context (more new tokens than positions, which only the host could
//   reject) sees no key and gets zeros.
// - Block ids.  Each key's id is read once and checked: one outside
//   [0, num_blocks) masks its key (the copy is zero-filled, never read).
//
// cu_seqlens_q values the host cannot check: a tile of a sequence whose bounds
// are impossible (outside [0, Tq], decreasing) is skipped; nothing is read or
// written outside the tensors, but such rows are left as they were.
#pragma once

#include "paged_prefill_params.h"

namespace paged {

// The tile a grid block computes.
struct SeqTile {
  int seq;    // b
  int q0;     // its first query row (cu_seqlens_q[b])
  int lq;     // its new tokens
  int len;    // its context length, clamped to the table's capacity
  int tile;   // the tile's index within the sequence
  int valid;  // 0: no work for this block
};

__device__ __forceinline__ long long tile_start(const int *cu_q, int b, long long per_token, int rows) {
  return (long long)cu_q[b] * per_token / rows + b;
}

// Run by one thread; the result is shared through shared memory.
__device__ __forceinline__ SeqTile find_tile(const PagedPrefillParams &p, long long per_token, int rows,
                                             long long block) {
  int lo = 0, hi = p.batch - 1;
  while (lo < hi) {  // the last b with start(b) <= block
    const int mid = (lo + hi + 1) / 2;
    if (tile_start(p.cu_seqlens_q, mid, per_token, rows) <= block) lo = mid; else hi = mid - 1;
  }
  SeqTile st{lo, 0, 0, 0, 0, 0};
  const int qa = p.cu_seqlens_q[lo], qb = p.cu_seqlens_q[lo + 1];  // each read once
  if (!(0 <= qa && qa <= qb && qb <= p.total_q)) return st;
  const long long first = (long long)qa * per_token / rows + lo, tile = block - first;
  if (tile < 0 || tile * rows >= (long long)(qb - qa) * per_token) return st;
  const long long capacity = (long long)p.max_blocks * p.page_size;
  const long long len = p.context_lens[lo];  // read once
  st.q0 = qa, st.lq = qb - qa, st.tile = int(tile);
  st.len = int(len < 0 ? 0 : len > capacity ? capacity : len);
  st.valid = 1;
  return st;
}

// The keys new token i (0-based among the sequence's new ones) sees: [*lo, *hi).
__device__ __forceinline__ void visible_keys(const PagedPrefillParams &p, const SeqTile &st, long long i, int *lo,
                                             int *hi) {
  const long long pos = (long long)st.len - st.lq + i;
  *lo = *hi = 0;
  if (pos < 0) return;
  const long long h = p.causal ? pos + 1 : st.len;
  const long long l = p.sm.window_left >= 0 && pos - p.sm.window_left > 0 ? pos - p.sm.window_left : 0;
  if (l < h) *lo = int(l), *hi = int(h);
}

// Key position -> element offset of its row (this kv head) in a compact cache
// [num_blocks, page_size, kv_heads, head_dim], through one block-table row.
struct PagedRows {
  const int *table_row;
  long long num_blocks;
  int page_size, kv_heads, head, head_dim;
  __device__ bool row(int pos, long long *k_off, long long *v_off) const {
    const int block = table_row[pos / page_size];  // read once: checked and used as read
    if (block < 0 || block >= num_blocks) return false;
    const long long slot = (long long)block * page_size + pos % page_size;
    *k_off = *v_off = (slot * kv_heads + head) * head_dim;
    return true;
  }
};

}  // namespace paged
