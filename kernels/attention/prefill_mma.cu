// Prefill attention on NVIDIA tensor cores (mma.sync m16n8k16, ldmatrix,
// cp.async; sm_80 and up), FlashAttention-2 order: a block of 4 warps takes 64
// consecutive query tokens of one query head, each warp 16 of them, and streams
// the key range through shared memory 64 keys at a time (two buffers, the next
// tile's copy in flight during the math).  Scores stay in registers: the C
// fragments of S = Q K^T become, rounded to 16 bits, the A fragments of O += P V.
//
// Rows are numbered over the whole batch, as in prefill.cu: a row finds its own
// sequence in cu_seqlens_q and masks by its own key range (global key rows), so
// a block straddling sequences needs no special case, and rows of a sequence
// with impossible bounds get zeros.  AMD targets use prefill.cu.
#include "../common/numeric.h"
#include "attention_params.h"
#include "flash_warp.h"
#include "prefill_rows.h"

namespace {

constexpr int kThreads = 128, kRows = 64, kKeys = 64;

template <class T, int D>
struct Tiles {
  T q[kRows * D];
  T k[2][kKeys * D];
  T v[2][kKeys * D];
};

template <class T, int D>
__device__ __forceinline__ void prefill_mma(const PrefillParams &p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<Tiles<T, D> *>(smem_raw);
  __shared__ int range_lo, range_hi;
  const int warp = int(thread_x()) / 32, lane = int(thread_x()) % 32, g = lane / 4, tq = lane % 4;
  const int head = int(block_y()), kvh = head / (p.q_heads / p.kv_heads), row0 = int(block_x()) * kRows;
  // This thread's two rows: warp * 16 + g and + 8.
  int lo[2], hi[2];
  prefill_row_range(p, row0 + warp * 16 + g, &lo[0], &hi[0]);
  prefill_row_range(p, row0 + warp * 16 + g + 8, &lo[1], &hi[1]);
  if (thread_x() == 0) range_lo = 0x7fffffff, range_hi = 0;
  sync_block();
  for (int r = 0; r < 2; ++r)
    if (lo[r] < hi[r]) atomicMin(&range_lo, lo[r]), atomicMax(&range_hi, hi[r]);
  const T *q_base = static_cast<const T *>(p.q) + (long long)head * p.q_head_stride;
  copy_rows<T, D, kRows, kThreads>(s.q, q_base, p.q_token_stride, row0, p.total_q);
  sync_block();
  const int first = range_lo, end = range_hi > range_lo ? range_hi : range_lo;
  const T *k_base = static_cast<const T *>(p.k) + (long long)kvh * p.k_head_stride;
  const T *v_base = static_cast<const T *>(p.v) + (long long)kvh * p.v_head_stride;
  if (first < end) {
    copy_rows<T, D, kKeys, kThreads>(s.k[0], k_base, p.k_token_stride, first, end);
    copy_rows<T, D, kKeys, kThreads>(s.v[0], v_base, p.v_token_stride, first, end);
  }
  commit();
  wait_pending<0>();
  sync_block();
  uint32_t qf[D / 16][4];
  load_q_fragments<T, D>(s.q, warp, lane, qf);
  FlashRows<T, D> rows;
  int buf = 0;
  for (int tile = first; tile < end; tile += kKeys, buf ^= 1) {
    if (tile > first) {
      wait_pending<0>();
      sync_block();  // tile's copy landed; every warp is done with the other buffer
    }
    if (end - tile > kKeys) {
      copy_rows<T, D, kKeys, kThreads>(s.k[buf ^ 1], k_base, p.k_token_stride, tile + kKeys, end);
      copy_rows<T, D, kKeys, kThreads>(s.v[buf ^ 1], v_base, p.v_token_stride, tile + kKeys, end);
    }
    commit();
    float sc[kKeys / 8][4];
    tile_scores<T, D, kKeys>(qf, s.k[buf], lane, sc);
    log2_logits<kKeys>(sc, p.sm.scale, p.sm.softcap);
    // The mask only where the warp's rows do not all see the whole tile.
    const int rlo[2] = {lo[0] - tile, lo[1] - tile}, rhi[2] = {hi[0] - tile, hi[1] - tile};
    if (!__all_sync(0xffffffffu, rlo[0] <= 0 && rlo[1] <= 0 && rhi[0] >= kKeys && rhi[1] >= kKeys)) {
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e / 2, key = nt * 8 + tq * 2 + e % 2;
          if (!(rlo[r] <= key && key < rhi[r])) sc[nt][e] = kNegInf;
        }
    }
    rows.absorb<kKeys>(sc, s.v[buf], lane);
  }
  // Out (and lse) for the rows that exist.
  rows.finish();
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int token = row0 + warp * 16 + g + 8 * r;
    if (token >= p.total_q) continue;
    T *dst = static_cast<T *>(p.out) + (long long)token * p.out_token_stride + (long long)head * p.out_head_stride;
    rows.store(r, dst, p.lse != nullptr ? p.lse + (long long)token * p.q_heads + head : nullptr, tq);
  }
}

}  // namespace

#define AITER_PREFILL_MMA_KERNEL(name, T, D) AITER_ENTRY(name, kThreads, PrefillParams, prefill_mma<T, D>)

// smem = sizeof(Tiles<T, D>): (64 + 4 * 64) rows of D 16-bit elements.
// aiter-kernel-family: op=prefill_attention variant=mma.{dt}.{shape} symbol=aiter_prefill_mma_{dt}_{sym} block=128 smem={smem} dt=f16,bf16 shape=d64:d64:40960,d128:d128:81920
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_f16_d64, half_t, 64)
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_f16_d128, half_t, 128)
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_bf16_d64, bf16_t, 64)
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_bf16_d128, bf16_t, 128)
static_assert(sizeof(Tiles<bf16_t, 64>) == 40960 && sizeof(Tiles<bf16_t, 128>) == 81920, "update smem above");
