// The AMX tile kernel of "cpu.avx512" (cpu/gemm_avx512.cpp) where the CPU has
// AMX (cpu_isa() == Isa::amx): the same 32-bit slots and W panels as the
// AVX-512 kernel (gemm_avx512_kernels.hpp), A in blocks laid out for tile
// loads.  A tile holds 16 rows of 64 bytes: 16 slots of A rows, or 16 slots of
// K of 16 W columns (a panel row is 32 columns: two tiles side by side).  One
// call computes 32 rows x 32 columns with 8 tiles: A 2, W 2, sums 4.
// Compiled with target attributes; only runs after cpu_isa() said the CPU
// has AMX and Linux let the process use it.
#pragma once

#include <cstdint>

#include "cpu/gemm_avx512_kernels.hpp"

namespace aiter {
namespace cpu {
namespace amx {

constexpr int kRows = 32;   // rows of A a call: two tiles of 16
constexpr int kChunk = 16;  // slots of K a tile step (64 bytes a row)

// Loads this thread's tile configuration (8 tiles of 16 rows x 64 bytes);
// release() gives the tile state back.  Around a run of calls, since another
// library on the thread (oneDNN) may configure the tiles its own way between them.
void configure();
void release();

// acc[i * ldc + j] (+)= sum over c < chunks, s < kChunk of a_block[(c * kRows + i) * kChunk + s] .
// w_panel[(c * kChunk + s) * kPanelW + j], i < kRows, j < kPanelW; ". " the
// slot product: bf16 pairs into fp32 sums (tdpbf16ps), or int8 quads, A
// signed and W unsigned (tdpbsud), into exact int32 sums.  With `accumulate`
// false acc is overwritten.  All kRows rows of acc are written (rows of A
// past the matrix must be zeros in a_block, and acc must have the room).
void block(avx512::Slots slots, const uint32_t *a_block, const uint32_t *w_panel, int64_t chunks, void *acc,
           int64_t ldc, bool accumulate);

}  // namespace amx
}  // namespace cpu
}  // namespace aiter
