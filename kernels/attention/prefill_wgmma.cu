// Prefill attention on Hopper (sm_90a): wgmma products fed by TMA, warp-
// specialized in FlashAttention-3's manner.  An item is 128 query tokens of
// one query head (192 at head dim 64); a block takes one item, or in the
// `_pairs` kernels two, one after the other (Items below), so that the second
// one's first copies overlap the first one's last products and stores.
// Warpgroup 0 copies (one thread issues TMA: an item's Q, then K and V tiles of
// 128 keys (80 where v's head dim is 256) into a ring of 3 stages (2 where q/k
// and v dims sum above 256), with a full and an empty barrier each (K's and
// V's each at 2 stages)), the next two (three) each own 64 of the rows.
// Variants: head dims 64, 128, 256, and 192 for q/k with 128 for v, each with
// and without a soft-cap (Dims below).
//
// A consumer's step for key tile i: issue S_i = Q K_i^T (both operands in
// shared memory), issue O += P_{i-1} V_{i-1} (P in registers, V read MN-major
// as TMA laid its rows down), wait for S_i only, run S_i's online softmax in
// place while P V is still on the tensor cores, then wait for P V, pack S_i as
// the next P and rescale O.  P is packed only after that wait: its registers are
// what the P V in flight reads.  The consumers take turns (a ring) issuing their
// products (a named barrier each), so one's softmax runs under the other's
// products.  At 2 stages K_i's half of a stage is freed once S_i is done and
// V_i's once P V_i is, and the copier issues K_{i+1} before V_i, so the next
// scores' keys arrive while this tile's values are still in use: with one
// barrier a stage, K_{i+1} waited for P V_{i-1}, a copy's latency before each
// S (D256 1.26-1.43x faster split, H200 2026-11-28; at 3 stages split was
// 2-5% slower at D128, so those keep one barrier a stage, and D128 in 2 split
// stages was no faster than in 3).  At one-barrier stages the block's first K
// tile still lands on a barrier of its own, so that S_0 waits for K_0 alone
// (0-1.3% faster at S 128-4096, H200 2026-11-28).  A consumer's rows of out go through its
// rows of Q's shared memory and a TMA store (store_out: 2-8% faster at S
// 128-2048 than 4-byte stores from registers, H200 2026-11-28).
//
// Rows are numbered over the packed batch (prefill_rows.h): each row's
// visible keys are a range of global key rows, the block walks the union of its
// rows' ranges, and only tiles that some row sees in part are masked (a
// separate code path: the inner tiles carry no per-score test).  TMA fills rows
// past the tensors with zeros; rows of another sequence are masked like any key
// a row does not see.  The launcher (libaiter/gpu/attention_prefill_wgmma.cpp)
// builds the three tensor maps: [heads][tokens][D] boxes of 64 elements (128
// bytes, the swizzle span) by the block's rows for Q and a tile's keys for K and V,
// and takes only softmax scales > 0 (the row maxima are taken over the raw scores).
#include "../gemm/tma.h"
#include "../gemm/wgmma_tile.h"
#include "prefill_wgmma_params.h"
#include "mma16.h"
#include "prefill_rows.h"
#include "prefill_wgmma_rs.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

namespace {

// A variant's head dims (q and k: DK, v: DV), whether logits are soft-capped,
// and what follows from them: keys a tile and stages of the K/V ring.  Tiles
// of 128 keys, or 80 at DV 256: there 128 keys would not leave registers for
// O, and 80 keep S = Q K^T (both operands in shared memory) under the shared
// memory's rate (128 bytes a cycle at n64, 115 at n80).  3 stages, or 2 split
// ones (K and V halves on their own barriers) where q/k and v dims sum above
// 256, as many as fit in 227 KiB.  At 192/128, 2 split stages of 128 keys ran
// 7-9% faster than 3 one-barrier stages of 80 (H200, 2026-11-28), which had
// been 19% faster than 2 one-barrier stages of 128.
//
// Consumers: 64 query rows each, two (a block of 128 rows), or three at head
// dim 64 without a cap (192 rows, FlashAttention-3's tile there: a D64 tile's
// products are short beside its softmax, and a third warpgroup gives the
// tensor cores another's products to run; 160 registers a consumer thread hold
// O, S and P at D64, but not the cap's tanh as well: 13 spilled).
//
// A kernel per (dims, cap), so that neither path's registers constrain the
// other's: both in one kernel, chosen at run time, spilled 4 registers at D256
// where neither alone did (and 20 with the cap's 80-key tiles).
//
// Row tiles a block takes (ITEMS, Items below): 1, or 2 in the `_pairs`
// kernels (D128 only) that the launcher picks for short sequences.  A kernel
// each, not one taking either at run time: that one was 5-13% slower at S
// 2048-8192 taking one (H200, 2026-11-28; likely, not profiled: the second
// tile's state live in the consumers' loop).
template <int DK_, int DV_, bool SOFTCAP_, int ITEMS_ = 1>
struct Dims {
  static constexpr int DK = DK_, DV = DV_;
  static constexpr bool kSoftcap = SOFTCAP_;
  static constexpr int kConsumers = prefill_wgmma_consumers(DK, SOFTCAP_);
  static constexpr int kRows = 64 * kConsumers, kThreads = 128 * (1 + kConsumers);
  static constexpr int kConsumerRegs = kConsumers == 3 ? 160 : 240;  // with the copier's 24: at most 64K a block
  static constexpr int kKeys = prefill_wgmma_tile_keys(DV);
  static constexpr int kStages = DK + DV > 256 ? 2 : 3;
  static constexpr bool kSplitStages = kStages == 2;  // K and V halves with their own barriers (see the top)
  static constexpr int kItems = ITEMS_;
  // (three consumers' 160 registers cannot also hold a second tile's row ranges: 52 bytes spilled)
  static_assert(kItems == 1 || (kConsumers == 2 && !kSplitStages), "two tiles a block at two consumers, 3 stages");
};
constexpr float kNegInf = -__builtin_huge_valf();
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

__device__ __forceinline__ float exp2_approx(float x) {  // 2^x; 2^-inf = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// tanh(x) = 1 - 2 / (e^2x + 1), through ex2 and a fast division: absolute
// error ~1e-7, where the hardware's tanh.approx (relative ~2^-11, times the cap)
// is too coarse for the LSE output's 1e-4.  Saturates to +-1 where e^2x
// overflows or vanishes.
__device__ __forceinline__ float tanh_exp2(float x) {
  return 1.0f - __fdividef(2.0f, exp2_approx(2.0f * kLog2e * x) + 1.0f);
}

// Shared memory from a 1024-byte aligned base: Q (DK / 64 blocks of [kRows rows][128 B]),
// then per stage K (DK / 64 blocks of [kKeys rows][128 B]) and V (DV / 64 such
// blocks), then the barriers: Q's full and empty, then a stage's full and empty
// ones (K's and V's where the stages are split; otherwise the V names alias the K ones),
// then the first K tile's own full barrier.
template <class S>
struct Smem {
  static constexpr int kStages = S::kStages;
  static constexpr int kKeyBlock = S::kKeys * 128;  // one 64-column block of a tile's keys
  static constexpr int kQBlock = S::kRows * 128;  // one 64-column block of Q
  static constexpr int kQ = S::DK / 64 * kQBlock;
  static constexpr int kStage = (S::DK + S::DV) / 64 * kKeyBlock;
  static constexpr int kBarriers = kQ + kStages * kStage;
  static constexpr int kKBytes = S::DK / 64 * kKeyBlock, kVBytes = S::DV / 64 * kKeyBlock;
  static constexpr int kRing = (S::kSplitStages ? 4 : 2) * kStages;  // the stages' barriers
  static constexpr int kPins = kBarriers + 8 * (3 + kRing);  // a byte per consumer thread (pin_before_wait)
  static constexpr int kBytes = kPins + 128 * S::kConsumers + 1024;  // + the alignment slack
  uint32_t base;
  __device__ uint32_t q(int block) const { return base + block * kQBlock; }
  __device__ uint32_t k(int s, int block) const { return base + kQ + s * kStage + block * kKeyBlock; }
  __device__ uint32_t v(int s, int block) const { return k(s, S::DK / 64 + block); }
  __device__ uint32_t q_full() const { return base + kBarriers; }
  __device__ uint32_t q_empty() const { return base + kBarriers + 8; }
  __device__ uint32_t k_full(int s) const { return base + kBarriers + 8 * (2 + s); }
  __device__ uint32_t k_empty(int s) const { return k_full(kStages + s); }
  __device__ uint32_t v_full(int s) const { return S::kSplitStages ? k_full(2 * kStages + s) : k_full(s); }
  __device__ uint32_t v_empty(int s) const { return S::kSplitStages ? k_full(3 * kStages + s) : k_empty(s); }
  // One-barrier stages: the block's first K tile lands on a barrier of its own,
  // so that S_0 starts without waiting for V_0 (which completes k_full(0)).
  __device__ uint32_t first_k_full() const { return k_full(kRing); }
  __device__ uint32_t pin() const { return base + kPins + threadIdx.x - 128; }
};

// A descriptor of V's 64-column block read MN-major (B of P V): 8-key groups of
// 128-byte rows, 1024 bytes apart; one block spans the product's 64 columns,
// so the leading offset is unused.  16 keys further is 2048 bytes on.
__device__ __forceinline__ uint64_t mn_major_descriptor(uint32_t address) {
  return uint64_t((address & 0x3FFFF) >> 4) | uint64_t(1) << 16 | uint64_t(1024 >> 4) << 32 | uint64_t(1) << 62;
}

template <bool B>
struct BoolTag {
  static constexpr bool value = B;
};

// An item's key range: the union of its rows' ranges [start, stop), and the
// part every row sees whole [inner_lo, inner_hi) (empty where a row sees nothing).
struct KeyRange {
  int start, stop, inner_lo, inner_hi;
};

// A block's items: block y takes row tile R - 1 - y of the R over the packed
// batch, or with two a block tiles R - 1 - 2y and R - 2 - 2y, the second's
// first copies overlapping the first's last products and stores.  The last
// tiles first: the longest causal key ranges start first, and a second tile's
// keys are mostly its first's, still in L2.
// Two tiles a block, measured on an H200 (2026-11-28, causal D128 H32, B x S
// = 8192 / 16384): 10-17% faster at S 128-512, 2-6% at S 1024.  Tiles R - 1 -
// y and y instead (equal work in every block) were no better; a persistent
// grid taking tiles in turn, or in a snake order, was 4-28% slower from S 1024
// on (docs/performance_attention.md).
struct Items {
  int count, row0[2];
};
template <class S>
__device__ __forceinline__ Items block_items(const PrefillParams &p) {
  const int row_tiles = int((p.total_q + (long long)S::kRows - 1) / S::kRows), y = int(blockIdx.y);
  if constexpr (S::kItems == 1) return {1, {(row_tiles - 1 - y) * S::kRows, 0}};
  const int first = row_tiles - 1 - 2 * y;
  return {first > 0 ? 2 : 1, {first * S::kRows, (first - 1) * S::kRows}};
}

// Each item's key range, and this consumer thread's two rows' ranges in each
// (lo[item][r], hi[item][r]); the rows' searches go together.
template <class S>
__device__ __forceinline__ void block_keys(const PrefillParams &p, const Items &items, KeyRange (&keys)[2],
                                           int (&lo)[2][2], int (&hi)[2][2]) {
  constexpr int kRowsSearched = 2 * S::kItems;
  __shared__ int range[S::kItems][5];  // min lo, max hi, max lo, min hi, a row of the tensor seeing nothing
  if (threadIdx.x < S::kItems) {
    int *r = range[threadIdx.x];
    r[0] = 0x7fffffff, r[1] = 0, r[2] = 0, r[3] = 0x7fffffff, r[4] = 0;
  }
  __syncthreads();
  if (threadIdx.x >= 128) {
    const int wg = int(threadIdx.x) / 128 - 1, warp = int(threadIdx.x) % 128 / 32, g = int(threadIdx.x) % 32 / 4;
    int t[kRowsSearched], l[kRowsSearched], h[kRowsSearched];
#pragma unroll
    for (int n = 0; n < kRowsSearched; ++n)
      t[n] = n / 2 < items.count ? items.row0[n / 2] + wg * 64 + warp * 16 + g + 8 * (n % 2) : p.total_q;
    prefill_row_ranges<kRowsSearched>(p, t, l, h);
#pragma unroll
    for (int n = 0; n < kRowsSearched; ++n) {
      int *r = range[n / 2];
      lo[n / 2][n % 2] = l[n], hi[n / 2][n % 2] = h[n];
      if (l[n] < h[n]) {
        atomicMin(&r[0], l[n]), atomicMax(&r[1], h[n]);
        atomicMax(&r[2], l[n]), atomicMin(&r[3], h[n]);
      } else if (t[n] < p.total_q) {
        r[4] = 1;
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < S::kItems; ++j) {
    const int *r = range[j];
    keys[j] = {r[0], r[1] > r[0] ? r[1] : r[0], r[2], r[3]};
    if (r[4] || keys[j].start >= keys[j].stop) keys[j].inner_lo = keys[j].inner_hi = keys[j].start;
  }
}

template <class S>
__device__ __forceinline__ int key_tiles(const KeyRange &keys) {
  return keys.stop > keys.start ? (keys.stop - keys.start + S::kKeys - 1) / S::kKeys : 0;
}

// An item's Q: the first item's issued before the key ranges are known (it
// needs only row0), the second's once the consumers are done with the first's.
template <class S>
__device__ void copy_q(const PrefillTmaParams &q, const Smem<S> &sm, int row0, int head) {
  barrier_arrive_expect(sm.q_full(), Smem<S>::kQ);
  for (int b = 0; b < S::DK / 64; ++b) tma_copy_3d(sm.q(b), &q.q_map, sm.q_full(), b * 64, row0, head);
}

// Tile i's K and V in one copy, or (split stages) K_0, then K_{i+1} before V_i,
// each waiting for its own half of the stage.
template <class S>
__device__ void produce(const PrefillTmaParams &q, const Smem<S> &sm, const Items &items, const KeyRange (&keys)[2],
                        int head, int kvh) {
  constexpr int kStages = S::kStages;
  // Ring tile i (its first key k0): K, V or both.
  auto copy = [&](int i, int k0, bool with_k, bool with_v) {
    const int s = i % kStages;
    const uint32_t full = with_k ? sm.k_full(s) : sm.v_full(s);
    barrier_wait(with_k ? sm.k_empty(s) : sm.v_empty(s), ((i / kStages) & 1) ^ 1);
    // (ring tile 0 at one-barrier stages: K on first_k_full, V alone on k_full(0))
    const bool k_apart = !S::kSplitStages && i == 0 && with_k;
    const uint32_t k_full = k_apart ? sm.first_k_full() : full;
    if (k_apart) barrier_arrive_expect(k_full, Smem<S>::kKBytes);
    barrier_arrive_expect(full, (with_k && !k_apart ? Smem<S>::kKBytes : 0) + (with_v ? Smem<S>::kVBytes : 0));
    for (int b = 0; with_k && b < S::DK / 64; ++b) tma_copy_3d(sm.k(s, b), &q.k_map, k_full, b * 64, k0, kvh);
    for (int b = 0; with_v && b < S::DV / 64; ++b) tma_copy_3d(sm.v(s, b), &q.v_map, full, b * 64, k0, kvh);
  };
  if constexpr (S::kSplitStages) {  // (one item a block)
    const int tiles = key_tiles<S>(keys[0]);
    auto first_key = [&](int i) { return keys[0].start + i * S::kKeys; };
    if (tiles > 0) copy(0, first_key(0), true, false);
    for (int i = 0; i < tiles; ++i) {
      if (i + 1 < tiles) copy(i + 1, first_key(i + 1), true, false);
      copy(i, first_key(i), false, true);
    }
  } else {
    int i = 0;  // key tiles through the ring so far
    for (int j = 0; j < items.count; ++j) {
      if (j > 0) barrier_wait(sm.q_empty(), 0), copy_q<S>(q, sm, items.row0[1], head);
      const KeyRange k = j ? keys[1] : keys[0];  // (a select: an array indexed by j would go to local memory)
      for (int k0 = k.start; k0 < k.stop; k0 += S::kKeys, ++i) copy(i, k0, true, true);
    }
  }
}

// One consumer warpgroup's state: O (per 64-column block), the tile's scores
// (then its probabilities), P packed for the next P V, and each of a thread's
// two rows' running maximum (of raw scores, or of soft-capped log2 logits) and sum.
template <class S>
struct RowState {
  float o[S::DV / 64][32];
  float s[S::kKeys / 2];
  uint32_t p[S::kKeys / 16][4];
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
};

// What turns a score into a log2-domain logit: `mul` times the (soft-capped)
// score; the soft-capped logits carry the factor already.
struct Logits {
  float mul, scale, cap;
};

// The online softmax of one tile's scores, in place: masking (MASKED tiles
// only), soft-cap, the new maxima and sums, probabilities 2^(mul s - mul m) in
// s, and each row's factor for O in corr (applied once P V of the tile before
// has landed).
template <bool MASKED, bool SOFTCAP, class S>
__device__ __forceinline__ void softmax(RowState<S> &st, const Logits &lg, int k0, const int (&lo)[2],
                                        const int (&hi)[2], float (&corr)[2]) {
  const int tq = int(threadIdx.x) % 4;
#pragma unroll
  for (int i = 0; i < S::kKeys / 2; ++i) {
    if constexpr (SOFTCAP) st.s[i] = lg.cap * tanh_exp2(st.s[i] * lg.scale);
    if constexpr (MASKED) {
      const int key = k0 + i / 4 * 8 + tq * 2 + i % 2, r = i % 4 / 2;
      st.s[i] = lo[r] <= key && key < hi[r] ? st.s[i] : kNegInf;
    }
  }
  float top[2] = {st.m[0], st.m[1]};
#pragma unroll
  for (int i = 0; i < S::kKeys / 2; ++i) top[i % 4 / 2] = fmaxf(top[i % 4 / 2], st.s[i]);
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    top[r] = fmaxf(top[r], shfl_xor(top[r], 1));
    top[r] = fmaxf(top[r], shfl_xor(top[r], 2));
    base[r] = top[r] == kNegInf ? 0.0f : top[r] * lg.mul;  // a row with no key yet: p = 0, not NaN
    corr[r] = exp2_approx(st.m[r] * lg.mul - base[r]);
    st.m[r] = top[r];
    st.l[r] *= corr[r];
  }
#pragma unroll
  for (int i = 0; i < S::kKeys / 2; ++i) {
    st.s[i] = exp2_approx(fmaf(st.s[i], lg.mul, -base[i % 4 / 2]));
    st.l[i % 4 / 2] += st.s[i];
  }
}

// P's A fragments (k-step j: keys 16j..16j+15) from the probabilities.
template <class T, class S>
__device__ __forceinline__ void pack_p(RowState<S> &st) {
#pragma unroll
  for (int j = 0; j < S::kKeys / 16; ++j)
#pragma unroll
    for (int h = 0; h < 4; ++h) st.p[j][h] = Mma<T>::pack(st.s[8 * j + 2 * h], st.s[8 * j + 2 * h + 1]);
}

template <class S>
__device__ __forceinline__ void rescale(RowState<S> &st, const float (&corr)[2]) {
#pragma unroll
  for (int b = 0; b < S::DV / 64; ++b)
#pragma unroll
    for (int i = 0; i < 32; ++i) st.o[b][i] *= corr[i % 4 / 2];
}

// S = Q K^T of this warpgroup's 64 rows against stage s's keys, as one wgmma group.
template <class T, class S>
__device__ __forceinline__ void issue_scores(const Smem<S> &sm, int s, int wg, RowState<S> &st) {
  fence_registers(st.s);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int b = 0; b < S::DK / 64; ++b) {
    const uint64_t qd = smem_descriptor(sm.q(b) + wg * 64 * 128), kd = smem_descriptor(sm.k(s, b));
#pragma unroll
    for (int step = 0; step < 4; ++step)
      WgmmaInstruction<T, S::kKeys>::run(st.s, qd + 2 * step, kd + 2 * step, b > 0 || step > 0);
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  fence_registers(st.s);
}

// V's four 64-column blocks read MN-major as one n256 operand (as MLA decode
// reads its values): the blocks a key block apart (leading offset), 8-key
// groups 1024 bytes apart.
template <class S>
__device__ __forceinline__ uint64_t wide_values_descriptor(uint32_t address) {
  return uint64_t((address & 0x3FFFF) >> 4) | uint64_t(Smem<S>::kKeyBlock >> 4) << 16 | uint64_t(1024 >> 4) << 32 |
         uint64_t(1) << 62;
}

// O += P V over stage s's values, as one wgmma group: at DV 256 one n256
// product a k-step (its accumulators are O's four blocks in order; measured
// 4% faster there, 1-3% slower at DV 128 than n64 products, H100 2026-11-27).
template <class T, class S>
__device__ __forceinline__ void issue_pv(const Smem<S> &sm, int s, RowState<S> &st) {
#pragma unroll
  for (int b = 0; b < S::DV / 64; ++b) fence_registers(st.o[b]);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int j = 0; j < S::kKeys / 16; ++j) {
    if constexpr (S::DV == 256)
      WgmmaRs<T, 256>::run(reinterpret_cast<float (&)[128]>(st.o), st.p[j],
                           wide_values_descriptor<S>(sm.v(s, 0) + j * 2048), 1);
    else
#pragma unroll
      for (int b = 0; b < S::DV / 64; ++b)
        WgmmaRs<T, 64>::run(st.o[b], st.p[j], mn_major_descriptor(sm.v(s, b) + j * 2048), 1);
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#pragma unroll
  for (int b = 0; b < S::DV / 64; ++b) fence_registers(st.o[b]);
}

// Stores a byte of the tile's row sums, the softmax's last result, to this
// thread's own byte of shared memory (never read; a byte, as 1 KiB more would
// pass the 227 KiB a block may have at D128).  ptxas does not move the wait for P V
// above a shared-memory store, so the softmax stays before that wait, under
// the P V in flight; without the store ptxas hoisted the wait above nearly all
// of the softmax (WARPGROUP.DEPBAR.LE 0 some 30 instructions after the wait
// for the scores in the SASS), and nothing overlapped.
template <class S>
__device__ __forceinline__ void pin_before_wait(const Smem<S> &sm, const float (&l)[2]) {
  asm volatile("st.shared.b8 [%0], %1;" ::"r"(sm.pin()), "r"(__float_as_uint(l[0] + l[1])) : "memory");
}

// The consumers' turns at the tensor cores, in a ring: consumer wg waits on
// named barrier 1 + wg and passes the turn to the next one's; each barrier is
// completed by one warpgroup waiting (128 threads) and the one before arriving (128).
// (Named barriers kStoreGroup + wg: one consumer's threads before its out store.)
constexpr int kStoreGroup = 4;
__device__ __forceinline__ void wait_turn(int wg) {
  asm volatile("bar.sync %0, 256;" ::"r"(1 + wg) : "memory");
}
template <class S>
__device__ __forceinline__ void pass_turn(int wg) {
  asm volatile("bar.arrive %0, 256;" ::"r"(1 + (wg + 1) % S::kConsumers) : "memory");
}

// An item's rows of out (and lse), O over the rows' sums.  BY_TMA: through
// this consumer's 64 rows of Q's shared memory (free once its last S is done,
// and no later item's Q comes there) and one TMA store a 64-column block, which
// writes whole lines and leaves the copy to the TMA unit; else directly, a
// 4-byte pair of columns at a time, for the rows that exist.
template <class T, class S>
__device__ void store_out(const PrefillTmaParams &q, const Smem<S> &sm, RowState<S> &st, const Logits &lg, int row0,
                          int head, bool by_tma) {
  const PrefillParams &p = q.p;
  const int wg = int(threadIdx.x) / 128 - 1, warp = int(threadIdx.x) % 128 / 32;
  const int g = int(threadIdx.x) % 32 / 4, tq = int(threadIdx.x) % 4;
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {  // the rows' sums over the quad; lse for the rows that exist
    st.l[r] += shfl_xor(st.l[r], 1);
    st.l[r] += shfl_xor(st.l[r], 2);
    inv[r] = st.l[r] > 0.0f ? 1.0f / st.l[r] : 0.0f;
    const int token = row0 + wg * 64 + warp * 16 + g + 8 * r;
    if (p.lse != nullptr && tq == 0 && token < p.total_q)
      p.lse[(long long)token * p.q_heads + head] = st.l[r] > 0.0f ? st.m[r] * lg.mul * kLn2 + logf(st.l[r]) : kNegInf;
  }
  if (by_tma) {
    // Row r of a 128-byte-swizzled block: its 16-byte chunk n at n ^ (r % 8), and r % 8 = g.
#pragma unroll
    for (int b = 0; b < S::DV / 64; ++b)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int n = 0; n < 8; ++n) {
          const int i = 4 * n + 2 * r, row = warp * 16 + g + 8 * r;
          const uint32_t a = sm.q(b) + (wg * 64 + row) * 128 + ((n ^ g) << 4) + tq * 4;
          asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(Mma<T>::pack(st.o[b][i] * inv[r], st.o[b][i + 1] * inv[r]))
                       : "memory");
        }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync %0, 128;" ::"r"(kStoreGroup + wg) : "memory");
    if (threadIdx.x % 128 == 0) {
      for (int b = 0; b < S::DV / 64; ++b) tma_store_3d(sm.q(b) + wg * 64 * 128, &q.o_map, b * 64, row0 + wg * 64, head);
      tma_store_commit();
      tma_store_read_wait();  // the block's shared memory outlives the copy's reads
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int token = row0 + wg * 64 + warp * 16 + g + 8 * r;
    if (token >= p.total_q) continue;
    T *dst = static_cast<T *>(p.out) + (long long)token * p.out_token_stride + (long long)head * p.out_head_stride;
#pragma unroll
    for (int b = 0; b < S::DV / 64; ++b)
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        const int i = 4 * n + 2 * r;
        *reinterpret_cast<uint32_t *>(dst + b * 64 + n * 8 + tq * 2) = Mma<T>::pack(st.o[b][i] * inv[r], st.o[b][i + 1] * inv[r]);
      }
  }
}

// Item j of the block for this consumer: `base` key tiles went through the ring before it.
template <class T, class S>
__device__ void consume_item(const PrefillTmaParams &q, const Smem<S> &sm, const Items &items, int j,
                             const KeyRange &keys, int row0, int head, const int (&lo)[2], const int (&hi)[2],
                             int base) {
  const PrefillParams &p = q.p;
  const int wg = int(threadIdx.x) / 128 - 1;
  constexpr int kKeys = S::kKeys, kStages = S::kStages;
  constexpr bool SOFTCAP = S::kSoftcap;
  RowState<S> st;
#pragma unroll
  for (int b = 0; b < S::DV / 64; ++b)
#pragma unroll
    for (int i = 0; i < 32; ++i) st.o[b][i] = 0.0f;
  const Logits lg{SOFTCAP ? kLog2e : p.sm.scale * kLog2e, SOFTCAP ? p.sm.scale / p.sm.softcap : 0.0f, p.sm.softcap};
  const int tiles = key_tiles<S>(keys);
  // Tile i: its stage, its full barrier's phase, its first key, whether masked.
  auto stage = [&](int i) { return (base + i) % kStages; };
  auto phase = [&](int i) { return unsigned((base + i) / kStages) & 1u; };
  auto first_key = [&](int i) { return keys.start + i * kKeys; };
  auto masked = [&](int i) { return first_key(i) < keys.inner_lo || first_key(i) + kKeys > keys.inner_hi; };
  float corr[2];
  barrier_wait(sm.q_full(), unsigned(j) & 1u);
  const bool signals = threadIdx.x % 128 == 0;  // one arrival a warpgroup on the empty barriers
  const bool frees_keys = signals && S::kSplitStages;  // K's half freed on its own
  // Ring tile 0's K came on its own barrier (one-barrier stages); its V
  // completes k_full(0), waited for before its P V.
  const bool k_apart = !S::kSplitStages && base == 0;
  if (tiles > 0) {
    barrier_wait(k_apart ? sm.first_k_full() : sm.k_full(stage(0)), phase(0));
    issue_scores<T, S>(sm, stage(0), wg, st);
    wgmma_wait<0>();
    fence_registers(st.s);
    if (frees_keys) barrier_arrive(sm.k_empty(stage(0)));
    if (masked(0))
      softmax<true, SOFTCAP, S>(st, lg, first_key(0), lo, hi, corr);
    else
      softmax<false, SOFTCAP, S>(st, lg, first_key(0), lo, hi, corr);
    pack_p<T, S>(st);
  }
  constexpr int kLast = S::kConsumers - 1;
  if (wg == kLast && tiles > 1) pass_turn<S>(wg);  // the last consumer lets the first issue first
  auto step = [&](int i, auto masked_tag) {
    constexpr bool kMasked = decltype(masked_tag)::value;
    barrier_wait(sm.k_full(stage(i)), phase(i));
    if (S::kSplitStages || (k_apart && i == 1)) barrier_wait(sm.v_full(stage(i - 1)), phase(i - 1));
    wait_turn(wg);
    issue_scores<T, S>(sm, stage(i), wg, st);
    issue_pv<T, S>(sm, stage(i - 1), st);
    if (wg < kLast || i + 1 < tiles) pass_turn<S>(wg);  // (the last turn is not passed: the barriers end balanced)
    wgmma_wait<1>();  // the scores (the older group) are done; P V may run on
    fence_registers(st.s);
    if (frees_keys) barrier_arrive(sm.k_empty(stage(i)));
    softmax<kMasked, SOFTCAP, S>(st, lg, first_key(i), lo, hi, corr);
    pin_before_wait(sm, st.l);
    wgmma_wait<0>();  // P V of tile i - 1 is done: P may be rewritten, O rescaled
#pragma unroll
    for (int b = 0; b < S::DV / 64; ++b) fence_registers(st.o[b]);
    if (signals) barrier_arrive(sm.v_empty(stage(i - 1)));
    pack_p<T, S>(st);
    rescale<S>(st, corr);
  };
#pragma unroll 1
  for (int i = 1; i < tiles; ++i) {
    if (masked(i))
      step(i, BoolTag<true>{});
    else
      step(i, BoolTag<false>{});
  }
  if (j + 1 < items.count) {  // every score product was waited for: the next item's Q may come
    __syncwarp();
    if (threadIdx.x % 32 == 0) barrier_arrive(sm.q_empty());
  }
  if (tiles > 0) {
    if (S::kSplitStages || (k_apart && tiles == 1)) barrier_wait(sm.v_full(stage(tiles - 1)), phase(tiles - 1));
    issue_pv<T, S>(sm, stage(tiles - 1), st);
    wgmma_wait<0>();
#pragma unroll
    for (int b = 0; b < S::DV / 64; ++b) fence_registers(st.o[b]);
    if (signals) barrier_arrive(sm.v_empty(stage(tiles - 1)));
  }
  store_out<T, S>(q, sm, st, lg, row0, head, q.o_by_tma && j + 1 == items.count);
}

// A consumer warpgroup's items in turn.
template <class T, class S>
__device__ void consume(const PrefillTmaParams &q, const Smem<S> &sm, const Items &items, const KeyRange (&keys)[2],
                        int head, const int (&lo)[2][2], const int (&hi)[2][2]) {
  for (int j = 0, base = 0; j < items.count; ++j) {
    // Selects, not arrays indexed by j (which would go to local memory).
    const KeyRange k = j ? keys[1] : keys[0];
    const int l[2] = {j ? lo[1][0] : lo[0][0], j ? lo[1][1] : lo[0][1]};
    const int h[2] = {j ? hi[1][0] : hi[0][0], j ? hi[1][1] : hi[0][1]};
    consume_item<T, S>(q, sm, items, j, k, j ? items.row0[1] : items.row0[0], head, l, h, base);
    base += key_tiles<S>(k);
  }
}

// Grid: x = query heads, y = row tiles or pairs of them (block_items).
template <class T, class S>
__device__ void prefill_wgmma(const PrefillTmaParams &q) {
  enter_stream_order();
  extern __shared__ __align__(1024) unsigned char smem[];
  const Smem<S> sm{(smem_address(smem) + 1023u) & ~1023u};  // the manifest asks 1 KiB extra
  const PrefillParams &p = q.p;
  const int head = int(blockIdx.x);
  const int kvh = head / (p.q_heads / p.kv_heads);
  const Items items = block_items<S>(p);
  if (threadIdx.x == 0) {
    barrier_init(sm.q_full(), 1), barrier_init(sm.q_empty(), 4 * S::kConsumers);
    for (int s = 0; s < S::kStages; ++s) {
      barrier_init(sm.k_full(s), 1), barrier_init(sm.k_empty(s), S::kConsumers);
      if (S::kSplitStages) barrier_init(sm.v_full(s), 1), barrier_init(sm.v_empty(s), S::kConsumers);
    }
    barrier_init(sm.first_k_full(), 1);
    barrier_init_fence();
    tma_prefetch_map(&q.k_map), tma_prefetch_map(&q.v_map);
    copy_q<S>(q, sm, items.row0[0], head);  // under block_keys' reads of the sequence bounds
  }
  KeyRange keys[2];
  int lo[2][2] = {}, hi[2][2] = {};
  block_keys<S>(p, items, keys, lo, hi);  // (its barriers also publish the initialized ones)
  if (threadIdx.x < 128) {
    registers_shrink<24>();
    if (threadIdx.x == 0) produce<S>(q, sm, items, keys, head, kvh);
  } else {
    registers_grow<S::kConsumerRegs>();
    consume<T, S>(q, sm, items, keys, head, lo, hi);
  }
}

}  // namespace

// One kernel per head dims and cap (name_cap with a soft-cap); name_pairs and
// name_cap_pairs take two row tiles a block.
#define AITER_PREFILL_WGMMA(name, T, DK, DV)                                                                      \
  extern "C" __global__ void __launch_bounds__(Dims<DK, DV, false>::kThreads, 1)                                 \
      name(const __grid_constant__ PrefillTmaParams q) {                                                          \
    prefill_wgmma<T, Dims<DK, DV, false>>(q);                                                                     \
  }                                                                                                               \
  extern "C" __global__ void __launch_bounds__(Dims<DK, DV, true>::kThreads, 1)                                  \
      name##_cap(const __grid_constant__ PrefillTmaParams q) {                                                    \
    prefill_wgmma<T, Dims<DK, DV, true>>(q);                                                                      \
  }
#define AITER_PREFILL_WGMMA_PAIRS(name, T, DK, DV)                                                                \
  extern "C" __global__ void __launch_bounds__(Dims<DK, DV, false, 2>::kThreads, 1)                              \
      name##_pairs(const __grid_constant__ PrefillTmaParams q) {                                                  \
    prefill_wgmma<T, Dims<DK, DV, false, 2>>(q);                                                                  \
  }                                                                                                               \
  extern "C" __global__ void __launch_bounds__(Dims<DK, DV, true, 2>::kThreads, 1)                               \
      name##_cap_pairs(const __grid_constant__ PrefillTmaParams q) {                                              \
    prefill_wgmma<T, Dims<DK, DV, true, 2>>(q);                                                                   \
  }

// block = Dims::kThreads; smem = Smem<Dims>::kBytes: Q + the K/V stages + barriers + pins + 1 KiB of alignment
// slack (with the 1 KiB of static shared memory ptxas reports, at most the 227 KiB a block may have).
// aiter-kernel-family: op=prefill_attention variant=wgmma.{dt}.{shape} symbol=aiter_prefill_wgmma_{dt}_{sym} block={block} smem={smem} dt=f16@90,bf16@90 shape=d64:d64:512:124360,d128:d128:384:230728,d256:d256:384:230744,d192v128:d192v128:384:214360,d64.cap:d64_cap:384:116040,d128.cap:d128_cap:384:230728,d256.cap:d256_cap:384:230744,d192v128.cap:d192v128_cap:384:214360,d128.pairs:d128_pairs:384:230728,d128.cap.pairs:d128_cap_pairs:384:230728
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_f16_d64, half_t, 64, 64)
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_f16_d128, half_t, 128, 128)
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_f16_d256, half_t, 256, 256)
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_f16_d192v128, half_t, 192, 128)
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_bf16_d64, bf16_t, 64, 64)
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_bf16_d128, bf16_t, 128, 128)
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_bf16_d256, bf16_t, 256, 256)
AITER_PREFILL_WGMMA(aiter_prefill_wgmma_bf16_d192v128, bf16_t, 192, 128)
AITER_PREFILL_WGMMA_PAIRS(aiter_prefill_wgmma_f16_d128, half_t, 128, 128)
AITER_PREFILL_WGMMA_PAIRS(aiter_prefill_wgmma_bf16_d128, bf16_t, 128, 128)
template <int DK, int DV, bool CAP, int ITEMS = 1>
constexpr bool kLaunch(int threads, int smem) {
  return Dims<DK, DV, CAP, ITEMS>::kThreads == threads && Smem<Dims<DK, DV, CAP, ITEMS>>::kBytes == smem;
}
static_assert(kLaunch<64, 64, false>(512, 124360) && kLaunch<128, 128, false>(384, 230728) &&
                  kLaunch<256, 256, false>(384, 230744) && kLaunch<192, 128, false>(384, 214360) &&
                  kLaunch<64, 64, true>(384, 116040) && kLaunch<128, 128, true>(384, 230728) &&
                  kLaunch<256, 256, true>(384, 230744) && kLaunch<192, 128, true>(384, 214360) &&
                  kLaunch<128, 128, false, 2>(384, 230728) && kLaunch<128, 128, true, 2>(384, 230728),
              "update block and smem above");

#endif
