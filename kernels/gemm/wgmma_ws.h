// GEMM for many rows of A on Hopper (sm_90a), warp-specialized: one warp of
// the first warpgroup copies K stages of A and W into a ring of shared memory
// with TMA, one to three warpgroups multiply them with wgmma, each 64 rows of a
// BM x BN tile (BM = 64 for few rows of A: narrow tiles make enough blocks to
// stream W at full speed).  A full and an empty barrier per slot hand stages between
// them, so the copies run the ring's depth ahead and no product waits on a
// __syncthreads or on its own loads (gemm_wgmma.cu copies with every thread).
// The grid is persistent: a block walks tiles blockIdx.x, + gridDim.x, ..., so
// the copies of its next tile overlap the stores of the last one; the stores
// go through shared memory as whole row segments (staged_store.h).  TMA fills
// rows and K past the matrix with zeros; the launcher checks that strides and
// pointers are multiples of 16 bytes.  Block-scaled fp8 sums each stage (one
// 128-wide K group) apart and adds it times its scales, which a second copying
// warp writes beside the stage.  The template is
// instantiated by gemm_wgmma_ws.cu and, for clusters, gemm_wgmma_cluster.cu
// (W shared by multicast) and gemm_wgmma_splitk.cu (K split).
#pragma once

#include "split_k.h"
#include "promoted_sum.h"
#include "staged_scales.h"
#include "tma.h"
#include "wgmma_tile.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

// PROMOTED: fp8 sums added into fp32 registers every 4 stages (512 K).
// CLUSTER = 2: two blocks (a thread-block cluster) take the tiles at rows m0 and
// m0 + BM of one column of tiles, and each copies half of their common W tile
// into both blocks' shared memory (TMA multicast): W is read from L2 once for
// two tiles, the L2 -> SM traffic a third lower for 128 x 256 tiles.
// SPLIT > 1: a cluster of SPLIT blocks takes one tile, each a share of K, and
// adds the shares through distributed shared memory (split_k.h).
template <class T, int BM, int BN, int STAGES, bool BLOCK_SCALED, bool PROMOTED = false, int CLUSTER = 1,
          int SPLIT = 1>
struct WgmmaWs {
  static constexpr int kMultipliers = BM / 64, kRegs = BN / 2;
  // Registers a thread: the copying warpgroup gives back all but 40, the
  // multiplying ones share the rest of the SM's 64 K (multiples of 8, at most 232).
  static constexpr int kCopierRegs = 40;
  static constexpr int kMultiplierRegs = (65536 - 128 * kCopierRegs) / (128 * kMultipliers) / 8 * 8 > 232
                                             ? 232
                                             : (65536 - 128 * kCopierRegs) / (128 * kMultipliers) / 8 * 8;
  static_assert(CLUSTER == 1 || (CLUSTER == 2 && !PROMOTED), "clusters of two, no fp32-sum windows");
  static_assert(SPLIT == 1 || (CLUSTER == 1 && !PROMOTED), "split K: no fp32-sum windows, no multicast");
  static constexpr int kClusterBlocks = CLUSTER * SPLIT;
  static constexpr int kStageBytes = (BM + BN) * kRowBytes;  // BM rows of A, then BN rows of W
  static constexpr int kStageElems = kRowBytes / int(sizeof(T));
  static_assert(!BLOCK_SCALED || BN == 128, "a block-scaled tile spans one 128-row block of W");

  // Stores through shared memory (staged_store.h) where its 2 KiB per
  // multiplying warp fit beside the ring in the 227 KiB a block may have.
  static constexpr int kStagingBytes = kMultipliers * 4 * kStagedWarpBytes;
  using Exchange = SplitExchange<SPLIT, kRegs, kMultipliers * 128>;
  static constexpr int kExchangeBytes = SPLIT == 1 ? 0 : (SPLIT - 1) * Exchange::kSlotBytes + 8 * SPLIT;
  // Block-scaled: beside each slot, its K group's a_scale[m, g] for the tile's
  // BM rows, then w_scale[n0 / 128, g] (16 bytes keep the next slot's aligned).
  static constexpr int kScaleBytes = BLOCK_SCALED ? BM * 4 + 16 : 0;
  static constexpr int kRingBytes = STAGES * (kStageBytes + 16 + kScaleBytes) + 1024 + kExchangeBytes;
  static constexpr bool kStaged = kRingBytes + kStagingBytes <= 227 * 1024;
  // a8w8: each multiplying warpgroup's block scales, staged beside the
  // staging buffers where they fit (staged_scales.h).
  static constexpr int kScaleStageBytes = kMultipliers * StagedScales<BN>::kBytes;
  static constexpr bool kStagedScales =
      kStaged && !BLOCK_SCALED && kRingBytes + kStagingBytes + kScaleStageBytes <= 227 * 1024;
  static constexpr int kSharedBytes = kRingBytes - 1024 + kStagingBytes + (kStagedScales ? kScaleStageBytes : 0);
  static_assert(kRingBytes <= 227 * 1024, "the ring and split-K exchange fit in a block's shared memory");

  // The ring: STAGES slots, then a full and an empty barrier per slot, then
  // the split-K exchange's slots and barriers, then the slots' scales, then
  // the multiplying warps' staging buffers, then the warpgroups' staged scales.
  struct Ring {
    uint32_t base;
    __device__ uint32_t slot(int s) const { return base + s * kStageBytes; }
    __device__ uint32_t full(int s) const { return base + STAGES * kStageBytes + 8 * s; }
    __device__ uint32_t empty(int s) const { return base + STAGES * kStageBytes + 8 * (STAGES + s); }
    __device__ Exchange exchange() const {
      const uint32_t buffer = base + STAGES * (kStageBytes + 16);
      return Exchange{buffer, buffer + (SPLIT - 1) * Exchange::kSlotBytes};
    }
    __device__ uint32_t scales(int s) const {
      return base + STAGES * (kStageBytes + 16) + kExchangeBytes + s * kScaleBytes;
    }
    __device__ uint32_t staging() const {
      return base + STAGES * (kStageBytes + 16 + kScaleBytes) + kExchangeBytes +
             (threadIdx.x / 32 - 4) * kStagedWarpBytes;
    }
    __device__ StagedScales<BN> staged_scales(int half) const {
      return {base + STAGES * (kStageBytes + 16 + kScaleBytes) + kExchangeBytes + kStagingBytes +
                  half * StagedScales<BN>::kBytes,
              half};
    }
  };

  // A position in the ring: the slot, and the parity of the round it is in.
  struct Cursor {
    int slot = 0;
    unsigned parity = 0;
    __device__ void advance() {
      if (++slot == STAGES) slot = 0, parity ^= 1;
    }
  };

  // Tile t of all batches: its batch and first row / column.  A cluster's
  // work item t is CLUSTER tiles stacked in M; this block takes its rank's.
  struct Tile {
    long long batch, m0, n0;
    __device__ Tile(const GemmParams &p, long long t, long long per_batch) : batch(t / per_batch) {
      tile_origin<BM * CLUSTER, BN>(p, t % per_batch, &m0, &n0);
      if (CLUSTER > 1) m0 += cluster_rank() * BM;
    }
  };

  // Work items walked by this block's cluster: cluster c takes c, c + clusters, ...
  static __device__ unsigned cluster_rank() { return kClusterBlocks == 1 ? 0 : blockIdx.x % kClusterBlocks; }
  static __device__ long long first_item() { return blockIdx.x / kClusterBlocks; }
  static __device__ long long item_stride() { return gridDim.x / kClusterBlocks; }

  // This block's share of a tile's K stages: all, or its rank's of SPLIT.
  struct KShare {
    int begin, count;
    __device__ explicit KShare(int k_stages) {
      const int rank = SPLIT == 1 ? 0 : int(cluster_rank());
      begin = k_stages * rank / SPLIT;
      count = k_stages * (rank + 1) / SPLIT - begin;
    }
  };

  // This block's share of the W tile: all of it, or its half for both blocks.
  static __device__ void copy_w(const GemmTmaParams &q, Ring ring, const Cursor &c, const Tile &tile, int k0,
                                int w_batch) {
    const uint32_t w_slot = ring.slot(c.slot) + BM * kRowBytes;
    if constexpr (CLUSTER == 1) {
      tma_copy_3d(w_slot, &q.w_map, ring.full(c.slot), k0, int(tile.n0), w_batch);
    } else {
      constexpr int kShare = BN / CLUSTER;
      const int rank = int(cluster_rank());
      tma_copy_3d_multicast(w_slot + rank * kShare * kRowBytes, &q.w_map, ring.full(c.slot), k0,
                            int(tile.n0) + rank * kShare, w_batch, (1u << CLUSTER) - 1);
    }
  }

  static __device__ void produce(const GemmTmaParams &q, Ring ring, long long per_batch, long long tiles,
                                 KShare share) {
    Cursor c;
    for (long long t = first_item(); t < tiles; t += item_stride()) {
      const Tile tile(q.p, t, per_batch);
      const int a_batch = q.a_batched ? int(tile.batch) : 0, w_batch = q.w_batched ? int(tile.batch) : 0;
      for (int kt = share.begin; kt < share.begin + share.count; ++kt, c.advance()) {
        barrier_wait(ring.empty(c.slot), c.parity ^ 1);
        barrier_arrive_expect(ring.full(c.slot), kStageBytes);
        const int k0 = kt * kStageElems;
        tma_copy_3d(ring.slot(c.slot), &q.a_map, ring.full(c.slot), k0, int(tile.m0), a_batch);
        copy_w(q, ring, c, tile, k0, w_batch);
      }
    }
  }

  // Block-scaled: the copying warpgroup's second warp copies each slot's
  // scales (BM rows, rows past M repeat the last; then W's) with cp.async, each
  // lane arriving on the slot's full barrier when its copies land.  The
  // multiplying warps then read three floats from shared memory a group
  // instead of loading the scales between their products (H100: 0.90x ->
  // 1.03x of the peer at M = 64; docs/performance_gemm.md).  The copies are
  // asynchronous so that the warp runs ahead like the TMA copier: loading them
  // into registers first put an L2 round trip per K group on the path of every
  // tile (at M >= 1024 the peer's 0.80x -> 0.84x, M = 256-512 11% less time).
  static constexpr int kScaleWriters = BLOCK_SCALED ? 32 : 0;

  static __device__ void produce_scales(const GemmParams &p, Ring ring, long long per_batch, long long tiles,
                                        KShare share) {
    const int lane = threadIdx.x % 32;
    Cursor c;
    for (long long t = first_item(); t < tiles; t += item_stride()) {
      const Tile tile(p, t, per_batch);
      const float *w_scales = p.w_scale + tile.batch * p.w_scale_batch + (tile.n0 / 128) * p.kgroups;
      const float *a_rows[BM / 32];
#pragma unroll
      for (int i = 0; i < BM / 32; ++i) {
        const long long m = tile.m0 + lane + 32 * i;
        a_rows[i] = p.a_scale + tile.batch * p.a_scale_batch + (m < p.m ? m : p.m - 1) * p.kgroups;
      }
      for (int kt = share.begin; kt < share.begin + share.count; ++kt, c.advance()) {
        barrier_wait(ring.empty(c.slot), c.parity ^ 1);
        const uint32_t scales = ring.scales(c.slot);
#pragma unroll
        for (int i = 0; i < BM / 32; ++i) copy_async_4(scales + (lane + 32 * i) * 4, a_rows[i] + kt);
        if (lane == 0) copy_async_4(scales + BM * 4, w_scales + kt);
        barrier_arrive_on_copies(ring.full(c.slot));
      }
    }
  }

  // A thread's two rows of a slot's scales, times W's.
  static __device__ __forceinline__ GroupScales slot_scales(Ring ring, int slot, int half) {
    const int row = half * 64 + (threadIdx.x % 128) / 32 * 16 + threadIdx.x % 32 / 4;
    const uint32_t scales = ring.scales(slot);
    const float w = shared_load(scales + BM * 4);
    return GroupScales{{shared_load(scales + row * 4) * w, shared_load(scales + (row + 8) * 4) * w}};
  }

  // Arrivals on a slot's empty barrier from each multiplying warpgroup.  Without
  // block scales only the warpgroup's wgmma reads a slot, and the wgmma_wait of
  // the one arriving thread covers the whole warpgroup's products.  With them,
  // every lane also reads the slot's scales with plain shared loads, which the
  // copier's next cp.async may overwrite: each warp arrives once its own lanes'
  // loads are done (__syncwarp orders them before lane 0's release-arrive), so no
  // lagging warp can read scales of the next group (compute-sanitizer racecheck
  // reported this write-after-read hazard, H100, 2026-11-27).
  static constexpr int kReleasers = BLOCK_SCALED ? 4 : 1;

  // Hands a slot back to the copier, and in a cluster to the other block's
  // copier too, whose W copies land here.
  static __device__ __forceinline__ void release(Ring ring, int slot) {
    if constexpr (BLOCK_SCALED) {
      __syncwarp();
      if (threadIdx.x % 32 != 0) return;
    } else if (threadIdx.x % 128 != 0) {
      return;
    }
    barrier_arrive(ring.empty(slot));
    if constexpr (CLUSTER == 2) barrier_arrive_remote(ring.empty(slot), cluster_rank() ^ 1);
  }

  // acc = this warpgroup's 64 rows of the tile over all of K.  Each stage's
  // products stay in flight while the next stage's are issued; a slot goes back
  // once the products reading it are done.
  static __device__ void multiply_tile(Ring ring, Cursor &c, int k_stages, int half, float (&acc)[kRegs]) {
    int previous = 0;
    for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
      barrier_wait(ring.full(c.slot), c.parity);
      issue_stage<T, BN>(ring.slot(c.slot) + half * 64 * kRowBytes, ring.slot(c.slot) + BM * kRowBytes, acc, kt > 0);
      wgmma_wait<1>();
      if (kt > 0) release(ring, previous);
      previous = c.slot;
    }
    wgmma_wait<0>();
    release(ring, previous);
  }

  // Promoted: total = the sum over windows of 512 K of each window's products
  // (promoted_sum.h).
  static __device__ void multiply_tile_promoted(Ring ring, Cursor &c, int k_stages, int half, float (&total)[kRegs]) {
    promoted_sum(
        c, k_stages, total,
        [&](int slot, unsigned parity, float (&sums)[kRegs], bool accumulate) {
          barrier_wait(ring.full(slot), parity);
          issue_stage<T, BN>(ring.slot(slot) + half * 64 * kRowBytes, ring.slot(slot) + BM * kRowBytes, sums,
                             accumulate);
        },
        [&](int slot) { release(ring, slot); });
  }

  // Block-scaled: total = sum over K groups of the group's products times its
  // scales (promoted_sum.h's scaled_sum: two sets of sums taking turns).
  // issue_group: one group's products into `sums`.
  static __device__ __forceinline__ void issue_group(Ring ring, int slot, unsigned parity, int half,
                                                     float (&sums)[kRegs]) {
    barrier_wait(ring.full(slot), parity);
    issue_stage<T, BN>(ring.slot(slot) + half * 64 * kRowBytes, ring.slot(slot) + BM * kRowBytes, sums, false);
  }

  // Three multiplying warpgroups have registers for one set of sums each: a
  // group's products are waited for before they are scaled, and the other
  // warpgroups' products keep the tensor cores busy meanwhile.
  static constexpr bool kTwoSums = kMultipliers < 3;

  static __device__ void multiply_tile_scaled(Ring ring, Cursor &c, int k_stages, int half, float (&total)[kRegs]) {
    if constexpr (!kTwoSums) {
      for (int i = 0; i < kRegs; ++i) total[i] = 0.0f;
      float sums[kRegs];
      for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
        issue_group(ring, c.slot, c.parity, half, sums);
        const GroupScales scales = slot_scales(ring, c.slot, half);
        wgmma_wait<0>();
        release(ring, c.slot);
        promote_rows(scales, sums, total);
      }
      return;
    }
    scaled_sum(
        c, k_stages, total,
        [&](int slot, unsigned parity, float (&sums)[kRegs]) { issue_group(ring, slot, parity, half, sums); },
        [&](int slot) { return slot_scales(ring, slot, half); }, [&](int slot) { release(ring, slot); },
        [&](const GroupScales &s, const float (&sums)[kRegs], float (&sum)[kRegs]) { promote_rows(s, sums, sum); });
  }

  // Split K: ranks > 0 send their sums to rank 0 (true: this block stores
  // nothing), rank 0 adds them.  `parity` alternates tile by tile.
  static __device__ __forceinline__ bool exchange_sums(Ring ring, unsigned &parity, float (&acc)[kRegs]) {
    if constexpr (SPLIT == 1) return false;
    const unsigned rank = cluster_rank();
    const int thread = int(threadIdx.x) - 128;
    if (rank != 0)
      ring.exchange().send(rank, thread, parity, acc);
    else
      ring.exchange().gather(thread, parity, acc);
    parity ^= 1;
    return rank != 0;
  }

  // stage_scales: a8w8 scales to stage, and room for them (run).
  static __device__ void consume(const GemmTmaParams &q, Ring ring, long long per_batch, long long tiles,
                                 KShare share, int half, bool stage_scales) {
    Cursor c;
    unsigned exchange_parity = 0;
    float acc[kRegs];
    const StagedScales<BN> staged = ring.staged_scales(half);
    for (long long t = first_item(); t < tiles; t += item_stride()) {
      const Tile tile(q.p, t, per_batch);
      const long long row0 = tile.m0 + half * 64;
      if (kStagedScales && stage_scales) staged.copy(q.p, tile.batch, row0, tile.n0);
      if constexpr (!BLOCK_SCALED) prefetch_epilogue<BN>(q.p, tile.batch, row0, tile.n0);  // the bias, or unstaged scales
      if constexpr (BLOCK_SCALED)
        multiply_tile_scaled(ring, c, share.count, half, acc);
      else if constexpr (PROMOTED)
        multiply_tile_promoted(ring, c, share.count, half, acc);
      else
        multiply_tile(ring, c, share.count, half, acc);
      if (kStagedScales && stage_scales) staged.wait();  // also before a path that does not read them: no copy outlives its tile
      if (exchange_sums(ring, exchange_parity, acc)) continue;
      if (kStagedScales && stage_scales && pieces_fit(q.p, tile.n0 + BN))
        store_rows_staged_scales<BN>(q.p, tile.batch, row0, tile.n0, acc, staged, ring.staging());
      else if (kStaged && pieces_fit(q.p, tile.n0 + BN))
        store_rows_staged<BN>(q.p, tile.batch, row0, tile.n0, acc, BLOCK_SCALED, ring.staging());
      else
        store_rows<BN>(q.p, tile.batch, row0, tile.n0, acc, BLOCK_SCALED);
    }
  }

  // 128 + 2 * BM threads: warpgroup 0 copies (one thread issues), BM / 64 multiply.
  // K >= 1 (the launcher routes K = 0 elsewhere).
  static __device__ void run(const GemmTmaParams &q) {
    enter_stream_order();
    extern __shared__ __align__(1024) unsigned char smem[];
    const Ring ring{(smem_address(smem) + 1023u) & ~1023u};  // the manifest asks 1 KiB extra
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        barrier_init(ring.full(s), 1 + kScaleWriters);  // the copier's arrival + the stage's bytes (+ scales)
        barrier_init(ring.empty(s), kMultipliers * CLUSTER * kReleasers);  // each multiplying warpgroup (or warp) of the cluster
      }
      if constexpr (SPLIT > 1) ring.exchange().init();
      barrier_init_fence();
      tma_prefetch_map(&q.a_map);
      tma_prefetch_map(&q.w_map);
    }
    if constexpr (kClusterBlocks == 1)
      __syncthreads();
    else
      cluster_sync();  // the other blocks' copies and sums signal this block's barriers
    const long long per_batch = ((q.p.m + BM * CLUSTER - 1) / (BM * CLUSTER)) * ((q.p.n + BN - 1) / BN);
    const KShare share(int((q.p.k + kStageElems - 1) / kStageElems));  // the launcher: K stages >= SPLIT
    if (threadIdx.x < 128) {
      registers_shrink<kCopierRegs>();
      if (threadIdx.x == 0) produce(q, ring, per_batch, per_batch * q.batch, share);
      if (BLOCK_SCALED && threadIdx.x / 32 == 1) produce_scales(q.p, ring, per_batch, per_batch * q.batch, share);
    } else {
      registers_grow<kMultiplierRegs>();
      // Staged scales only where the launch gave the block their shared memory
      // (the manifest's smem), so a stale manifest costs speed, not correctness.
      const bool room = ring.base - smem_address(smem) + kSharedBytes <= dynamic_smem_size();
      consume(q, ring, per_batch, per_batch * q.batch, share, threadIdx.x / 128 - 1,
              kStagedScales && room && q.p.a_scale != nullptr);
    }
    if constexpr (kClusterBlocks > 1) cluster_sync();  // no block leaves while another may still signal it
  }
};


#endif
