// Element types: the DLPack dtypes libaiter knows, and scalar conversions to and
// from fp32 for the 16- and 8-bit floating formats (round to nearest, ties to even).
#pragma once

#include <cstdint>
#include <cstring>

#include "aiter/dlpack.h"

namespace aiter {

enum class DType { unknown, f32, f64, f16, bf16, i8, u8, i32, i64, e4m3fn, e4m3fnuz, e5m2 };

DType dtype_of(DLDataType t);
const char *dtype_name(DType t);  // "float16", "float8_e4m3fn", ...
int dtype_size(DType t);          // bytes per element, 0 for unknown
bool is_fp8(DType t);

// ---- 16-bit floats -------------------------------------------------------
struct half_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

inline float bits_to_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t f32_to_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float to_f32(float x) { return x; }
inline float to_f32(bf16_t x) { return bits_to_f32(uint32_t(x.bits) << 16); }
float to_f32(half_t x);

inline bf16_t f32_to_bf16(float f) {
  uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{uint16_t(u >> 16)};
}
half_t f32_to_half(float f);

// from_f32<T>(x): the nearest T to x.
template <class T> T from_f32(float x);
template <> inline float from_f32<float>(float x) { return x; }
template <> inline bf16_t from_f32<bf16_t>(float x) { return f32_to_bf16(x); }
template <> inline half_t from_f32<half_t>(float x) { return f32_to_half(x); }

// ---- 8-bit floats ---------------------------------------------------------
struct e4m3fn_t { uint8_t bits; };
struct e4m3fnuz_t { uint8_t bits; };
struct e5m2_t { uint8_t bits; };

// Decoding goes through one 256-entry table per format.
extern const float *const e4m3fn_table;
extern const float *const e4m3fnuz_table;
extern const float *const e5m2_table;
inline float to_f32(e4m3fn_t x) { return e4m3fn_table[x.bits]; }
inline float to_f32(e4m3fnuz_t x) { return e4m3fnuz_table[x.bits]; }
inline float to_f32(e5m2_t x) { return e5m2_table[x.bits]; }

// Encoding rounds to nearest even and saturates to the largest finite value
// (the behaviour quantization wants); NaN stays NaN.
uint8_t f32_to_e4m3fn(float x);
uint8_t f32_to_e4m3fnuz(float x);
uint8_t f32_to_e5m2(float x);
template <> inline e4m3fn_t from_f32<e4m3fn_t>(float x) { return e4m3fn_t{f32_to_e4m3fn(x)}; }
template <> inline e4m3fnuz_t from_f32<e4m3fnuz_t>(float x) { return e4m3fnuz_t{f32_to_e4m3fnuz(x)}; }
template <> inline e5m2_t from_f32<e5m2_t>(float x) { return e5m2_t{f32_to_e5m2(x)}; }

// Largest finite value of each fp8 format.
constexpr float e4m3fn_max = 448.0f;
constexpr float e4m3fnuz_max = 240.0f;
constexpr float e5m2_max = 57344.0f;

// ---- dispatch over element types -------------------------------------------
// visit_float(dt, f) calls f(T{}) with T the C++ type of a float dtype
// (fp32, fp16, bf16); callers check the dtype before dispatching.
template <class F>
auto visit_float(DType dt, F &&f) {
  switch (dt) {
    case DType::f16: return f(half_t{});
    case DType::bf16: return f(bf16_t{});
    default: return f(float{});
  }
}

// visit_fp8(dt, f) likewise for the fp8 formats.
template <class F>
auto visit_fp8(DType dt, F &&f) {
  switch (dt) {
    case DType::e4m3fnuz: return f(e4m3fnuz_t{});
    case DType::e5m2: return f(e5m2_t{});
    default: return f(e4m3fn_t{});
  }
}

// visit_cached(dt, cache_dt, f) calls f(T{}, C{}) for ops over a KV or latent
// cache: T the float type of dt, C the cache's element, T itself unless cache_dt
// is an fp8 format.
template <class F>
void visit_cached(DType dt, DType cache_dt, F &&f) {
  visit_float(dt, [&](auto t) {
    if (is_fp8(cache_dt))
      visit_fp8(cache_dt, [&](auto c) { f(t, c); });
    else
      f(t, t);
  });
}

}  // namespace aiter
