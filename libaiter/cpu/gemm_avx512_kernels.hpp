// The AVX-512 register kernels of "cpu.avx512" (cpu/gemm_avx512.cpp): an
// outer-product kernel on packed panels of 32-bit slots, and the transposing
// packer that builds the panels.  A slot holds one fp32, or a pair of bf16
// (vdpbf16ps) or int16 (vpdpwssd / vpmaddwd) from consecutive K: the dot
// instructions multiply the two halves of a slot pairwise and add both
// products into one 32-bit lane, so a K pair costs one instruction.
// Everything here is compiled with target attributes and only runs after
// cpu_isa() said the CPU has the instructions.
#pragma once

#include <cstdint>

namespace aiter {
namespace cpu {
namespace avx512 {

// What the slots hold, and the arithmetic that sums them.
enum class Slots {
  fp32,        // one fp32 per slot, vfmadd
  bf16_pairs,  // two bf16, vdpbf16ps (AVX512_BF16), fp32 sums
  int16_pairs, // two int16, vpdpwssd (AVX512_VNNI) or vpmaddwd + vpaddd, exact int32 sums
  int8_quads,  // four int8: W as uint8 (w + 128), A as int8; vpdpbusd (AVX512_VNNI),
               // exact int32 sums of (w + 128) a, from which the caller takes 128 sum(a)
};

constexpr int kPanelW = 32;    // columns of W per panel: two zmm of 16 lanes
constexpr int kMaxRowsA = 14;  // rows of A per kernel call: 28 accumulators + 2 W + 1 spare of 32 zmm

// acc[i * ldc + j] (+)= sum over slot g < groups of a_panel[g * rows + i] . w_panel[g * kPanelW + j]
// for i < rows (1..kMaxRowsA), j < kPanelW; 32-bit fp32 or int32 sums; with
// `accumulate` false acc is overwritten.  ". " is the slot product: x*y for
// fp32, x0*y0 + x1*y1 for pairs.
using Kernel = void (*)(const uint32_t *a_panel, const uint32_t *w_panel, int64_t groups, void *acc, int64_t ldc,
                        bool accumulate);

// The kernel for `rows` rows of A and these slots (null off x86-64); `vnni`
// picks vpdpwssd over vpmaddwd + vpaddd for int16 pairs.
Kernel kernel(Slots slots, int rows, bool vnni);

// ---- the dot-product form, for a few rows of A -----------------------------------
// lanes[(i * kDotRowsW + j) * 16 + l] (+)= lane l of dot(a row i, w_rows[j])
// over kc elements, for `rows` (1..kDotRowsA) rows of A lda elements apart,
// straight from the rows (no packing: with few rows of A, packing W would cost
// more than the products):
//   bf16_pairs   A bf16, W bf16 (w_table null) or fp8 (w_table: the bf16 bits
//                of bytes 0..127, then of byte 0x80), decoded as it is
//                loaded by two 64-entry table lookups and the sign; fp32
//                lanes by vdpbf16ps
//   int16_pairs  A int16 (int8 widened once by the caller), W int8, widened
//                as it is loaded; exact int32 lanes by vpdpwssd / vpmaddwd
// The lanes stay apart across calls (K blocks that fit L1) and are added up
// by the caller at the end.  Null off x86-64 and for fp32 slots.
constexpr int kDotRowsA = 4;
constexpr int kDotRowsW = 6;

// ahead_bytes (0: none): every step of 32 elements also asks for (prefetcht1)
// kDotRowsW x 32 elements' worth of lines, in address order, from
// w_rows[0] + ahead_bytes + k kDotRowsW on (k: the step's first element): a
// sweep through bytes of W that later calls read, as fast as this one reads
// (the caller picks ahead_bytes: cpu/gemm_avx512.cpp, dot_ahead_bytes).  Six
// rows read side by side, 2 KB apart, defeat the hardware's prefetchers (one
// thread read evicted W at 11-12 GB/s that way, at 23-28 GB/s with this sweep
// 32-256 KB ahead; docs/performance_cpu.md).
using DotKernel = void (*)(const void *a, int64_t lda, const void *const *w_rows, int64_t kc, void *lanes,
                           bool accumulate, const uint16_t *w_table, int64_t ahead_bytes);
DotKernel dot_kernel(Slots slots, int rows, bool vnni, bool fp8_w);

// sums[o] = (((0 + lanes[16 o]) + lanes[16 o + 1]) + ...) + lanes[16 o + 15]
// for o < count (1..16): the dot kernels' lanes added up, 16 rows of lanes at
// a time (a transpose, then 16 vector adds in the scalar loop's order, so the
// float sums are the same bits).  Reads no row at or past `count`.
void add_lanes(const float *lanes, int count, float *sums);
void add_lanes(const int32_t *lanes, int count, int32_t *sums);

// dst[i] = the bf16 bits of fp8 byte src[i], i < n, by the dot kernel's table
// lookups (table: as w_table above), 32 a step.
void decode_fp8_row(const uint8_t *src, int64_t n, const uint16_t *table, uint16_t *dst);

// panel[g * width + r] = src[r * ld + g] for r < rows, g < groups, and 0 for
// rows <= r < width (width <= kPanelW): `rows` rows of slots, transposed so that
// a kernel step reads one slot of every row with one load.  Reads no slot of
// src past `groups` in any row.
void pack_panel(const uint32_t *src, int64_t ld, int rows, int64_t groups, int width, uint32_t *panel);

}  // namespace avx512
}  // namespace cpu
}  // namespace aiter
