// Elements of the GEMM kernels: input formats decoded to fp32 (fp8 by bit
// arithmetic, so the portable kernel needs no vendor intrinsics) and the
// epilogue that scales, adds the bias and stores in the output dtype.
#pragma once

#include "../common/numeric.h"
#include "gemm_params.h"

struct e4m3fn_t { uint8_t bits; };
struct e4m3fnuz_t { uint8_t bits; };
struct e5m2_t { uint8_t bits; };

// An fp8 byte with MBITS mantissa bits and exponent bias BIAS as fp32.
template <int MBITS, int BIAS>
__device__ __forceinline__ float decode_fp8(uint32_t v, bool is_nan, bool is_inf) {
  const uint32_t sign = (v & 0x80u) << 24;
  const uint32_t exp = (v >> MBITS) & ((1u << (7 - MBITS)) - 1);
  const uint32_t man = v & ((1u << MBITS) - 1);
  if (is_nan) return bits_f32(0x7fc00000u);
  if (is_inf) return bits_f32(sign | 0x7f800000u);
  if (exp == 0)  // subnormal: man * 2^(1 - BIAS - MBITS), exact
    return bits_f32(sign | f32_bits(float(man) * bits_f32(uint32_t(127 + 1 - BIAS - MBITS) << 23)));
  return bits_f32(sign | ((exp - BIAS + 127) << 23) | (man << (23 - MBITS)));
}

__device__ __forceinline__ float to_f32(int8_t x) { return float(x); }
__device__ __forceinline__ float to_f32(e4m3fn_t x) {
  return decode_fp8<3, 7>(x.bits, (x.bits & 0x7fu) == 0x7fu, false);
}
__device__ __forceinline__ float to_f32(e4m3fnuz_t x) {
  const float v = decode_fp8<3, 8>(x.bits, x.bits == 0x80u, false);
  return x.bits == 0 ? 0.0f : v;
}
__device__ __forceinline__ float to_f32(e5m2_t x) {
  const bool special = (x.bits & 0x7cu) == 0x7cu;
  return decode_fp8<2, 15>(x.bits, special && (x.bits & 3u), special && !(x.bits & 3u));
}

// bias[col] (p.bias not null): fp32 or the output's dtype.
__device__ __forceinline__ float bias_value(const GemmParams &p, long long col) {
  return p.bias_f32 ? static_cast<const float *>(p.bias)[col]
         : p.out_kind == kGemmOutF16 ? to_f32(static_cast<const half_t *>(p.bias)[col])
                                     : to_f32(static_cast<const bf16_t *>(p.bias)[col]);
}

// out[row, col] of batch matrix `batch` before rounding: v * scales + bias.
// `scaled` says v already carries the scales (block-scaled kernels).
__device__ __forceinline__ float output_value(const GemmParams &p, long long batch, long long row, long long col,
                                              float v, bool scaled) {
  if (!scaled && p.a_scale != nullptr)
    v = v * p.a_scale[batch * p.a_scale_batch + row * p.a_scale_step] *
        p.w_scale[batch * p.w_scale_batch + col * p.w_scale_step];
  if (p.bias != nullptr) v += bias_value(p, col);
  return v;
}

// out[row, col] = output_value(v), rounded once to the output dtype.
__device__ __forceinline__ void store_output(const GemmParams &p, long long batch, long long row, long long col,
                                             float v, bool scaled) {
  v = output_value(p, batch, row, col, v, scaled);
  const long long at = batch * p.out_batch + row * p.ldo + col;
  if (p.out_kind == kGemmOutF32)
    static_cast<float *>(p.out)[at] = v;
  else if (p.out_kind == kGemmOutF16)
    static_cast<half_t *>(p.out)[at] = from_f32<half_t>(v);
  else
    static_cast<bf16_t *>(p.out)[at] = from_f32<bf16_t>(v);
}

// Columns col and col + 1 of a row: one 4-byte store for 16-bit outputs when
// both exist and the pair is 4-byte aligned (half the store instructions of
// the tensor-core epilogues, whose threads hold column pairs), else one by one.
__device__ __forceinline__ void store_output_pair(const GemmParams &p, long long batch, long long row,
                                                  long long col, float v0, float v1, bool scaled) {
  const long long at = batch * p.out_batch + row * p.ldo + col;
  const bool paired = p.out_kind != kGemmOutF32 && col + 1 < p.n &&
                      (reinterpret_cast<unsigned long long>(static_cast<uint16_t *>(p.out) + at) & 3) == 0;
  if (!paired) {
    store_output(p, batch, row, col, v0, scaled);
    if (col + 1 < p.n) store_output(p, batch, row, col + 1, v1, scaled);
    return;
  }
  v0 = output_value(p, batch, row, col, v0, scaled);
  v1 = output_value(p, batch, row, col + 1, v1, scaled);
  const uint32_t lo = p.out_kind == kGemmOutF16 ? from_f32<half_t>(v0).bits : from_f32<bf16_t>(v0).bits;
  const uint32_t hi = p.out_kind == kGemmOutF16 ? from_f32<half_t>(v1).bits : from_f32<bf16_t>(v1).bits;
  *reinterpret_cast<uint32_t *>(static_cast<uint16_t *>(p.out) + at) = lo | hi << 16;
}

// The combined block scale of rows `row` of a and `col` of w for K group g.
__device__ __forceinline__ float block_scale(const GemmParams &p, long long batch, long long row, long long col,
                                             int g) {
  return p.a_scale[batch * p.a_scale_batch + row * p.a_scale_row + g * p.a_scale_group] *
         p.w_scale[batch * p.w_scale_batch + (col / 128) * p.kgroups + g];
}
