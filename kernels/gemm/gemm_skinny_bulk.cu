// GEMM for few rows of A (M <= 16) on Hopper (sm_90a), with W streamed into
// shared memory by bulk copies (cp.async.bulk) instead of loaded into
// registers (gemm_skinny.cu): one copying warp keeps a ring of six 32 KiB
// stages in flight per multiprocessor, about 200 KiB, where the register
// kernel's loads cover 32-64 KiB, so the first bytes of the whole matrix are
// asked for at once and DRAM never waits on a multiply.
//
// The grid is persistent, one block per multiprocessor walking the row blocks
// (16 * RT rows of W, all of K, every batch matrix) blockIdx.x, + gridDim.x, ...:
// the copies of a block's next rows overlap the sums and stores of its last.
// A stage holds kChunk bytes of K of each row; the WARPS multiplying warps take
// equal slices of it, with the tokens' bytes loaded from global memory (L2)
// before they wait for the stage.  Fragment layout and arithmetic:
// skinny_fragments.h.  Rows past N copy row N - 1 (results dropped), bytes past
// K are zeros in registers; the launcher checks that K * element size, the row
// strides and the pointers are multiples of 16 bytes.
#include "skinny_fragments.h"
#include "stage_copy.h"
#include "tma.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

namespace {

__device__ __forceinline__ uint4 shared_load_16(uint32_t address) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(address));
  return v;
}

template <class T, int NT, int RT, int WARPS, bool BS>
struct SkinnyBulk {
  using Math = SkinnyMath<T, NT, RT, BS>;
  using Acc = typename Math::Acc;
  static constexpr int kRows = Math::kRows;
  static constexpr int kChunk = 2048 / RT;  // bytes of each row's K in a stage: 32 KiB stages
  // Rows g and g + 1 start 64 bytes apart in the banks, so the 8 threads of a
  // 16-byte shared load phase (rows g, g + 1 x 4 pieces) hit 32 different banks.
  static constexpr int kPitch = kChunk + 64;
  static constexpr int kStageBytes = kRows * kPitch;
  static constexpr int kStages = 6;
  static constexpr int kWarpBytes = kChunk / WARPS;  // a multiplying warp's slice of each row of a stage
  static constexpr int kPairs = kWarpBytes / 64;
  static constexpr int kMultipliers = WARPS * 32;
  using Partial = Acc[WARPS][kRows][NT * 8 + 1];
  static constexpr int kBarriers = kStages * kStageBytes;  // full barriers, then empty ones
  static constexpr int kPartial = kBarriers + 2 * kStages * 8;
  static constexpr int kSharedBytes = kPartial + int(sizeof(Partial));
  static_assert(kSharedBytes <= 232448, "more shared memory than a Hopper block has (the manifest asks 227 KiB)");

  struct Ring {
    uint32_t base;
    __device__ uint32_t stage(int s) const { return base + s * kStageBytes; }
    __device__ uint32_t full(int s) const { return base + kBarriers + 8 * s; }
    __device__ uint32_t empty(int s) const { return base + kBarriers + 8 * (kStages + s); }
  };

  // Walks the same sequence of (row block, K chunk) stages as the multiplying
  // warps: stage i in slot i % kStages, phase parity (i / kStages) & 1.
  struct Cursor {
    unsigned i = 0;
    __device__ int slot() const { return int(i % kStages); }
    __device__ unsigned parity() const { return (i / kStages) & 1; }
  };

  // The copying warp: lane r copies row r of each stage.
  static __device__ void produce(const GemmBatchParams &q, Ring ring, long long blocks_per_batch, int chunks) {
    const GemmParams &p = q.p;
    const int lane = threadIdx.x % 32;
    const long long k_bytes = p.k * (long long)sizeof(T);
    Cursor c;
    for (long long item = blockIdx.x; item < blocks_per_batch * q.batch; item += gridDim.x) {
      const long long batch = item / blocks_per_batch, n = (item % blocks_per_batch) * kRows + lane;
      const char *row = static_cast<const char *>(p.w) + (batch * p.w_batch + (n < p.n ? n : p.n - 1) * p.ldw) * sizeof(T);
      for (int chunk = 0; chunk < chunks; ++chunk, ++c.i) {
        const long long k0 = (long long)chunk * kChunk;
        const unsigned bytes = unsigned(k_bytes - k0 < kChunk ? k_bytes - k0 : kChunk);
        barrier_wait(ring.empty(c.slot()), c.parity() ^ 1);
        if (lane == 0) barrier_arrive_expect(ring.full(c.slot()), bytes * kRows);
        __syncwarp();
        if (lane < kRows) bulk_copy(ring.stage(c.slot()) + lane * kPitch, row + k0, bytes, ring.full(c.slot()));
      }
    }
  }

  // One stage: this thread's 16-byte pieces of the warp's slice, products added to acc.
  static __device__ __forceinline__ void multiply_stage(const GemmParams &p, Ring ring, Cursor c, long long batch,
                                                        long long n0, long long k0, const char *const (&a_rows)[NT],
                                                        typename Math::Acc (&acc)[RT][NT][4]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const long long k_bytes = p.k * (long long)sizeof(T), first = k0 + warp * kWarpBytes;
    const uint4 zero = {0, 0, 0, 0};
    uint4 a[kPairs][NT];  // asked of L2 before the wait: their latency overlaps the stage's copy
#pragma unroll
    for (int u = 0; u < kPairs; ++u)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const long long k = first + u * 64 + t * 16;
        a[u][j] = k < k_bytes ? load_cached(a_rows[j] + k) : zero;
      }
    barrier_wait(ring.full(c.slot()), c.parity());
    const uint32_t slice = ring.stage(c.slot()) + warp * kWarpBytes + t * 16;
#pragma unroll
    for (int u = 0; u < kPairs; ++u) {
      if (BS && first + u * 64 >= k_bytes) break;  // past K: zeros, and no scales to read
      const bool in = first + u * 64 + t * 16 < k_bytes;
      uint4 w[RT][2];
#pragma unroll
      for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) w[r][h] = in ? shared_load_16(slice + (r * 16 + h * 8 + g) * kPitch + u * 64) : zero;
      float s[NT][2];
      if constexpr (BS) Math::scales(p, batch, n0, (first + u * 64) / (long long)sizeof(T), s);
      Math::multiply(acc, w, a[u], s);
    }
    __syncwarp();
    if (lane == 0) barrier_arrive(ring.empty(c.slot()));
  }

  static __device__ void consume(const GemmBatchParams &q, Ring ring, Partial &partial, long long blocks_per_batch,
                                 int chunks) {
    const GemmParams &p = q.p;
    const int g = threadIdx.x % 32 / 4;
    const auto sync = [] { asm volatile("bar.sync 1, %0;" ::"n"(kMultipliers) : "memory"); };
    Cursor c;
    for (long long item = blockIdx.x; item < blocks_per_batch * q.batch; item += gridDim.x) {
      const long long batch = item / blocks_per_batch, n0 = (item % blocks_per_batch) * kRows;
      const char *a_rows[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const long long m = j * 8 + g;
        a_rows[j] = static_cast<const char *>(p.a) + (batch * p.a_batch + (m < p.m ? m : p.m - 1) * p.lda) * sizeof(T);
      }
      Acc acc[RT][NT][4] = {};
      for (int chunk = 0; chunk < chunks; ++chunk, ++c.i)
        multiply_stage(p, ring, c, batch, n0, (long long)chunk * kChunk, a_rows, acc);
      Math::template store_sums<WARPS>(p, batch, n0, acc, partial, threadIdx.x, kMultipliers, sync);
      sync();  // every sum read before the next row block writes them
    }
  }

  // WARPS multiplying warps, then the copying warp.
  static __device__ void run(const GemmBatchParams &q) {
    extern __shared__ __align__(16) unsigned char smem[];
    const Ring ring{smem_address(smem)};
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        barrier_init(ring.full(s), 1);           // the copier's arrival + the stage's bytes
        barrier_init(ring.empty(s), WARPS);      // each multiplying warp
      }
      barrier_init_fence();
    }
    __syncthreads();
    const long long blocks_per_batch = (q.p.n + kRows - 1) / kRows;
    const int chunks = int((q.p.k * (long long)sizeof(T) + kChunk - 1) / kChunk);
    if (threadIdx.x >= kMultipliers)
      produce(q, ring, blocks_per_batch, chunks);
    else
      consume(q, ring, *reinterpret_cast<Partial *>(smem + kPartial), blocks_per_batch, chunks);
  }
};

}  // namespace

#define SKINNY_BULK(dt, T, NT, RT, WARPS, BS, suffix)                                                            \
  extern "C" __global__ void __launch_bounds__(WARPS * 32 + 32, 1)                                              \
      aiter_gemm_skinny_bulk_##dt##_t##NT##_r##RT##_w##WARPS##suffix(const __grid_constant__ GemmBatchParams q) { \
    enter_stream_order();                                                                                       \
    SkinnyBulk<T, NT, RT, WARPS, BS>::run(q);                                                                   \
  }
#define SKINNY_BULK_SHAPES(dt, T, BS, suffix) \
  SKINNY_BULK(dt, T, 1, 1, 4, BS, suffix)     \
  SKINNY_BULK(dt, T, 1, 1, 8, BS, suffix)     \
  SKINNY_BULK(dt, T, 1, 2, 4, BS, suffix)     \
  SKINNY_BULK(dt, T, 1, 2, 8, BS, suffix)     \
  SKINNY_BULK(dt, T, 2, 1, 4, BS, suffix)     \
  SKINNY_BULK(dt, T, 2, 1, 8, BS, suffix)     \
  SKINNY_BULK(dt, T, 2, 2, 4, BS, suffix)     \
  SKINNY_BULK(dt, T, 2, 2, 8, BS, suffix)

SKINNY_BULK_SHAPES(bf16, bf16_t, false, )
SKINNY_BULK_SHAPES(f16, half_t, false, )
SKINNY_BULK_SHAPES(i8, int8_t, false, )
SKINNY_BULK_SHAPES(e4m3fn, e4m3fn_t, false, )
SKINNY_BULK_SHAPES(e5m2, e5m2_t, false, )
SKINNY_BULK_SHAPES(e4m3fn, e4m3fn_t, true, _bs)

#endif

// Variant names: skinny_bulk.<dtype>.t<NT>.r<RT>.w<WARPS>[.bs]: NT * 8 tokens,
// 16 * RT rows of W per row block, WARPS multiplying warps + one copying warp;
// every variant asks for 227 KiB of shared memory (one block per multiprocessor).
// aiter-kernel-family: op=gemm variant=skinny_bulk.{dt}.t{nt}.r{rt}.w{w} symbol=aiter_gemm_skinny_bulk_{dt}_t{nt}_r{rt}_w{w} block={block} smem=232448 dt=bf16,f16,i8,e4m3fn,e5m2 nt=1,2 rt=1,2 w=4:160,8:288
// aiter-kernel-family: op=gemm variant=skinny_bulk.{dt}.t{nt}.r{rt}.w{w}.bs symbol=aiter_gemm_skinny_bulk_{dt}_t{nt}_r{rt}_w{w}_bs block={block} smem=232448 dt=e4m3fn nt=1,2 rt=1,2 w=4:160,8:288
