// The short epilogue of the tensor-core GEMM kernels (NVIDIA): their threads
// hold pairs of adjacent output columns, stored here as one 4-byte pair of
// 16-bit outputs with a few instructions.  The general per-element epilogue
// (store_output) is dozens of instructions per element, unrolled over a
// thread's 32-128 accumulators, run once per tile straight through the
// instruction cache: it cost as much time per tile as the products.
#pragma once

#include "gemm_elements.h"

#if defined(AITER_NVIDIA)

// Two fp32 values as one 4-byte pair of 16-bit outputs (one cvt instruction).
template <class O> __device__ __forceinline__ uint32_t pack_pair(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack_pair<bf16_t>(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> __device__ __forceinline__ uint32_t pack_pair<half_t>(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Whether rows below row_end and columns below col_end are in the output and
// its 16-bit column pairs are 4-byte aligned: the blocks PairStore serves.
__device__ __forceinline__ bool pairs_fit(const GemmParams &p, long long row_end, long long col_end) {
  return p.out_kind != kGemmOutF32 && row_end <= p.m && col_end <= p.n && p.ldo % 2 == 0 && p.out_batch % 2 == 0 &&
         (reinterpret_cast<unsigned long long>(p.out) & 3) == 0;
}

// Stores pairs of 16-bit outputs O: v * a_scale[row] * w_scale[col] + bias[col]
// in store_output's order.  A row's a_scale is read once (row_scale); COLUMNS
// says a per-channel w_scale or a bias varies by column and is read per pair.
template <class O, bool COLUMNS>
struct PairStore {
  const GemmParams &p;
  long long batch;
  bool scales;                        // a8w8 scales to apply (not block-scaled, not a16w16)
  const float *channel_scale = nullptr;  // w_scale of this batch when per channel
  float tensor_scale = 1.0f;             // w_scale when per tensor

  __device__ __forceinline__ PairStore(const GemmParams &p, long long batch, bool scaled)
      : p(p), batch(batch), scales(!scaled && p.a_scale != nullptr) {
    if (scales && p.w_scale_step != 0)
      channel_scale = p.w_scale + batch * p.w_scale_batch;
    else if (scales)
      tensor_scale = p.w_scale[batch * p.w_scale_batch];
  }

  __device__ __forceinline__ float row_scale(long long row) const {
    return scales ? p.a_scale[batch * p.a_scale_batch + row * p.a_scale_step] : 1.0f;
  }

  // out[row, col] and out[row, col + 1] from products v0, v1, as one 4-byte pair.
  __device__ __forceinline__ uint32_t pack(float row_scale, long long col, float v0, float v1) const {
    float s0 = tensor_scale, s1 = tensor_scale;
    if (COLUMNS && channel_scale != nullptr) s0 = channel_scale[col], s1 = channel_scale[col + 1];
    v0 = v0 * row_scale * s0, v1 = v1 * row_scale * s1;
    if (COLUMNS && p.bias != nullptr) v0 += bias_value(p, col), v1 += bias_value(p, col + 1);
    return pack_pair<O>(v0, v1);
  }

  __device__ __forceinline__ O *at(long long row, long long col) const {
    return static_cast<O *>(p.out) + batch * p.out_batch + row * p.ldo + col;
  }

  __device__ __forceinline__ void put(long long row, float row_scale, long long col, float v0, float v1) const {
    *reinterpret_cast<uint32_t *>(at(row, col)) = pack(row_scale, col, v0, v1);
  }
};

// Pulls into L1 what the epilogue of a warpgroup's 64 x BN block (rows from
// row0, columns from n0) will read: the rows' a_scale, the columns' w_scale
// and bias.  Issued as the tile starts, so that the epilogue finds them there
// instead of waiting on L2 (the multiplying warps touch no other global memory
// in between).  One 128-byte line a thread; addresses clamped into the tensors.
template <int BN>
__device__ __forceinline__ void prefetch_epilogue(const GemmParams &p, long long batch, long long row0,
                                                  long long n0) {
  auto line = [](const void *address) { asm volatile("prefetch.global.L1 [%0];" ::"l"(address)); };
  const int t = threadIdx.x % 128;
  const long long col = n0 + t * 32 < p.n ? n0 + t * 32 : p.n - 1;   // 32 fp32 scales a line
  const long long row = row0 + (t - BN / 32) * 32 < p.m ? row0 + (t - BN / 32) * 32 : p.m - 1;
  if (t < BN / 32 && p.a_scale != nullptr && p.w_scale_step != 0)
    line(p.w_scale + batch * p.w_scale_batch + col * p.w_scale_step);
  else if (t >= BN / 32 && t < BN / 32 + 2 && p.a_scale != nullptr)
    line(p.a_scale + batch * p.a_scale_batch + row * p.a_scale_step);
  if (t < BN / 32 && p.bias != nullptr)  // 32 fp32 or 64 16-bit values a line: BN / 32 lines cover either
    line(static_cast<const char *>(p.bias) + (p.bias_f32 ? col * 4 : (n0 + t * 64 < p.n ? n0 + t * 64 : p.n - 1) * 2));
}

// Calls store(PairStore<O, COLUMNS>{...}) with the instance that fits p (a
// 16-bit output: check pairs_fit first).
template <class F>
__device__ __forceinline__ void with_pair_store(const GemmParams &p, long long batch, bool scaled, F store) {
  const bool columns = p.bias != nullptr || (!scaled && p.a_scale != nullptr && p.w_scale_step != 0);
  if (p.out_kind == kGemmOutBf16)
    columns ? store(PairStore<bf16_t, true>(p, batch, scaled)) : store(PairStore<bf16_t, false>(p, batch, scaled));
  else
    columns ? store(PairStore<half_t, true>(p, batch, scaled)) : store(PairStore<half_t, false>(p, batch, scaled));
}

#endif  // AITER_NVIDIA
