// The epilogue of the warp-specialized Hopper tiles through shared memory.  A
// warpgroup's accumulators hold 4 bytes of a row per thread, so storing them
// straight (store_rows) makes every warp store instruction touch 8 rows of 16
// bytes each; the tiles of a wave finish together and their epilogues' many
// small stores back up.  Here each warp writes its 16 rows, 64 columns at a
// time, into its own 2 KiB of shared memory with stmatrix and reads them back
// as 16-byte row pieces: each store instruction then writes 4 whole 128-byte
// row segments, a quarter of the instructions.  16-bit outputs whose rows are
// 16-byte aligned; the others take store_rows.
#pragma once

#include "pair_store.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

constexpr int kStagedWarpBytes = 16 * 128;  // a warp's 16 rows of 64 16-bit outputs

// Whether the tile's columns below col_end exist and every row piece of 8
// outputs is 16-byte aligned.
__device__ __forceinline__ bool pieces_fit(const GemmParams &p, long long col_end) {
  return p.out_kind != kGemmOutF32 && col_end <= p.n && p.ldo % 8 == 0 && p.out_batch % 8 == 0 &&
         (reinterpret_cast<unsigned long long>(p.out) & 15) == 0;
}

// Row r (0-15) of a warp's buffer, 16-byte piece c (0-7): 128 bytes a row, the
// pieces swizzled by row so that the 8 rows stmatrix writes at once, and the
// 4 rows a read takes, fall in different banks.
__device__ __forceinline__ uint32_t piece_address(uint32_t buffer, int row, int piece) {
  return buffer + row * 128 + ((piece ^ (row % 8)) * 16);
}

// Four 8 x 8 matrices of 16-bit values, each thread holding a pair of one row
// of each (the mma fragment); lanes 8t..8t+7 give the addresses of matrix t's rows.
__device__ __forceinline__ void stmatrix_x4(uint32_t address, const uint32_t (&v)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(address), "r"(v[0]),
               "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}

__device__ __forceinline__ uint4 load_piece(uint32_t address) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

// One chunk of WIDTH (64 or 32) columns from `col0` of the warp's 16 rows from
// `row0`: n8 blocks `block0`... of the accumulators (layout: store_rows).
template <int WIDTH, int BN, class Out>
__device__ __forceinline__ void store_chunk(const Out &out, uint32_t buffer, long long row0, long long col0,
                                            int block0, const float (&row_scale)[2], const float (&acc)[BN / 2]) {
  const int lane = threadIdx.x % 32;
  const long long col = col0 + (lane % 4) * 2;
  const int matrix_row = (lane / 8 % 2) * 8 + lane % 8;  // matrices: block b rows 0-7, rows 8-15, block b+1 ...
  // The whole chunk is packed before its first stmatrix, so that the scales and
  // bias it reads from global memory can load together (the stmatrix asm's
  // memory clobber keeps a load below it from moving above it).
  uint32_t v[WIDTH / 16][4];
#pragma unroll
  for (int b = 0; b < WIDTH / 8; b += 2)
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const int block = b + t / 2, i = 4 * (block0 + block) + 2 * (t % 2);
      v[b / 2][t] = out.pack(row_scale[t % 2], col + block * 8, acc[i], acc[i + 1]);
    }
#pragma unroll
  for (int b = 0; b < WIDTH / 8; b += 2) stmatrix_x4(piece_address(buffer, matrix_row, b + lane / 16), v[b / 2]);
  __syncwarp();
  constexpr int kPieces = WIDTH / 8, kRowsPerRead = 32 / kPieces;
#pragma unroll
  for (int r = 0; r < 16; r += kRowsPerRead) {
    const int row = r + lane / kPieces, piece = lane % kPieces;
    const uint4 data = load_piece(piece_address(buffer, row, piece));
    if (row0 + row < out.p.m) *reinterpret_cast<uint4 *>(out.at(row0 + row, col0 + piece * 8)) = data;
  }
  __syncwarp();  // read before the next chunk overwrites it
}

// A warpgroup's 64 x BN accumulators, rows from `row0`, through the warp's
// buffer `buffer` (pieces_fit(p, n0 + BN) holds), as `out` (PairStore's
// row_scale, pack and at) scales and packs them.
template <int BN, class Out>
__device__ __forceinline__ void store_block_staged(const Out &out, long long row0, long long n0,
                                                   const float (&acc)[BN / 2], uint32_t buffer) {
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const long long warp_row0 = row0 + warp * 16;
  if (warp_row0 >= out.p.m) return;
  const long long row = warp_row0 + lane / 4, last = out.p.m - 1;
  const float row_scale[2] = {out.row_scale(row < last ? row : last), out.row_scale(row + 8 < last ? row + 8 : last)};
#pragma unroll
  for (int c = 0; c < BN / 64; ++c) store_chunk<64, BN>(out, buffer, warp_row0, n0 + c * 64, c * 8, row_scale, acc);
  if constexpr (BN % 64 != 0)
    store_chunk<32, BN>(out, buffer, warp_row0, n0 + BN / 64 * 64, BN / 64 * 8, row_scale, acc);
}

template <int BN>
__device__ __forceinline__ void store_rows_staged(const GemmParams &p, long long batch, long long row0, long long n0,
                                                  const float (&acc)[BN / 2], bool scaled, uint32_t buffer) {
  with_pair_store(p, batch, scaled, [&](const auto &out) { store_block_staged<BN>(out, row0, n0, acc, buffer); });
}

#endif
