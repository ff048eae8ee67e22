// Element formats on the device: fp32 <-> fp16 / bf16 (round to nearest even),
// fp32 -> int8 / fp8 for quantization (round to nearest even, saturating), and
// 16-byte vectors of elements.  The same rounding rules as the CPU backend.
#pragma once

#include "quant_kind.h"
#include "vendor.h"

struct bf16_t { uint16_t bits; };
struct half_t { uint16_t bits; };

__device__ __forceinline__ uint32_t f32_bits(float f) { return __builtin_bit_cast(uint32_t, f); }
__device__ __forceinline__ float bits_f32(uint32_t u) { return __builtin_bit_cast(float, u); }

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16_t x) { return bits_f32(uint32_t(x.bits) << 16); }
__device__ __forceinline__ float to_f32(half_t x) {
#if defined(AITER_AMD)
  return float(__builtin_bit_cast(_Float16, x.bits));
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
#endif
}

template <class T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
// NVIDIA sm_80 and up round in one instruction (F2FP, which ptxas pairs up):
// the bit arithmetic below took 7 instructions an element, ~60 of the few-row
// RMSNorm kernel's ~200 (nvdisasm).  A NaN stays a quiet NaN (there the canonical one).
template <> __device__ __forceinline__ bf16_t from_f32<bf16_t>(float x) {
#if defined(AITER_NVIDIA) && __CUDA_ARCH__ >= 800
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(x));
  return bf16_t{b};
#else
  uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{uint16_t(u >> 16)};
#endif
}
template <> __device__ __forceinline__ half_t from_f32<half_t>(float x) {
#if defined(AITER_AMD)
  return half_t{__builtin_bit_cast(uint16_t, (_Float16)x)};
#else
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return half_t{h};
#endif
}

// ---- quantized outputs ---------------------------------------------------------
__device__ __forceinline__ float quant_max(int kind) {
  return kind == kQuantInt8 ? 127.0f : kind == kQuantE4m3fn ? 448.0f : kind == kQuantE5m2 ? 57344.0f : 240.0f;
}

// amax / qmax, 1 where amax is 0, never below FLT_MIN (so 1/scale is finite):
// the CPU backend's rule (libaiter/cpu/quantize.hpp).
__device__ __forceinline__ float dynamic_scale(float amax, int kind) {
  return amax > 0.0f ? fmaxf(amax / quant_max(kind), 1.17549435e-38f) : 1.0f;
}

// fp32 -> fp8 with MBITS mantissa bits and exponent bias BIAS, after clamping to
// +-maxval: the mantissa is rounded at the value's own exponent (or at the
// smallest normal exponent, for subnormals).
template <int MBITS, int BIAS, bool FNUZ>
__device__ __forceinline__ uint8_t encode_fp8(float x, float maxval) {
  if (x != x) return FNUZ ? 0x80 : 0x7f;
  const uint32_t sign = (f32_bits(x) >> 24) & 0x80u;
  const float a = fminf(fabsf(x), maxval);
  constexpr int emin = 1 - BIAS;
  int e = int((f32_bits(a) >> 23) & 0xffu) - 127;
  e = e < emin ? emin : e;
  const float q = fast_rint(a * bits_f32(uint32_t(127 + MBITS - e) << 23));  // a * 2^(MBITS - e), exact
  uint32_t m = uint32_t(q);
  if (m == 0) return FNUZ ? 0 : uint8_t(sign);
  if (m >= (2u << MBITS)) {  // rounded up to the next power of two
    m >>= 1;
    ++e;
  }
  const uint32_t bits = m < (1u << MBITS) ? m : (uint32_t(e + BIAS) << MBITS) | (m - (1u << MBITS));
  return uint8_t(sign | bits);
}

__device__ __forceinline__ uint8_t quantize(float x, int kind) {
  switch (kind) {
    case kQuantInt8: {  // NaN has no int8 code: 0, as on the CPU
#if defined(AITER_NVIDIA)
      int r;  // round to nearest even, NaN -> 0, clamped to int32: one conversion
      asm("cvt.rni.s32.f32 %0, %1;" : "=r"(r) : "f"(x));
      return uint8_t(int8_t(min(max(r, -127), 127)));
#else
      const float r = x != x ? 0.0f : fminf(fmaxf(fast_rint(x), -127.0f), 127.0f);
      return uint8_t(int8_t(r));
#endif
    }
    case kQuantE4m3fn:
#if defined(AITER_NVIDIA) && __CUDA_ARCH__ >= 890
    {  // the hardware conversion: same rounding, same saturation
      uint16_t pair;
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(x));
      return uint8_t(pair & 0xff);
    }
#else
      return encode_fp8<3, 7, false>(x, 448.0f);
#endif
    case kQuantE5m2:
#if defined(AITER_NVIDIA) && __CUDA_ARCH__ >= 890
    {
      uint16_t pair;
      asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(x));
      return uint8_t(pair & 0xff);
    }
#else
      return encode_fp8<2, 15, false>(x, 57344.0f);
#endif
    default:
      return encode_fp8<3, 8, true>(x, 240.0f);
  }
}

// Two values at once, lo in the low byte: one paired conversion where the hardware
// has it (half the conversions of two quantize() calls), else quantize() twice.
// The same bits either way.
__device__ __forceinline__ uint16_t quantize2(float lo, float hi, int kind) {
#if defined(AITER_NVIDIA) && __CUDA_ARCH__ >= 890
  uint16_t pair;
  if (kind == kQuantE4m3fn) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(hi), "f"(lo));
    return pair;
  }
  if (kind == kQuantE5m2) {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(hi), "f"(lo));
    return pair;
  }
#endif
  return uint16_t(quantize(lo, kind) | (uint32_t(quantize(hi, kind)) << 8));
}

// ---- 16-byte vectors ------------------------------------------------------------
// Vec<T, N>: N elements of T loaded or stored in one access of N * sizeof(T) bytes.
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_vec(const T *p) {
  return *reinterpret_cast<const Vec<T, N> *>(p);
}

template <class T, int N>
__device__ __forceinline__ void load_f32(const T *p, float (&out)[N]) {
  const Vec<T, N> v = load_vec<T, N>(p);
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = to_f32(v.v[i]);
}

template <class T, int N>
__device__ __forceinline__ void store_f32(T *p, const float (&in)[N]) {
  Vec<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v.v[i] = from_f32<T>(in[i]);
  *reinterpret_cast<Vec<T, N> *>(p) = v;
}
