// Shared by the tensor-core GEMM kernels (NVIDIA): output tiles handed out in
// L2-friendly order, and K stages of a tile's rows of A and W copied into shared
// memory with cp.async.  A stage holds BM rows of A, then BN rows of W, each
// row 128 bytes of K (64 16-bit or 128 8-bit elements) with its 16-byte chunks
// XOR-swizzled by the row (chunk ^ row % 8): the eight rows an ldmatrix reads
// hit eight different bank groups, and the layout is the 128-byte swizzle the
// wgmma instructions read (with stages 1024-byte aligned).
#pragma once

#include "mma.h"

#if defined(AITER_NVIDIA)

constexpr int kRowBytes = 128;

__device__ __forceinline__ uint32_t smem_address(const void *p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

// One float at a shared-memory address; volatile, so that a load stays after
// the barrier wait that makes the float visible.
__device__ __forceinline__ void shared_store(uint32_t address, float v) {
  asm volatile("st.shared.f32 [%0], %1;" ::"r"(address), "f"(v) : "memory");
}
__device__ __forceinline__ float shared_load(uint32_t address) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(address) : "memory");
  return v;
}

__device__ __forceinline__ void copy_async_16(uint32_t dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_async_4(uint32_t dst, const void *src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

__device__ __forceinline__ void load_matrix_x4(uint32_t address, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a stage.
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  return uint32_t(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
}

// Copies K stages of a tile's BM rows of A and BN rows of W into the ring, with
// each thread's rows and places fixed once per tile: a stage then costs a few
// instructions per 16-byte copy instead of the index arithmetic.  Rows and K
// past the matrix are zero-filled.
template <class T, int BM, int BN, int THREADS>
struct StageCopier {
  static_assert(THREADS % 8 == 0 && (BM + BN) * 8 % THREADS == 0, "whole chunks per thread");
  static constexpr int kCopies = (BM + BN) * 8 / THREADS;
  const char *row[kCopies];  // the start of each row this thread copies; null past the matrix
  uint32_t place[kCopies];   // its swizzled offset in a stage
  long long chunk_byte, k_bytes;

  __device__ __forceinline__ StageCopier(const GemmParams &p, const char *a, const char *w, long long m0,
                                         long long n0) {
    const int chunk = threadIdx.x % 8;  // THREADS is a multiple of 8: a thread keeps its chunk column
    chunk_byte = chunk * 16;
    k_bytes = p.k * (long long)sizeof(T);
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      const int r = (threadIdx.x + j * THREADS) / 8;
      const long long m = m0 + r, n = n0 + r - BM;
      row[j] = r < BM ? (m < p.m ? a + m * p.lda * (long long)sizeof(T) : nullptr)
                      : (n < p.n ? w + n * p.ldw * (long long)sizeof(T) : nullptr);
      place[j] = swizzled(r, chunk);
    }
  }

  // Stage `stage` <- K elements [k0, k0 + 128 bytes).
  __device__ __forceinline__ void copy(long long k0, uint32_t stage) const {
    const long long byte = k0 * (long long)sizeof(T) + chunk_byte;
    const bool k_in = byte < k_bytes;
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      const bool valid = k_in && row[j] != nullptr;
      copy_async_16(stage + place[j], valid ? row[j] + byte : row[0], valid);
    }
  }
};

// One warp's WM x WN piece of a stage held in shared memory (BM rows of A, then
// the rows of W), multiplied on the tensor cores: the fragments of each 32-byte
// K step are read with ldmatrix while the previous step multiplies.  Shared by
// the tiled GEMM and the fused MoE stages.
template <class Mma, int BM, int WM, int WN>
struct WarpTile {
  static constexpr int kTilesM = WM / 16, kTilesN = WN / 8;
  using Acc = typename Mma::Acc;

  // The fragments of one 32-byte K step of the warp's rows of A and W.
  struct Fragments {
    uint32_t a[kTilesM][4], b[kTilesN][2];
  };

  static __device__ __forceinline__ void load_fragments(uint32_t stage, int warp_m, int warp_n, int step,
                                                        Fragments &f) {
    const int lane = threadIdx.x % 32, q = lane / 8, r8 = lane % 8;
#pragma unroll
    for (int i = 0; i < kTilesM; ++i) {
      const int row = warp_m * WM + i * 16 + (q % 2) * 8 + r8;
      load_matrix_x4(stage + swizzled(row, 2 * step + q / 2), f.a[i]);
    }
#pragma unroll
    for (int j = 0; j < kTilesN; j += 2) {
      const int row = BM + warp_n * WN + j * 8 + (q / 2) * 8 + r8;
      uint32_t r[4];
      load_matrix_x4(stage + swizzled(row, 2 * step + q % 2), r);
      f.b[j][0] = r[0], f.b[j][1] = r[1], f.b[j + 1][0] = r[2], f.b[j + 1][1] = r[3];
    }
  }

  // acc += the stage's products, 32 bytes of K per step.
  static __device__ __forceinline__ void multiply_stage(uint32_t stage, int warp_m, int warp_n,
                                                        Acc (&acc)[kTilesM][kTilesN][4]) {
    Fragments f[2];
    load_fragments(stage, warp_m, warp_n, 0, f[0]);
#pragma unroll
    for (int step = 0; step < 4; ++step) {
      if (step < 3) load_fragments(stage, warp_m, warp_n, step + 1, f[(step + 1) % 2]);
      const Fragments &c = f[step % 2];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kTilesN; ++j)
          Mma::run(acc[i][j], c.a[i][0], c.a[i][1], c.a[i][2], c.a[i][3], c.b[j][0], c.b[j][1]);
    }
  }
};

// Tiles are numbered in groups of kGroupM rows of tiles, column by column
// within a group, so the blocks running at once share a few rows of A and a
// few columns of W in the L2 cache instead of streaming all of W per row.
template <int BM, int BN>
__device__ __forceinline__ void tile_origin(const GemmParams &p, long long tile, long long *m0, long long *n0) {
  constexpr long long kGroupM = 16;
  const long long tiles_m = (p.m + BM - 1) / BM, tiles_n = (p.n + BN - 1) / BN;
  const long long per_group = kGroupM * tiles_n;
  const long long first_m = tile / per_group * kGroupM;
  const long long rows = tiles_m - first_m < kGroupM ? tiles_m - first_m : kGroupM;
  *m0 = (first_m + tile % per_group % rows) * BM;
  *n0 = (tile % per_group / rows) * BN;
}

// The tile of this block, when the grid has one block per tile.
template <int BM, int BN>
__device__ __forceinline__ void tile_origin(const GemmParams &p, long long *m0, long long *n0) {
  tile_origin<BM, BN>(p, blockIdx.x, m0, n0);
}

#endif  // AITER_NVIDIA
