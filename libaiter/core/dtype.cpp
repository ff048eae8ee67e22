#include "core/dtype.hpp"

#include <algorithm>
#include <cmath>

namespace aiter {

DType dtype_of(DLDataType t) {
  if (t.lanes != 1) return DType::unknown;
  switch (t.code) {
    case kDLFloat:
      return t.bits == 32 ? DType::f32 : t.bits == 16 ? DType::f16 : t.bits == 64 ? DType::f64 : DType::unknown;
    case kDLBfloat: return t.bits == 16 ? DType::bf16 : DType::unknown;
    case kDLInt:
      return t.bits == 8 ? DType::i8 : t.bits == 32 ? DType::i32 : t.bits == 64 ? DType::i64 : DType::unknown;
    case kDLUInt: return t.bits == 8 ? DType::u8 : DType::unknown;
    case kDLFloat8_e4m3fn: return t.bits == 8 ? DType::e4m3fn : DType::unknown;
    case kDLFloat8_e4m3fnuz: return t.bits == 8 ? DType::e4m3fnuz : DType::unknown;
    case kDLFloat8_e5m2: return t.bits == 8 ? DType::e5m2 : DType::unknown;
    default: return DType::unknown;
  }
}

const char *dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::i8: return "int8";
    case DType::u8: return "uint8";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::e4m3fn: return "float8_e4m3fn";
    case DType::e4m3fnuz: return "float8_e4m3fnuz";
    case DType::e5m2: return "float8_e5m2";
    case DType::unknown: break;
  }
  return "unknown";
}

int dtype_size(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::i8: case DType::u8: case DType::e4m3fn: case DType::e4m3fnuz: case DType::e5m2: return 1;
    case DType::unknown: break;
  }
  return 0;
}

bool is_fp8(DType t) { return t == DType::e4m3fn || t == DType::e4m3fnuz || t == DType::e5m2; }

// ---- fp16 ------------------------------------------------------------------
float to_f32(half_t x) {
  const uint32_t sign = uint32_t(x.bits & 0x8000u) << 16;
  const uint32_t exp = (x.bits >> 10) & 0x1fu;
  const uint32_t mant = x.bits & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
  const float sub = std::ldexp(float(mant), -24);  // subnormal or zero
  return sign ? -sub : sub;
}

half_t f32_to_half(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return half_t{uint16_t(sign | 0x7e00u)};
  if (a >= 65520.0f) return half_t{uint16_t(sign | 0x7c00u)};  // rounds to inf
  if (a < 6.103515625e-05f) {                                  // subnormal range: quantum 2^-24
    const uint16_t m = uint16_t(std::nearbyint(std::ldexp(a, 24)));
    return half_t{uint16_t(sign | m)};  // m == 0x400 is the smallest normal: still right
  }
  uint32_t v = u & 0x7fffffffu;
  v += 0xfffu + ((v >> 13) & 1u);  // round mantissa to 10 bits, ties to even
  return half_t{uint16_t(sign | (((v >> 23) - 112u) << 10 | ((v >> 13) & 0x3ffu)))};
}

// ---- fp8 ---------------------------------------------------------------------
namespace {

// A format: exponent bits, mantissa bits, bias, whether it is "fnuz" (no -0,
// NaN = 0x80) and its largest finite value.
struct Fp8Format {
  int mbits;
  int bias;
  bool fnuz;
  bool has_inf;
  float max;
};
constexpr Fp8Format kE4m3fn{3, 7, false, false, e4m3fn_max};
constexpr Fp8Format kE4m3fnuz{3, 8, true, false, e4m3fnuz_max};
constexpr Fp8Format kE5m2{2, 15, false, true, e5m2_max};

float decode(const Fp8Format &f, uint8_t bits) {
  const int ebits = 7 - f.mbits;
  const int emax_field = (1 << ebits) - 1;
  const bool neg = bits & 0x80;
  const int e = (bits >> f.mbits) & emax_field;
  const int m = bits & ((1 << f.mbits) - 1);
  if (f.fnuz && bits == 0x80) return NAN;
  if (!f.fnuz && e == emax_field) {
    if (f.has_inf) return m == 0 ? (neg ? -INFINITY : INFINITY) : NAN;
    if (m == (1 << f.mbits) - 1) return NAN;  // e4m3fn: only S.1111.111 is NaN
  }
  const float mag = e == 0 ? std::ldexp(float(m), 1 - f.bias - f.mbits)
                           : std::ldexp(1.0f + float(m) / float(1 << f.mbits), e - f.bias);
  return neg ? -mag : mag;
}

// The mantissa is rounded at the value's own exponent, or at the smallest normal
// exponent for subnormals: a * 2^(mbits - e) is exact in fp32, and nearbyint
// rounds it to the nearest integer, ties to even.  The same steps as the GPU
// kernels' encoder (kernels/common/numeric.h), so both backends agree bit for bit.
uint8_t encode(const Fp8Format &f, float x) {
  if (std::isnan(x)) return f.fnuz ? 0x80 : 0x7f;
  const uint32_t sign = (f32_to_bits(x) >> 24) & 0x80u;
  const float a = std::fmin(std::fabs(x), f.max);  // saturate
  const int emin = 1 - f.bias;
  int e = std::max(int((f32_to_bits(a) >> 23) & 0xffu) - 127, emin);
  uint32_t m = uint32_t(std::nearbyint(a * bits_to_f32(uint32_t(127 + f.mbits - e) << 23)));
  if (m == 0) return f.fnuz ? 0x00 : uint8_t(sign);
  if (m >= (2u << f.mbits)) {  // rounded up to the next power of two
    m >>= 1;
    ++e;
  }
  const uint32_t bits = m < (1u << f.mbits) ? m : (uint32_t(e + f.bias) << f.mbits) | (m - (1u << f.mbits));
  return uint8_t(sign | bits);
}

struct Table {
  float v[256];
  explicit Table(const Fp8Format &f) {
    for (int i = 0; i < 256; ++i) v[i] = decode(f, uint8_t(i));
  }
};
const Table e4m3fn_values(kE4m3fn);
const Table e4m3fnuz_values(kE4m3fnuz);
const Table e5m2_values(kE5m2);

}  // namespace

const float *const e4m3fn_table = e4m3fn_values.v;
const float *const e4m3fnuz_table = e4m3fnuz_values.v;
const float *const e5m2_table = e5m2_values.v;

uint8_t f32_to_e4m3fn(float x) { return encode(kE4m3fn, x); }
uint8_t f32_to_e4m3fnuz(float x) { return encode(kE4m3fnuz, x); }
uint8_t f32_to_e5m2(float x) { return encode(kE5m2, x); }

}  // namespace aiter
