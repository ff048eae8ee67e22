// MLA decode on Hopper (sm_90a) over 16-bit caches: wgmma products fed by TMA.  A block
// of 3 warpgroups takes 64 rows (new token x head) of one sequence over one split
// of its context, 64 latent rows (keys) at a time.  A sequence of fewer rows
// (16 heads x 1 new token: the memory-bound case) fills its tile with zero rows,
// fully masked and never stored: the products cost 4x their useful work, which
// the tensor cores have to spare while the latents stream in at memory speed.
//   - warpgroup 0: one thread copies Q once (9 boxes of 64 columns) and each key
//     tile into one of two buffers, every 64-column block of a tile, or every
//     third of it (3 blocks a copy, where pages hold whole tiles and splits are
//     long: a third as many copies, 5-11% faster in the memory-bound cases,
//     H200 2026-11-28), completing on its own barrier, so S = Q K^T starts on
//     the first part while the others land;
//   - warpgroup 1: S (both operands in shared memory, 64 x 64 over K = 576), the
//     online softmax, P into registers and, for warpgroup 2, into shared memory,
//     then O[:, 0:256] += P V;
//   - warpgroup 2: O[:, 256:512] += P V with the same P, rescaled by the same
//     factors (O is 64 x 512 fp32: 128 registers a thread in each half).
// Per tile: S_i, softmax_i, then both halves of P_i V_i; a buffer is handed back
// once both halves are done, so the copy of tile i + 2 runs under S_{i+1},
// softmax_{i+1} and P_{i+1} V_{i+1}.  Where a sequence's 64-row tiles pair up
// (128 heads), the pair runs as a cluster of two blocks and each copies every
// other 64-column block into both (TMA multicast): each latent byte leaves L2
// once per pair.  (Measured slower and not kept, H100: S_{i+1} queued behind
// P_i V_i; an L2 prefetch of the tiles ahead; each half of a buffer handed back
// on its own.  docs/performance_mla.md.)
//
// Masking: a key is seen by a row where its block id is in range, it lies
// before the split's end and the context length, and before the row's causal
// bound (new token j of s_q sees positions [0, len - s_q + j]).  Boxes of keys
// with no block (an id out of range, past the table) are copied from outside
// the tensor, so they arrive as zeros; rows of a loaded page past the context's
// end may hold anything (NaN included), so the last tile's value rows past the
// end are zeroed before P V (0 x NaN would be NaN).
#include "../attention/mma16.h"
#include "../attention/prefill_wgmma_rs.h"
#include "../gemm/tma.h"
#include "../gemm/wgmma_tile.h"
#include "mla_wgmma_params.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

namespace {

constexpr int kRows = 64, kKeys = 64, kThreads = 384;
constexpr int kBlocks = 9;                   // 64-column blocks of a 576-wide row
constexpr int kBlockBytes = 64 * 128;        // one such block of 64 rows
constexpr int kTileBytes = kBlocks * kBlockBytes;
constexpr int kValueDim = 512, kHalf = 256;  // a consumer's columns of O
constexpr float kNegInf = -__builtin_huge_valf();
constexpr float kLn2 = 0.6931471805599453f;
// Named barriers between the two consumers (0 is __syncthreads).
constexpr int kPReady = 1, kPFree = 2, kScoresGroup = 3;

__device__ __forceinline__ float exp2_approx(float x) {  // 2^x; 2^-inf = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Shared memory from a 1024-byte aligned base: Q (9 blocks), two key tiles (9
// blocks each), P for warpgroup 2 (a thread's 16 words, thread-major), each
// thread's two row factors, the tiles' key masks, the barriers.
struct Smem {
  static constexpr int kP = 3 * kTileBytes, kFactors = kP + 16 * 128 * 4, kMasks = kFactors + 128 * 8;
  static constexpr int kBarriers = kMasks + 16, kBytes = kBarriers + 8 * (1 + 2 * kBlocks + 2) + 1024;
  uint32_t base;
  __device__ uint32_t q(int block) const { return base + block * kBlockBytes; }
  __device__ uint32_t kv(int buf, int block) const { return base + (1 + buf) * kTileBytes + block * kBlockBytes; }
  __device__ uint32_t p(int word, int t) const { return base + kP + (word * 128 + t) * 4; }
  __device__ uint32_t factors(int t) const { return base + kFactors + t * 8; }
  __device__ uint32_t mask(int buf) const { return base + kMasks + buf * 8; }
  __device__ uint32_t q_full() const { return base + kBarriers; }
  __device__ uint32_t full(int buf, int block) const { return base + kBarriers + 8 * (1 + buf * kBlocks + block); }
  __device__ uint32_t empty(int buf) const { return base + kBarriers + 8 * (1 + 2 * kBlocks + buf); }
};

// The block's sequence, split and key range.
struct Split {
  int b, split, first, bound, end, tiles;  // keys [first, end); the table reaches to `bound`
};

__device__ __forceinline__ Split block_split(const MlaDecodeParams &p, int sequence_split) {
  Split s;
  s.b = sequence_split / p.splits, s.split = sequence_split % p.splits;
  const int capacity = p.max_blocks * p.page_size;  // fits: the launcher checked
  s.first = s.split * p.split_keys;
  s.bound = s.first + p.split_keys < capacity ? s.first + p.split_keys : capacity;
  const int raw = p.context_lens[s.b];
  const int len = raw < 0 ? 0 : raw > capacity ? capacity : raw;
  s.end = s.first + p.split_keys < len ? s.first + p.split_keys : len;
  s.tiles = s.end > s.first ? (s.end - s.first + kKeys - 1) / kKeys : 0;
  return s;
}

// ---- warpgroup 0: the copies ------------------------------------------------------

// Where box j of tile i comes from: its first cache row, or a row past the cache
// (zeros) where the keys have no block; and which of the tile's keys are real.
__device__ __forceinline__ uint64_t tile_boxes(const MlaWgmmaParams &w, const Split &s, const int *table_row, int k0,
                                               int (&rows)[4]) {
  const MlaDecodeParams &p = w.p;
  const int box = w.box_rows, cache_rows = int(p.num_blocks) * p.page_size;
  uint64_t real = 0;
  for (int j = 0; j < kKeys / box; ++j) {
    const int key = k0 + j * box;
    const int id = key < s.bound && key < s.end ? table_row[key / p.page_size] : -1;
    const bool ok = id >= 0 && id < p.num_blocks;
    rows[j] = ok ? id * p.page_size + key % p.page_size : cache_rows;
    if (ok) real |= (box == 64 ? ~0ull : 0xffffull) << (j * box);
  }
  const int keys = s.end - k0;
  return keys >= kKeys ? real : real & ((1ull << keys) - 1);
}

// CLUSTER 2: the block pair of a sequence's two adjacent row tiles; each copies
// every other 64-column block of a key tile into both blocks' buffers
// (multicast), so the pair reads each latent byte from L2 once.
template <int CLUSTER>
__device__ void produce(const MlaWgmmaParams &w, const Smem &sm, const Split &s, int tile_row0) {
  const MlaDecodeParams &p = w.p;
  const int *table_row = p.block_table + (long long)s.b * p.table_stride;
  barrier_arrive_expect(sm.q_full(), kTileBytes);
  for (int blk = 0; blk < kBlocks; ++blk)
    tma_copy_3d(sm.q(blk), &w.q_map, sm.q_full(), blk * 64, tile_row0, s.b);  // rows past the sequence's: zeros
  for (int i = 0; i < s.tiles; ++i) {
    const int buf = i & 1;
    int rows[4];
    const uint64_t real = tile_boxes(w, s, table_row, s.first + i * kKeys, rows);
    barrier_wait(sm.empty(buf), ((i >> 1) & 1) ^ 1);
    asm volatile("st.shared.u64 [%0], %1;" ::"r"(sm.mask(buf)), "l"(real) : "memory");
    const int rank = int(blockIdx.x) % CLUSTER;
    if (CLUSTER == 1 && w.box_blocks > 1) {  // (one 64-row box a tile: box_rows 64)
      for (int blk = 0; blk < kBlocks; blk += w.box_blocks) {
        barrier_arrive_expect(sm.full(buf, blk), w.box_blocks * kBlockBytes);
        tma_copy_3d(sm.kv(buf, blk), &w.kv_map, sm.full(buf, blk), 0, rows[0], blk);
      }
      continue;
    }
    for (int blk = 0; blk < kBlocks; ++blk) {
      barrier_arrive_expect(sm.full(buf, blk), kBlockBytes);  // (in a pair, half of them come from the other block)
      if (blk % CLUSTER != rank) continue;
      for (int j = 0; j < kKeys / w.box_rows; ++j) {
        const uint32_t dst = sm.kv(buf, blk) + j * w.box_rows * 128;
        if constexpr (CLUSTER == 1)
          tma_copy_3d(dst, &w.kv_map, sm.full(buf, blk), blk * 64, rows[j], 0);
        else
          tma_copy_3d_multicast(dst, &w.kv_map, sm.full(buf, blk), blk * 64, rows[j], 0, 3u);
      }
    }
  }
}

// ---- warpgroups 1 and 2: the products -----------------------------------------------

// B of P V: 256 columns of V read MN-major from 16 keys on: 8-key groups of
// 128-byte rows 1024 bytes apart (stride offset), 64-column blocks 8 KiB apart
// (leading offset), the 128-byte swizzle.
__device__ __forceinline__ uint64_t values_descriptor(uint32_t address) {
  return uint64_t((address & 0x3FFFF) >> 4) | uint64_t(kBlockBytes >> 4) << 16 | uint64_t(1024 >> 4) << 32 |
         uint64_t(1) << 62;
}

// O[:, half] += P V over buffer `buf`'s keys, as one wgmma group.
template <class T>
__device__ __forceinline__ void issue_pv(const Smem &sm, int buf, int half, float (&o)[128], const uint32_t (&p)[4][4]) {
  fence_registers(o);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int j = 0; j < kKeys / 16; ++j) WgmmaRs<T, 256>::run(o, p[j], values_descriptor(sm.kv(buf, half * 4) + j * 2048), 1);
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  fence_registers(o);
}

// S = Q K^T over buffer `buf`, block by block as each copy (box_blocks blocks) lands, as one wgmma group.
template <class T>
__device__ __forceinline__ void issue_scores(const Smem &sm, int buf, unsigned phase, float (&s)[32], int box_blocks) {
  fence_registers(s);
#pragma unroll
  for (int blk = 0; blk < kBlocks; ++blk) {
    if (blk % box_blocks == 0) barrier_wait(sm.full(buf, blk), phase);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");  // after the wait's branch, or ptxas serializes the group
    const uint64_t qd = smem_descriptor(sm.q(blk)), kd = smem_descriptor(sm.kv(buf, blk));
#pragma unroll
    for (int step = 0; step < 4; ++step)
      WgmmaInstruction<T, 64>::run(s, qd + 2 * step, kd + 2 * step, blk > 0 || step > 0);
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  fence_registers(s);
}

// Hands buffer `buf` back to the copier (in a pair, to both blocks' copiers:
// either one's multicast writes this block's buffer).
template <int CLUSTER>
__device__ __forceinline__ void release(const Smem &sm, int buf) {
  barrier_arrive(sm.empty(buf));
  if constexpr (CLUSTER == 2) barrier_arrive_remote(sm.empty(buf), (blockIdx.x % 2) ^ 1);
}

// O times each row's factor, skipped where the whole warp's factors are 1 (no
// row maximum moved: most tiles past the first few).
__device__ __forceinline__ void rescale(float (&o)[128], const float (&f)[2]) {
  if (__all_sync(0xffffffffu, f[0] == 1.0f && f[1] == 1.0f)) return;
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] *= f[i % 4 / 2];
}

// A thread's two rows (warp * 16 + g and + 8 of the block's 64) and their state.
struct Rows {
  int hi[2];  // each row sees positions [0, hi)
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
};

__device__ __forceinline__ Rows thread_rows(const MlaDecodeParams &p, const Split &s, int tile_row0, int t) {
  Rows r;
  const int raw = p.context_lens[s.b], capacity = p.max_blocks * p.page_size;
  const int len = raw < 0 ? 0 : raw > capacity ? capacity : raw;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = tile_row0 + t / 32 * 16 + t % 32 / 4 + 8 * h;
    const int hi = len - p.q_tokens + n / p.q_heads + 1;
    r.hi[h] = n < p.rows && hi > 0 ? hi : 0;
  }
  return r;
}

// The online softmax of one tile's scores in place (log2 domain), each row's
// factor for O in f.  MASKED: some key of the tile is not seen by some row of
// the warp (a warp-uniform choice: the inner tiles skip the per-score tests).
template <bool MASKED>
__device__ __forceinline__ void softmax(float (&s)[32], Rows &r, uint64_t real, int k0, float logit_scale,
                                        float (&f)[2]) {
  const int tq = int(threadIdx.x) % 4;
  float top[2] = {r.m[0], r.m[1]};
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int key = i / 4 * 8 + tq * 2 + i % 2, h = i % 4 / 2;
    const bool seen = !MASKED || ((real >> key & 1) && k0 + key < r.hi[h]);
    s[i] = seen ? s[i] * logit_scale : kNegInf;
    top[h] = fmaxf(top[h], s[i]);
  }
  float base[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    top[h] = fmaxf(top[h], shfl_xor(top[h], 1));
    top[h] = fmaxf(top[h], shfl_xor(top[h], 2));
    base[h] = top[h] == kNegInf ? 0.0f : top[h];  // no key seen yet: p = 0, not NaN
    f[h] = exp2_approx(r.m[h] - base[h]);
    r.m[h] = top[h];
    r.l[h] *= f[h];
  }
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    s[i] = exp2_approx(s[i] - base[i % 4 / 2]);
    r.l[i % 4 / 2] += s[i];
  }
}

// Zeroes value rows [from, 64) of buffer `buf` (the 8 blocks P V reads), then
// makes the zeros visible to the tensor cores' reads of warpgroup 1's threads.
__device__ __forceinline__ void zero_tail(const Smem &sm, int buf, int from, int t) {
  const int chunks = (kKeys - from) * 8;  // 16-byte chunks a block
  for (int c = t; c < 8 * chunks; c += 128) {
    const uint32_t a = sm.kv(buf, c / chunks) + from * 128 + c % chunks * 16;
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(a), "r"(0) : "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("bar.sync %0, 128;" ::"n"(kScoresGroup) : "memory");
}

__device__ __forceinline__ void publish(const Smem &sm, const uint32_t (&p)[4][4], const float (&f)[2], int t) {
#pragma unroll
  for (int w = 0; w < 16; ++w) asm volatile("st.shared.u32 [%0], %1;" ::"r"(sm.p(w, t)), "r"(p[w / 4][w % 4]) : "memory");
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(sm.factors(t)), "f"(f[0]), "f"(f[1]) : "memory");
}

__device__ __forceinline__ void read_factors(const Smem &sm, int t, float (&f)[2]) {
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(f[0]), "=f"(f[1]) : "r"(sm.factors(t)) : "memory");
}

template <class T>
__device__ __forceinline__ void pack_p(const float (&s)[32], uint32_t (&p)[4][4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int h = 0; h < 4; ++h) p[j][h] = Mma<T>::pack(s[8 * j + 2 * h], s[8 * j + 2 * h + 1]);
}

// Writes a consumer's half of the block's rows: O times each row's factor
// (value scale / sum, 0 where the row saw nothing) into out, or into this
// split's partial row of the workspace.
template <class T>
__device__ __forceinline__ void store_rows(const MlaDecodeParams &p, const Split &s, int tile_row0, int half, int t,
                                          const float (&o)[128], const float (&inv)[2]) {
  const int tq = t % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = tile_row0 + t / 32 * 16 + t % 32 / 4 + 8 * h;
    if (n >= p.rows) continue;
    const long long row = (long long)s.b * p.rows + n, dst_row = p.splits == 1 ? row : row * p.splits + s.split;
    T *dst = static_cast<T *>(p.splits == 1 ? p.out : p.partial_out) + dst_row * kValueDim + half * kHalf;
#pragma unroll
    for (int j = 0; j < kHalf / 8; ++j)
      *reinterpret_cast<uint32_t *>(dst + j * 8 + tq * 2) = Mma<T>::pack(o[4 * j + 2 * h] * inv[h], o[4 * j + 2 * h + 1] * inv[h]);
  }
}

template <class T, int CLUSTER>
__device__ void consume_scores(const MlaDecodeParams &p, const Smem &sm, const Split &s, int tile_row0, int box_blocks) {
  const int t = int(threadIdx.x) - 128;
  Rows r = thread_rows(p, s, tile_row0, t);
  float o[128], sc[32], f[2];
  uint32_t pk[4][4];
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.0f;
  if (s.tiles > 0) barrier_wait(sm.q_full(), 0);
  // Step j finishes tile j - 1 and issues S of tile j: one place issues S, or
  // ptxas moves its accumulators between the two and serializes the products.
#pragma unroll 1
  for (int j = 0; j <= s.tiles; ++j) {
    if (j > 0) {
      const int buf = (j - 1) & 1, k0 = s.first + (j - 1) * kKeys;
      wgmma_wait<0>();
      fence_registers(sc);
      uint64_t real;
      asm volatile("ld.shared.u64 %0, [%1];" : "=l"(real) : "r"(sm.mask(buf)) : "memory");
      if (s.end - k0 < kKeys) zero_tail(sm, buf, s.end - k0, t);
      const bool whole = real == ~0ull && k0 + kKeys <= min(r.hi[0], r.hi[1]);
      if (__all_sync(0xffffffffu, whole))
        softmax<false>(sc, r, real, k0, p.logit_scale, f);
      else
        softmax<true>(sc, r, real, k0, p.logit_scale, f);
      pack_p<T>(sc, pk);
      // Zeros, though the next S overwrites them: where these registers still held
      // probabilities, ptxas serialized every product of the kernel (C7515).
#pragma unroll
      for (int i = 0; i < 32; ++i) sc[i] = 0.0f;
      if (j > 1) asm volatile("bar.sync %0, 256;" ::"n"(kPFree) : "memory");  // warpgroup 2 has read the last P
      publish(sm, pk, f, t);
      asm volatile("bar.arrive %0, 256;" ::"n"(kPReady) : "memory");
      rescale(o, f);
      issue_pv<T>(sm, buf, 0, o, pk);
      wgmma_wait<0>();  // (S of the next tile queued behind P V at once measured 7-17% slower, H100)
      fence_registers(o);
      if (t == 0) release<CLUSTER>(sm, buf);
    }
    if (j < s.tiles) issue_scores<T>(sm, j & 1, unsigned(j >> 1) & 1u, sc, box_blocks);
  }
  wgmma_wait<0>();  // nothing is in flight here; without it ptxas assumes S may be, and serializes every product
  // Row sums over the quad; the factors for both halves; the log-sum-exp.
  float inv[2], lse[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    r.l[h] += shfl_xor(r.l[h], 1);
    r.l[h] += shfl_xor(r.l[h], 2);
    inv[h] = r.l[h] > 0.0f ? p.value_scale / r.l[h] : 0.0f;
    lse[h] = r.l[h] > 0.0f ? (r.m[h] + __log2f(r.l[h])) * kLn2 : kNegInf;
  }
  if (s.tiles > 0) asm volatile("bar.sync %0, 256;" ::"n"(kPFree) : "memory");
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(sm.factors(t)), "f"(inv[0]), "f"(inv[1]) : "memory");
  asm volatile("bar.arrive %0, 256;" ::"n"(kPReady) : "memory");
  store_rows<T>(p, s, tile_row0, 0, t, o, inv);
  if (t % 4 == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = tile_row0 + t / 32 * 16 + t % 32 / 4 + 8 * h;
      if (n >= p.rows) continue;
      const long long row = (long long)s.b * p.rows + n;
      if (p.splits > 1)
        p.partial_lse[row * p.splits + s.split] = lse[h];
      else if (p.lse != nullptr)
        p.lse[row] = lse[h];
    }
  }
}

template <class T, int CLUSTER>
__device__ void consume_values(const MlaDecodeParams &p, const Smem &sm, const Split &s, int tile_row0) {
  const int t = int(threadIdx.x) - 256;
  float o[128], f[2];
  uint32_t pk[4][4];
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.0f;
#pragma unroll 1
  for (int i = 0; i < s.tiles; ++i) {
    const int buf = i & 1;
    asm volatile("bar.sync %0, 256;" ::"n"(kPReady) : "memory");
#pragma unroll
    for (int w = 0; w < 16; ++w) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(pk[w / 4][w % 4]) : "r"(sm.p(w, t)) : "memory");
    read_factors(sm, t, f);
    asm volatile("bar.arrive %0, 256;" ::"n"(kPFree) : "memory");
    rescale(o, f);
    issue_pv<T>(sm, buf, 1, o, pk);
    wgmma_wait<0>();
    fence_registers(o);
    if (t == 0) release<CLUSTER>(sm, buf);
  }
  asm volatile("bar.sync %0, 256;" ::"n"(kPReady) : "memory");
  read_factors(sm, t, f);
  store_rows<T>(p, s, tile_row0, 1, t, o, f);
}

// Grid: x = batch x splits x tiles of 64 rows, a sequence's tiles side by side
// (so that they share its latents through L2, or in pairs by multicast).
template <class T, int CLUSTER>
__device__ void mla_wgmma(const MlaWgmmaParams &w) {
  enter_stream_order();
  extern __shared__ __align__(1024) unsigned char smem[];
  const Smem sm{(smem_address(smem) + 1023u) & ~1023u};  // the manifest asks 1 KiB extra
  const int tiles = (w.p.rows + kRows - 1) / kRows;
  const Split s = block_split(w.p, int(blockIdx.x) / tiles);
  const int tile_row0 = int(blockIdx.x) % tiles * kRows;
  if (threadIdx.x == 0) {
    barrier_init(sm.q_full(), 1);
    for (int buf = 0; buf < 2; ++buf) {
      for (int blk = 0; blk < kBlocks; ++blk) barrier_init(sm.full(buf, blk), 1);
      barrier_init(sm.empty(buf), 2 * CLUSTER);  // both consumers of each block of the pair
    }
    barrier_init_fence();
  }
  if constexpr (CLUSTER == 1)
    __syncthreads();
  else
    cluster_sync();  // the other block's copies and releases signal this block's barriers
  if (threadIdx.x < 128) {
    registers_shrink<40>();
    if (threadIdx.x == 0 && s.tiles > 0) produce<CLUSTER>(w, sm, s, tile_row0);
  } else {
    registers_grow<232>();
    if (threadIdx.x < 256)
      consume_scores<T, CLUSTER>(w.p, sm, s, tile_row0, CLUSTER == 1 ? w.box_blocks : 1);
    else
      consume_values<T, CLUSTER>(w.p, sm, s, tile_row0);
  }
  if constexpr (CLUSTER == 2) cluster_sync();  // no block leaves while the other may still signal it
}

}  // namespace

#define AITER_MLA_WGMMA(name, T)                                                                             \
  extern "C" __global__ void __launch_bounds__(kThreads, 1) name(const __grid_constant__ MlaWgmmaParams w) { \
    mla_wgmma<T, 1>(w);                                                                                      \
  }                                                                                                          \
  extern "C" __global__ void __launch_bounds__(kThreads, 1) __cluster_dims__(2, 1, 1)                        \
      name##_x2(const __grid_constant__ MlaWgmmaParams w) {                                                  \
    mla_wgmma<T, 2>(w);                                                                                      \
  }

// Variants: wgmma.<dtype>, and .x2 in block pairs (sequences of an even number of 64-row tiles).
// aiter-kernel: op=mla_decode variant=wgmma.f16 symbol=aiter_mla_wgmma_f16 block=384 smem=231608
// aiter-kernel: op=mla_decode variant=wgmma.f16.x2 symbol=aiter_mla_wgmma_f16_x2 block=384 smem=231608
AITER_MLA_WGMMA(aiter_mla_wgmma_f16, half_t)
// aiter-kernel: op=mla_decode variant=wgmma.bf16 symbol=aiter_mla_wgmma_bf16 block=384 smem=231608
// aiter-kernel: op=mla_decode variant=wgmma.bf16.x2 symbol=aiter_mla_wgmma_bf16_x2 block=384 smem=231608
AITER_MLA_WGMMA(aiter_mla_wgmma_bf16, bf16_t)
static_assert(Smem::kBytes == 231608, "update smem above");

#endif
