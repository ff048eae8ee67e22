// Pieces shared by the fused MoE's kernel files (fused_moe.cu, moe_decode.cu):
// 16-byte packs, the expert mask, and the combine of a token's pair rows.
#pragma once

#include "../common/numeric.h"
#include "moe_params.h"

namespace {

// 16-byte packs of 8 elements: the combine's and the quantization's loads.
constexpr int kCombineCols = 8;
template <class T> struct alignas(16) Pack8 { T v[kCombineCols]; };
struct alignas(8) Codes8 { uint32_t lo, hi; };  // 8 one-byte codes, the first in lo's low byte

__device__ __forceinline__ bool aligned16(const void *ptr) { return (reinterpret_cast<unsigned long long>(ptr) & 15) == 0; }
__device__ __forceinline__ bool aligned8(const void *ptr) { return (reinterpret_cast<unsigned long long>(ptr) & 7) == 0; }

__device__ __forceinline__ bool mask_on(const FusedMoeParams &p, int e) {
  if (p.mask == nullptr) return true;
  return p.mask_bytes == 4 ? static_cast<const int *>(p.mask)[e] != 0
                           : static_cast<const unsigned char *>(p.mask)[e] != 0;
}

// A pair's expert id adds to the layer: in range and inside the mask.
__device__ __forceinline__ bool expert_used(const FusedMoeParams &p, int e) {
  return e >= 0 && e < p.experts && mask_on(p, e);
}

// Loads of rows the combine reads: FRESH (kernels whose other blocks wrote the
// rows earlier in the same launch, moe_decode.cu) skips the SM's L1, which is not
// coherent with other SMs' writes: a line it already holds would be stale.
template <bool FRESH, class V>
__device__ __forceinline__ V load_row(const V *p) {
#if defined(AITER_NVIDIA)
  if constexpr (FRESH) {
    static_assert(sizeof(V) == 16 || sizeof(V) == 4 || sizeof(V) == 2, "a 16-, 4- or 2-byte load");
    if constexpr (sizeof(V) == 16) return __builtin_bit_cast(V, __ldcg(reinterpret_cast<const uint4 *>(p)));
    if constexpr (sizeof(V) == 4) return __builtin_bit_cast(V, __ldcg(reinterpret_cast<const unsigned *>(p)));
    if constexpr (sizeof(V) == 2) return __builtin_bit_cast(V, __ldcg(reinterpret_cast<const unsigned short *>(p)));
  }
#endif
  return *p;
}

// acc += w * (pair q's partial sums of the K-split stage 2, in split order)
// over columns [n0, n0 + cols).
template <bool FRESH>
__device__ __forceinline__ void add_partials(const FusedMoeParams &p, long long q, int n0, int cols, float w,
                                             float (&acc)[kCombineCols]) {
  float sum[kCombineCols] = {};
  for (int s = 0; s < p.splits; ++s) {
    const float *row = p.partials + (s * p.tokens * p.topk + q) * p.hidden + n0;
#pragma unroll
    for (int c = 0; c < kCombineCols; ++c)
      if (c < cols) sum[c] += load_row<FRESH>(row + c);
  }
#pragma unroll
  for (int c = 0; c < kCombineCols; ++c) acc[c] += w * sum[c];
}

// acc += w[t, j] * pair_out[t k + j, n] for AHEAD of the token's pairs at a
// time, the columns [n0, n0 + kCombineCols) of 16-byte rows: the ids, weights
// and rows of all AHEAD are loaded before any is added.
template <class T, bool FRESH, int AHEAD>
__device__ __forceinline__ void add_rows_ahead(const FusedMoeParams &p, long long t, const T *rows, int n0,
                                               float (&acc)[kCombineCols]) {
  for (int j0 = 0; j0 < p.topk; j0 += AHEAD) {
    float w[AHEAD];
    bool valid[AHEAD];
    Pack8<T> v[AHEAD];
#pragma unroll
    for (int u = 0; u < AHEAD; ++u) {
      const int j = j0 + u, e = j < p.topk ? p.ids[t * p.ids_stride + j] : -1;
      valid[u] = expert_used(p, e);
      w[u] = !valid[u] || p.weights_on_input ? 1.0f : p.weights[t * p.weights_stride + j];
    }
#pragma unroll
    for (int u = 0; u < AHEAD; ++u)
      if (valid[u]) v[u] = load_row<FRESH>(reinterpret_cast<const Pack8<T> *>(rows + (long long)(j0 + u) * p.hidden + n0));
#pragma unroll
    for (int u = 0; u < AHEAD; ++u)
      if (valid[u])
#pragma unroll
        for (int c = 0; c < kCombineCols; ++c) acc[c] += w[u] * to_f32(v[u].v[c]);
  }
}

// out[t, n] = sum_j w[t, j] * pair_out[t k + j, n] over the token's valid pairs,
// for the kCombineCols consecutive columns from n0: 16-byte loads and stores
// where the rows allow (a third of the time of 2-byte ones on an H100 at
// Qwen3-30B's 32768 pairs x 2048), element by element otherwise.  At that size
// it reads and writes at 92% of the device copy (54 us, H100); loading 4 pairs'
// rows before summing them measured no faster (55 us, run 10 of
// docs/performance_moe.md).  AHEAD > 1 (the decode kernel, which never splits
// stage 2): AHEAD pairs' loads at once where the rows are 16-byte packs, as its
// combine has a thread or a few a token and its time is the loads' round trips.
// With stage 2 split along K (p.splits > 1) a pair's row is the sum of its fp32
// partial rows instead.
template <class T, bool FRESH = false, int AHEAD = 1>
__device__ __forceinline__ void combine_cols(const FusedMoeParams &p, long long t, int n0) {
  if (n0 >= p.hidden) return;
  const T *rows = static_cast<const T *>(p.pair_out) + t * p.topk * p.hidden;
  T *out = static_cast<T *>(p.out) + t * p.out_stride;
  const bool packed = n0 + kCombineCols <= p.hidden && p.hidden % kCombineCols == 0 && aligned16(rows) &&
                      aligned16(out) && p.out_stride % kCombineCols == 0;
  const int cols = packed || n0 + kCombineCols <= p.hidden ? kCombineCols : p.hidden - n0;
  float acc[kCombineCols] = {};
  if (AHEAD > 1 && packed) {
    add_rows_ahead<T, FRESH, AHEAD>(p, t, rows, n0, acc);
  } else {
    for (int j = 0; j < p.topk; ++j) {
      const int e = p.ids[t * p.ids_stride + j];
      if (!expert_used(p, e)) continue;
      const float w = p.weights_on_input ? 1.0f : p.weights[t * p.weights_stride + j];
      if (AHEAD == 1 && p.splits > 1) {
        add_partials<FRESH>(p, t * p.topk + j, n0, cols, w, acc);
        continue;
      }
      const T *row = rows + (long long)j * p.hidden + n0;
      if (packed) {
        const Pack8<T> v = load_row<FRESH>(reinterpret_cast<const Pack8<T> *>(row));
        for (int c = 0; c < kCombineCols; ++c) acc[c] += w * to_f32(v.v[c]);
      } else {
#pragma unroll
        for (int c = 0; c < kCombineCols; ++c)  // (a constant bound keeps acc in registers)
          if (c < cols) acc[c] += w * to_f32(load_row<FRESH>(row + c));
      }
    }
  }
  if (packed) {
    Pack8<T> v;
    for (int c = 0; c < kCombineCols; ++c) v.v[c] = from_f32<T>(acc[c]);
    *reinterpret_cast<Pack8<T> *>(out + n0) = v;
  } else {
#pragma unroll
    for (int c = 0; c < kCombineCols; ++c)
      if (c < cols) out[n0 + c] = from_f32<T>(acc[c]);
  }
}

}  // namespace
