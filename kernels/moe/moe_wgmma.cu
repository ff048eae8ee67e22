// The fused MoE's fp8 expert stages on Hopper (sm_90a), per channel and
// block-scaled, warp-specialized like the GEMM family's wgmma_ws.h, whose
// pieces they use (tma.h: TMA copies and mbarriers; wgmma_tile.h: a 128-byte
// K stage's products):
// one thread of the first warpgroup copies each K stage of a tile (up to 128
// sorted rows of the stage input, 128 rows of the expert's weights) into a
// ring of shared memory with TMA; two warpgroups multiply it, each its 64 rows
// against the 128 weight rows (m64n128k32, the GEMM's 128 x 128 tile), with
// full / empty barriers per slot between them.  The grid is persistent: a
// block walks tiles blockIdx.x, + gridDim.x, ..., so the copies of its next
// tile overlap the epilogue of the last.
//
// Tiles: the sort pads each expert's rows to blocks of 64 or 128; a tile takes
// two 64-row units of one expert, so a run of an odd number of units ends in a
// tile of one (its second warpgroup's rows are multiplied but not stored).
// Each block lists the tiles in shared memory from the block table (one warp,
// 32 units a step) before it starts: only units below the valid rows count
// (num_valid is read on the device: no host sync, the grid sized by the rows'
// upper bound), units of no local expert are left out.  64-row tiles (the first
// version of this kernel, 64 x 256 products) moved 40 KiB per 2 M products
// from L2, 25% more than 128 x 128 tiles, and ran 4% slower (750-790 TFLOP/s
// at Mixtral T4096; docs/performance_moe.md runs 13-15).  Row tiles go in
// groups of an expert's tiles taken column by column (see Tile).  Padding rows
// are multiplied (their inputs are any codes) but never stored.  TMA fills K
// past the rows and weight rows past an expert's with zeros.
//
// Stage 1 copies, for 64 columns of inter, their 64 gate rows then their 64
// up rows, so a thread holds the gate and up sums of the same (row, column) 32
// registers apart and applies act(gate) * up in registers; it writes
// inter_buf's row m.  Stage 2 writes row m's output to its pair's row of
// pair_out (the combine kernel sums a token's pairs).
//
// Precision (the fp8 tests' contract, test_moe_fp8_bound.py): Hopper's fp8
// products keep about 14 bits of their running sum, so the sums go in windows
// of 512 of K, each window added to fp32 totals (../gemm/promoted_sum.h, as the
// GEMM family's PROMOTED kernels do).  Two multiplying warpgroups: one's additions
// and waits overlap the other's products.
//
// Block-scaled (DeepSeek-V3: 1 x 128 activation groups, 128 x 128 weight
// blocks): a stage is one K group; the copying warpgroup's second warp copies
// each stage's scales beside it (the tile's 128 rows' activation scales, its
// weight rows' block scales: stage 1 the gate rows' and the up rows' blocks),
// and each stage's sums are added to fp32 totals times their scales, as the
// GEMM family's block-scaled kernel does (promoted_sum.h's scaled_sum).
#include "../gemm/promoted_sum.h"
#include "../gemm/stage_copy.h"
#include "../gemm/tma.h"
#include "../gemm/wgmma_tile.h"
#include "moe_act.h"
#include "moe_wgmma_params.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

namespace {

constexpr int kStages = 6;
constexpr int kRegs = kMoeWgmmaWRows / 2;  // accumulators a thread: 64 rows x 128 columns a warpgroup
constexpr int kStageBytes = (kMoeWgmmaRows + kMoeWgmmaWRows) * kRowBytes;
// Block-scaled: a stage's scales, its rows' then its weight blocks' (room for
// 4 floats keeps the next slot's 16-byte aligned).
constexpr int kScaleBytes = kMoeWgmmaRows * 4 + 16;
constexpr int kHalfBytes = kMoeWgmmaUnit * kRowBytes;  // a warpgroup's rows of A in a stage
constexpr int kGroupM = 16;
// Registers a thread: the copying warpgroup's (its second warp copies the
// block-scaled stages' scales, which spilled 7 registers at 40) and the
// multiplying ones' (the rest of the SM's 64 K, a multiple of 8).
template <bool BLOCK_SCALED>
constexpr int kCopierRegs = BLOCK_SCALED ? 56 : 40;
template <bool BLOCK_SCALED>
constexpr int kMultiplierRegs = BLOCK_SCALED ? 224 : 232;

// The ring: kStages slots, then a full and an empty barrier per slot, then
// the slots' scales (block-scaled; room kept in both kernels), then the tile
// list (one int a tile, list_tiles).
struct Ring {
  uint32_t base;
  __device__ uint32_t slot(int s) const { return base + s * kStageBytes; }
  __device__ uint32_t weights(int s) const { return slot(s) + kMoeWgmmaRows * kRowBytes; }
  __device__ uint32_t full(int s) const { return base + kStages * kStageBytes + 8 * s; }
  __device__ uint32_t empty(int s) const { return base + kStages * kStageBytes + 8 * (kStages + s); }
  __device__ uint32_t scales(int s) const { return base + kStages * (kStageBytes + 16) + s * kScaleBytes; }
};
constexpr int kListOffset = kStages * (kStageBytes + 16 + kScaleBytes);

// A position in the ring: the slot, and the parity of the round it is in.
struct Cursor {
  int slot = 0;
  unsigned parity = 0;
  __device__ void advance() {
    if (++slot == kStages) slot = 0, parity ^= 1;
  }
};

__device__ int unit_expert(const MoeWgmmaParams &p, int unit) { return p.block_experts[unit * kMoeWgmmaUnit / p.block]; }
__device__ bool is_local(const MoeWgmmaParams &p, int e) { return e >= 0 && e < p.local_experts; }

// A tile's entry in the list: its first unit, its place in its group of row
// tiles (below kGroupM), whether it has a second unit.
constexpr int kUnitShift = 5;
static_assert(kGroupM <= 16, "a tile's place in its group takes 4 bits of its entry");
__device__ int entry_unit(int entry) { return entry >> kUnitShift; }
__device__ int entry_place(int entry) { return (entry >> 1) & (kGroupM - 1); }

// The tiles, written to `list` by one warp; returns their count.  A unit starts
// a tile where it is an even number of units into its expert's run: lane i
// finds the last run start at or before it in the warp's 32 units (a ballot),
// else continues the run carried from the previous 32.  An expert's tiles go
// in groups of kGroupM (Tile).
__device__ int list_tiles(const MoeWgmmaParams &p, int units, int *list) {
  const int lane = threadIdx.x % 32;
  int count = 0, carry_expert = -2, carry_start = 0;  // the last unit seen: its expert, its run's first unit
  for (int base = 0; base < units; base += 32) {
    const int u = base + lane;
    const int e = u < units ? unit_expert(p, u) : -3;
    const int next_e = u + 1 < units ? unit_expert(p, u + 1) : -3;
    const int prev = __shfl_up_sync(~0u, e, 1);
    const bool starts_run = e != (lane == 0 ? carry_expert : prev);
    const unsigned upto = __ballot_sync(~0u, starts_run) & (0xFFFFFFFFu >> (31 - lane));
    const int start = upto != 0 ? base + (31 - __clz(upto)) : carry_start, in_run = u - start;
    const bool first = u < units && in_run % 2 == 0 && is_local(p, e);
    const unsigned firsts = __ballot_sync(~0u, first);
    if (first && count + __popc(firsts & ((1u << lane) - 1)) < kMoeWgmmaMaxTiles)
      list[count + __popc(firsts & ((1u << lane) - 1))] =
          (u << kUnitShift) | (in_run / 2 % kGroupM) << 1 | (next_e == e ? 1 : 0);
    count += __popc(firsts);
    carry_expert = __shfl_sync(~0u, e, 31);
    carry_start = __shfl_sync(~0u, start, 31);
  }
  return count < kMoeWgmmaMaxTiles ? count : kMoeWgmmaMaxTiles;  // the launcher keeps units <= the list
}

// Tile t of `tiles` row tiles by `tiles_n` column tiles.  Row tiles go in
// groups, taken column by column: an expert's tiles, kGroupM at a time, so
// the blocks running together share the expert's weight columns in L2 and
// each column of weights comes from memory once a group.  (Groups of kGroupM
// tiles regardless of experts cut experts in two, whose weights then came
// from memory twice: Mixtral T4096's fp8 stage 1 read 2.02 GB, its weights
// 0.94; ncu, H100, 2026-11-28.)  Group g of rows [first, first + rows) holds
// linear tiles [first, first + rows) * tiles_n, so t's row t / tiles_n lies in
// t's group; the group ends at the next entry of place 0.
struct Tile {
  long long m0;
  int n0, expert;
  bool second;  // the tile's second 64 rows are the expert's too
  __device__ Tile(const MoeWgmmaParams &p, const int *list, int tiles, int tiles_n, long long t, int columns) {
    const int first = int(t / tiles_n) - entry_place(list[t / tiles_n]);
    int rows = 1;
    while (rows < kGroupM && first + rows < tiles && entry_place(list[first + rows]) != 0) ++rows;
    const long long r = t - (long long)first * tiles_n;
    const int entry = list[first + r % rows];
    m0 = (long long)entry_unit(entry) * kMoeWgmmaUnit;
    second = (entry & 1) != 0;
    n0 = int(r / rows) * columns;
    expert = unit_expert(p, entry_unit(entry));
  }
};

// A thread's scales of one block-scaled K group: its two rows' times the
// weight block's, for stage 1's gate columns (accumulators 0-31) and up
// columns (32-63); stage 2's are the same block's.
struct StageScales {
  float first[2], second[2];
};

__device__ __forceinline__ void promote_stage(const StageScales &s, const float (&sums)[kRegs],
                                              float (&total)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) total[i] += sums[i] * (i < kRegs / 2 ? s.first : s.second)[i % 4 / 2];
}

template <bool GATED, bool BLOCK_SCALED>
struct MoeStage {
  // Output columns a tile: stage 1's 128 weight rows are 64 gate + 64 up.
  static constexpr int kColumns = GATED ? kMoeWgmmaWRows / 2 : kMoeWgmmaWRows;

  // The boxes of one stage: A's two 64-row units (rows past the matrix arrive
  // as zeros), then W's two boxes: stage 1 gate rows n0.. and up rows n + n0..,
  // stage 2 rows n0.. and n0 + 64...
  static __device__ void copy_stage(const MoeWgmmaParams &p, Ring ring, int slot, const Tile &tile, int k0) {
#pragma unroll
    for (int box = 0; box < 2; ++box) {
      tma_copy_3d(ring.slot(slot) + box * kHalfBytes, &p.a_map, ring.full(slot), k0,
                  int(tile.m0) + box * kMoeWgmmaBoxRows, 0);
      const int row = tile.n0 + (GATED ? box * p.n : box * kMoeWgmmaBoxRows);
      tma_copy_3d(ring.weights(slot) + box * kMoeWgmmaBoxRows * kRowBytes, &p.w_map, ring.full(slot), k0, row,
                  tile.expert);
    }
  }

  static __device__ void produce(const MoeWgmmaParams &p, Ring ring, const int *list, int tiles, int tiles_n,
                                 int k_stages) {
    Cursor c;
    for (long long t = blockIdx.x; t < (long long)tiles * tiles_n; t += gridDim.x) {
      const Tile tile(p, list, tiles, tiles_n, t, kColumns);
      for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
        barrier_wait(ring.empty(c.slot), c.parity ^ 1);
        barrier_arrive_expect(ring.full(c.slot), kStageBytes);
        copy_stage(p, ring, c.slot, tile, kt * kRowBytes);
      }
    }
  }

  // Block-scaled: the copying warpgroup's second warp copies each stage's
  // scales with cp.async, each lane arriving on the slot's full barrier when
  // its copies land (the GEMM family's produce_scales).  Rows past the matrix
  // repeat the last (never stored); K is a multiple of 128, a group a stage.
  static constexpr int kScaleWriters = BLOCK_SCALED ? 32 : 0;

  static __device__ void produce_scales(const MoeWgmmaParams &p, Ring ring, const int *list, int tiles, int tiles_n,
                                        int k_stages) {
    const int lane = threadIdx.x % 32;
    Cursor c;
    for (long long t = blockIdx.x; t < (long long)tiles * tiles_n; t += gridDim.x) {
      const Tile tile(p, list, tiles, tiles_n, t, kColumns);
      const float *rows[kMoeWgmmaRows / 32];
#pragma unroll
      for (int i = 0; i < kMoeWgmmaRows / 32; ++i) {
        const long long m = tile.m0 + lane + 32 * i;
        rows[i] = p.a_scale + (m < p.rows ? m : p.rows - 1) * k_stages;
      }
      // This lane's weight block (lanes 0 and, stage 1, 1): [expert][w_rows / 128][k groups].
      const int w_row = tile.n0 + (GATED && lane == 1 ? p.n : 0);
      const float *block = p.w_scale + ((long long)tile.expert * (p.w_rows / 128) + w_row / 128) * k_stages;
      for (int kt = 0; kt < k_stages; ++kt, c.advance()) {
        barrier_wait(ring.empty(c.slot), c.parity ^ 1);
        const uint32_t scales = ring.scales(c.slot);
#pragma unroll
        for (int i = 0; i < kMoeWgmmaRows / 32; ++i) copy_async_4(scales + (lane + 32 * i) * 4, rows[i] + kt);
        if (lane < (GATED ? 2 : 1)) copy_async_4(scales + (kMoeWgmmaRows + lane) * 4, block + kt);
        barrier_arrive_on_copies(ring.full(c.slot));
      }
    }
  }

  // A thread's two rows of a slot's scales, times the weight blocks'.
  static __device__ __forceinline__ StageScales slot_scales(Ring ring, int slot, int half) {
    const int row = half * kMoeWgmmaUnit + (threadIdx.x % 128) / 32 * 16 + threadIdx.x % 32 / 4;
    const uint32_t scales = ring.scales(slot);
    const float a0 = shared_load(scales + row * 4), a1 = shared_load(scales + (row + 8) * 4);
    const float w0 = shared_load(scales + kMoeWgmmaRows * 4);
    const float w1 = GATED ? shared_load(scales + (kMoeWgmmaRows + 1) * 4) : w0;
    return StageScales{{a0 * w0, a1 * w0}, {a0 * w1, a1 * w1}};
  }

  // Hands a slot back: the wgmma_wait before covers the whole warpgroup's
  // products.  Block-scaled, every lane also reads the slot's scales, which
  // the next cp.async may overwrite: each warp arrives once its lanes' loads
  // are done (as wgmma_ws.h's release).
  static constexpr int kReleasers = BLOCK_SCALED ? 4 : 1;
  static __device__ __forceinline__ void release(Ring ring, int slot) {
    if constexpr (BLOCK_SCALED) {
      __syncwarp();
      if (threadIdx.x % 32 == 0) barrier_arrive(ring.empty(slot));
    } else if (threadIdx.x % 128 == 0) {
      barrier_arrive(ring.empty(slot));
    }
  }

  static __device__ __forceinline__ void issue(Ring ring, int slot, unsigned parity, int half, float (&sums)[kRegs],
                                               bool accumulate) {
    barrier_wait(ring.full(slot), parity);
    issue_stage<e4m3fn_t, kMoeWgmmaWRows>(ring.slot(slot) + half * kHalfBytes, ring.weights(slot), sums, accumulate);
  }

  // total = the products of k_stages stages: in fp32 windows of 512 K, or
  // block-scaled a stage at a time times its scales (promoted_sum.h).
  static __device__ void multiply(Ring ring, Cursor &c, int k_stages, int half, float (&total)[kRegs]) {
    const auto release_slot = [&](int slot) { release(ring, slot); };
    if constexpr (BLOCK_SCALED)
      scaled_sum(
          c, k_stages, total,
          [&](int slot, unsigned parity, float (&sums)[kRegs]) { issue(ring, slot, parity, half, sums, false); },
          [&](int slot) { return slot_scales(ring, slot, half); }, release_slot, promote_stage);
    else
      promoted_sum(
          c, k_stages, total,
          [&](int slot, unsigned parity, float (&sums)[kRegs], bool accumulate) {
            issue(ring, slot, parity, half, sums, accumulate);
          },
          release_slot);
  }

  // What a thread's epilogue reads: its two rows of its warpgroup's 64 (+0 and
  // +8; where they go, their scales) and its columns' weight scales.  Loaded
  // before the tile's products, whose time hides the loads' latency: loaded
  // after them, one column block at a time between the stores, while neither
  // warpgroup multiplies, they cost Mixtral T4096's stage 1 2463 us against
  // 2032 (H100, 2026-11-27, docs/performance_moe.md run 15).
  static constexpr int kBlocks = GATED ? kRegs / 8 : kRegs / 4;  // n8 blocks of output columns
  static constexpr int kColumnScales = GATED ? 4 : 2;           // a block's gate (+ up) column pair
  struct Epilogue {
    long long out_row[2];
    float row_scale[2];
    bool valid[2];
    float column_scale[kBlocks][kColumnScales];
  };

  static __device__ Epilogue load_epilogue(const MoeWgmmaParams &p, const Tile &tile, int half) {
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const bool mine = half == 0 || tile.second;  // else another expert's rows, or past the matrix
    Epilogue ep;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long m = tile.m0 + half * kMoeWgmmaUnit + warp * 16 + lane / 4 + h * 8;
      const int pair = mine ? p.sorted[m] : -1;
      ep.valid[h] = pair >= 0 && pair < p.pairs;
      ep.row_scale[h] = BLOCK_SCALED ? 1.0f : mine ? p.a_scale[m] : 0.0f;  // block-scaled: in the sums
      ep.out_row[h] = GATED ? m : pair;
    }
    const float *w_scale = p.w_scale + (long long)tile.expert * p.w_rows;
    const int col0 = tile.n0 + (lane % 4) * 2;
#pragma unroll
    for (int j = 0; j < kBlocks; ++j) {
      const int col = col0 + j * 8;
      const bool in = col < p.n;  // n is a multiple of 8: a pair is in or out whole
#pragma unroll
      for (int c = 0; c < kColumnScales; ++c)
        ep.column_scale[j][c] = BLOCK_SCALED ? 1.0f : in ? w_scale[(c / 2) * p.n + col + c % 2] : 0.0f;
    }
    return ep;
  }

  // Accumulator i of a thread: n8 block i / 4, row +8 for i % 4 >= 2, columns
  // (lane % 4) * 2 + i % 2 (wgmma_tile.h's store_rows).  Stage 1: blocks 0-7
  // are gate columns, 8-15 the same columns' up sums (i + 32).
  template <class O>
  static __device__ void store(const MoeWgmmaParams &p, const Tile &tile, const Epilogue &ep,
                               const float (&total)[kRegs]) {
    if (!ep.valid[0] && !ep.valid[1]) return;
    const int col0 = tile.n0 + (threadIdx.x % 4) * 2;
    O *out = static_cast<O *>(p.out);
#pragma unroll
    for (int j = 0; j < kBlocks; ++j) {
      const int col = col0 + j * 8;
      if (col >= p.n) break;
      const float *s = ep.column_scale[j];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = j * 4 + h * 2;
        float v0 = total[i] * ep.row_scale[h] * s[0], v1 = total[i + 1] * ep.row_scale[h] * s[1];
        if (GATED) {
          v0 = moe_gated(p.act, v0, total[i + kRegs / 2] * ep.row_scale[h] * s[kColumnScales - 2]);
          v1 = moe_gated(p.act, v1, total[i + kRegs / 2 + 1] * ep.row_scale[h] * s[kColumnScales - 1]);
        }
        if (ep.valid[h]) *reinterpret_cast<uint32_t *>(out + ep.out_row[h] * p.n + col) = pack_pair<O>(v0, v1);
      }
    }
  }

  template <class O>
  static __device__ void consume(const MoeWgmmaParams &p, Ring ring, const int *list, int tiles, int tiles_n,
                                 int k_stages, int half) {
    Cursor c;
    float total[kRegs];
    for (long long t = blockIdx.x; t < (long long)tiles * tiles_n; t += gridDim.x) {
      const Tile tile(p, list, tiles, tiles_n, t, kColumns);
      const Epilogue ep = load_epilogue(p, tile, half);
      multiply(ring, c, k_stages, half, total);
      store<O>(p, tile, ep, total);
    }
  }

  // 384 threads: warpgroup 0 copies (one thread issues; warp 1 lists the
  // tiles first, then copies block scales), 1 and 2 multiply.
  template <class O>
  static __device__ void run(const MoeWgmmaParams &p) {
    enter_stream_order();
    extern __shared__ __align__(1024) unsigned char smem[];
    const Ring ring{(smem_address(smem) + 1023u) & ~1023u};  // the manifest asks 1 KiB extra
    int *list = reinterpret_cast<int *>(smem + (ring.base - smem_address(smem)) + kListOffset);
    __shared__ int tile_count;
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        barrier_init(ring.full(s), 1 + kScaleWriters);  // the copier's arrival + the stage's bytes (+ scales)
        barrier_init(ring.empty(s), 2 * kReleasers);    // each multiplying warpgroup (block-scaled: warp)
      }
      barrier_init_fence();
      tma_prefetch_map(&p.a_map);
      tma_prefetch_map(&p.w_map);
    }
    if (threadIdx.x / 32 == 1) {
      const long long valid = *p.num_valid, bound = p.rows / kMoeWgmmaUnit;
      const long long used = (valid + kMoeWgmmaUnit - 1) / kMoeWgmmaUnit;
      const int tiles = list_tiles(p, int(used < bound ? (used > 0 ? used : 0) : bound), list);
      if (threadIdx.x == 32) tile_count = tiles;
    }
    __syncthreads();
    const int tiles = tile_count, tiles_n = (p.n + kColumns - 1) / kColumns;
    const int k_stages = (p.k + kRowBytes - 1) / kRowBytes;
    if (threadIdx.x < 128) {
      registers_shrink<kCopierRegs<BLOCK_SCALED>>();
      if (threadIdx.x == 0) produce(p, ring, list, tiles, tiles_n, k_stages);
      if (BLOCK_SCALED && threadIdx.x / 32 == 1) produce_scales(p, ring, list, tiles, tiles_n, k_stages);
    } else {
      registers_grow<kMultiplierRegs<BLOCK_SCALED>>();
      consume<O>(p, ring, list, tiles, tiles_n, k_stages, threadIdx.x / 128 - 1);
    }
  }
};

}  // namespace

#define MOE_WGMMA(stage, GATED, BS, kind, dt, O)                                                         \
  extern "C" __global__ void __launch_bounds__(kMoeWgmmaThreads, 1)                                    \
      aiter_moe_stage##stage##_wgmma##kind##_e4m3fn_##dt(const __grid_constant__ MoeWgmmaParams p) {   \
    MoeStage<GATED, BS>::run<O>(p);                                                                    \
  }
MOE_WGMMA(1, true, false, , bf16, bf16_t)
MOE_WGMMA(1, true, false, , f16, half_t)
MOE_WGMMA(2, false, false, , bf16, bf16_t)
MOE_WGMMA(2, false, false, , f16, half_t)
MOE_WGMMA(1, true, true, _bs, bf16, bf16_t)
MOE_WGMMA(1, true, true, _bs, f16, half_t)
MOE_WGMMA(2, false, true, _bs, bf16, bf16_t)
MOE_WGMMA(2, false, true, _bs, f16, half_t)

#endif

// Shared memory: 6 stages of (128 + 128) rows of 128 bytes, 16 bytes of
// barriers and 528 of scales a stage, the tile list, 1 KiB for the 1024-byte
// alignment: 6 * (32768 + 16 + 528) + 4 * 4096 + 1024.
// aiter-kernel-family: op=moe_stage1 variant=e4m3fn.{dt}.wgmma symbol=aiter_moe_stage1_wgmma_e4m3fn_{dt} block=384 smem=217280 dt=bf16@90,f16@90
// aiter-kernel-family: op=moe_stage2 variant=e4m3fn.{dt}.wgmma symbol=aiter_moe_stage2_wgmma_e4m3fn_{dt} block=384 smem=217280 dt=bf16@90,f16@90
// aiter-kernel-family: op=moe_stage1 variant=e4m3fn.{dt}.wgmma.bs symbol=aiter_moe_stage1_wgmma_bs_e4m3fn_{dt} block=384 smem=217280 dt=bf16@90,f16@90
// aiter-kernel-family: op=moe_stage2 variant=e4m3fn.{dt}.wgmma.bs symbol=aiter_moe_stage2_wgmma_bs_e4m3fn_{dt} block=384 smem=217280 dt=bf16@90,f16@90
