// fp8 (e4m3) latent codes to fp16 pairs in registers, for the MLA tensor-core
// kernel (mla_mma.cu): its fp8 caches land in shared memory as raw bytes and are
// widened right after ldmatrix, into the fp16 mma's B fragments, so no widened
// copy of a tile is written or read back.
#pragma once

#include "../attention/fp8_widen.h"  // kHwE4m3, fp8_pairs, fp16_range (the query's factor)

namespace {

// An fp16 pair from [0, code_lo, 0, code_hi] (the codes in bytes 1 and 3): each
// code's sign kept, its exponent and mantissa bits moved into the fp16 fields.
// Exact up to a power of two, subnormals included: 2^-8 times an e4m3fn value,
// 2^-7 times an e4m3fnuz one (the kernel folds the factor into its scales).
// NaN codes are not singled out.
__device__ __forceinline__ uint32_t e4m3_bits_to_f16x2(uint32_t y) {
  return (y & 0x80008000u) | ((y >> 1) & 0x3f803f80u);
}

// Bytes I0, J0 of w as one fp16 pair (I0 in the low half) and bytes I1, J1 as
// another.  Hw: the hardware's conversion of e4m3fn codes (exact: fp16 holds
// every e4m3fn value); else e4m3_bits_to_f16x2.
template <bool Hw, int I0, int J0, int I1, int J1>
__device__ __forceinline__ void e4m3_to_f16x2(uint32_t w, uint32_t &lo, uint32_t &hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (Hw) {
    fp8_pairs<kQuantE4m3fn, I0, J0, I1, J1>(w, lo, hi);
    return;
  }
#endif
  lo = e4m3_bits_to_f16x2(__byte_perm(w, 0u, 0x0404 | (I0 << 4) | (J0 << 12)));
  hi = e4m3_bits_to_f16x2(__byte_perm(w, 0u, 0x0404 | (I1 << 4) | (J1 << 12)));
}

// The factor the products of a code widened by e4m3_to_f16x2<Hw> carry: 1
// through the hardware, else 2^-8 (e4m3fn) or 2^-7 (e4m3fnuz); its inverse.
template <bool Hw>
__device__ __forceinline__ float e4m3_unbias(int quant) {
  return Hw ? 1.0f : quant == kQuantE4m3fnuz ? 128.0f : 256.0f;
}

}  // namespace
