// fp8 cache values widened to 16 bits on NVIDIA, exactly: e5m2 and e4m3 are
// both exact in fp16 (e4m3fn by the hardware's cvt on sm_89 and up, else by
// placing the bits; e4m3fnuz by placing the bits), up to a power of two that
// the kernels fold into their scales (fp8_fold).  Shared by the tensor-core
// kernels that read fp8 caches (decode_mma.cu, paged_prefill_mma.cu), which run
// their products in fp16 whatever q's type.
#pragma once

#include "../common/numeric.h"
#include "../common/quant_kind.h"

namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
constexpr bool kHwE4m3 = true;  // cvt.rn.f16x2.e4m3x2
#else
constexpr bool kHwE4m3 = false;
#endif

// What the widened values must be multiplied by to be the cache's values.
template <int CK>
__device__ __forceinline__ constexpr float fp8_fold() {
  return CK == kQuantE4m3fnuz ? 0x1p7f : CK == kQuantE4m3fn && !kHwE4m3 ? 0x1p8f : 1.0f;
}

// Bytes I0 and I1 of w as an fp16 pair (I0 in the low half), exactly, up to fp8_fold.
template <int CK, int I0, int I1>
__device__ __forceinline__ uint32_t fp8_pair(uint32_t w) {
  if constexpr (CK == kQuantE5m2) {
    return __byte_perm(w, 0u, 0x4 | (I0 << 4) | (0x4 << 8) | (I1 << 12));  // e5m2 is fp16's top byte
  } else if constexpr (CK == kQuantE4m3fn && kHwE4m3) {
    const uint16_t two = uint16_t(__byte_perm(w, 0u, I0 | (I1 << 4)));
    uint32_t h;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"(two));
    return h;
  } else {
    // Sign to bit 15, exponent and mantissa to bits 13..7: fp16's bias 15 against
    // e4m3's 7 (fn) or 8 (fnuz), subnormals included; then the NaN codes.
    const uint32_t x = __byte_perm(w, 0u, I0 | (0x4 << 4) | (I1 << 8) | (0x4 << 12));
    const uint32_t h = ((x << 8) & 0x80008000u) | ((x << 7) & 0x3f803f80u);
    const uint32_t nan = CK == kQuantE4m3fnuz ? __vcmpeq2(h, 0x80008000u) : __vcmpeq2(h & 0x7fff7fffu, 0x3f803f80u);
    return h | (nan & 0x7e007e00u);
  }
}

// Two fp16 pairs from one word: bytes I0, I1 as lo and J0, J1 as hi.  The
// hardware's e4m3fn conversion reads either half of a register, so one permute
// (none for bytes in order) serves both pairs.
template <int CK, int I0, int I1, int J0, int J1>
__device__ __forceinline__ void fp8_pairs(uint32_t w, uint32_t &lo, uint32_t &hi) {
  if constexpr (CK == kQuantE4m3fn && kHwE4m3) {
    constexpr int kSel = I0 | (I1 << 4) | (J0 << 8) | (J1 << 12);
    const uint32_t x = kSel == 0x3210 ? w : __byte_perm(w, 0u, kSel);
    asm("{.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;}"
        : "=r"(lo), "=r"(hi)
        : "r"(x));
  } else {
    lo = fp8_pair<CK, I0, I1>(w);
    hi = fp8_pair<CK, J0, J1>(w);
  }
}

// The products' type of a kernel with 16-bit q of type T over a cache of
// QuantKind CK: T, or fp16 for fp8 caches (keys and values widened exactly, a
// bf16 query scaled into fp16's range by fp16_range, P finer than in bf16).
template <class T, int CK> struct ProductType { using type = half_t; };
template <class T> struct ProductType<T, kQuantNone> { using type = T; };

// A 16-bit query for the fp16 products: the factor 2^k that puts its largest
// |element|, whose fp32/bf16 exponent field is `exponent` (`zero`: the largest
// is 0), in [2^13, 2^14), so that no element overflows fp16 and every one down
// to 2^-27 of the largest stays exact; k = 0 for 0, infinity or NaN.  unscale
// = 2^-k comes back in the logits.
struct Fp16Range {
  float scale, unscale;
};
__device__ __forceinline__ Fp16Range fp16_range(uint32_t exponent, bool zero) {
  int k = zero || exponent == 0xffu ? 0 : 140 - int(exponent);  // the largest is in [2^(e-127), 2^(e-126))
  k = k > 100 ? 100 : k;  // k >= -114 (exponent <= 254): both 2^k and 2^-k stay normal
  return {bits_f32(uint32_t(127 + k) << 23), bits_f32(uint32_t(127 - k) << 23)};
}

}  // namespace
