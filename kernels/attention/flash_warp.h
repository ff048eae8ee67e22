// The FlashAttention-2 step of one warp on mma.sync m16n8k16, shared by the
// tensor-core prefill kernels (prefill_mma.cu, paged_prefill_mma.cu): the warp's
// 16 query rows, held as A fragments, against a tile of keys that lies in shared
// memory as [keys][D] 16-bit rows whose 16-byte chunks are XOR-swizzled by row
// (the 8 rows an ldmatrix reads hit different banks).  Scores stay in registers:
// S's C fragments become, rounded to 16 bits, P's A fragments.  Logits are in the
// log2 domain (exp2 with log2(e) folded into the scale).  A thread holds rows
// lane / 4 and lane / 4 + 8 of its warp's 16, a row's scores in the 4 lanes of a quad.
#pragma once

#include "mma16.h"

namespace {

constexpr float kNegInf = -__builtin_huge_valf();
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 2^x by the hardware's approximation (2^-inf = 0; results below 2^-126 flush to 0).
__device__ __forceinline__ float exp2_fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <int D>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// Copies rows [first, first + Rows) of a [tokens, heads, D] tensor (head fixed
// by `base`) into a swizzled tile with a block of Threads threads; rows at or
// past `end` become zeros.
template <class T, int D, int Rows, int Threads>
__device__ __forceinline__ void copy_rows(T *tile, const T *base, long long token_stride, int first, int end) {
  constexpr int kChunks = D / 8;
  for (int c = int(thread_x()); c < Rows * kChunks; c += Threads) {
    const int r = c / kChunks, chunk = c % kChunks, token = first + r;
    const bool valid = token < end;
    copy16(smem_addr(tile + swizzled<D>(r, chunk)), base + (long long)(valid ? token : first) * token_stride + chunk * 8,
           valid);
  }
}

// The warp's 16 rows of a [rows][D] Q tile, all of D, as A fragments (k = head dim).
template <class T, int D>
__device__ __forceinline__ void load_q_fragments(const T *q_tile, int warp, int lane, uint32_t (&qf)[D / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int r = warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2), chunk = kk * 2 + lane / 16;
    ldsm_x4(smem_addr(q_tile + swizzled<D>(r, chunk)), qf[kk]);
  }
}

// S = Q K^T over a tile of Keys keys: Keys / 8 n-tiles of 8 keys.
template <class T, int D, int Keys>
__device__ __forceinline__ void tile_scores(const uint32_t (&qf)[D / 16][4], const T *k_tile, int lane,
                                            float (&sc)[Keys / 8][4]) {
#pragma unroll
  for (int nt = 0; nt < Keys / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) sc[nt][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk += 2) {  // one ldmatrix.x4: b0, b1 of two k-steps
      uint32_t b[4];
      ldsm_x4(smem_addr(k_tile + swizzled<D>(nt * 8 + lane % 8, kk * 2 + lane / 8)), b);
      Mma<T>::run(sc[nt], qf[kk], b[0], b[1]);
      Mma<T>::run(sc[nt], qf[kk + 1], b[2], b[3]);
    }
  }
}

// The scores as log2-domain logits: times the softmax scale, soft-capped where
// cap > 0 (cap * tanh(x / cap), tanh through exp2).  The test on cap is made
// once a tile, outside the loops, and the divisions are fast ones: tested per
// score, ptxas kept a branch and a full-precision division for every score even
// with soft-cap off (SASS of prefill_mma, 2026-11-27).
template <int Keys>
__device__ __forceinline__ void log2_logits(float (&sc)[Keys / 8][4], float scale, float cap) {
  if (cap > 0.0f) {
    const float to_exp = scale * (2.0f * kLog2e) / cap, back = cap * kLog2e;
#pragma unroll
    for (int nt = 0; nt < Keys / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        sc[nt][e] = back * (1.0f - fast_div(2.0f, exp2_fast(sc[nt][e] * to_exp) + 1.0f));
    return;
  }
  const float factor = scale * kLog2e;
#pragma unroll
  for (int nt = 0; nt < Keys / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) sc[nt][e] *= factor;
}

// A thread's two rows: their output (all of D), running maximum and sum.
template <class T, int D>
struct FlashRows {
  float o[D / 8][4] = {};
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};

  // Takes a tile's logits (masked keys at -inf): the online softmax, then
  // O += P V with V [keys][D] read transposed, two d-tiles an ldmatrix.x4.
  template <int Keys>
  __device__ __forceinline__ void absorb(const float (&sc)[Keys / 8][4], const T *v_tile, int lane) {
    float top[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < Keys / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) top[e / 2] = fmaxf(top[e / 2], sc[nt][e]);
    float corr[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      top[r] = fmaxf(top[r], shfl_xor(top[r], 1));
      top[r] = fmaxf(top[r], shfl_xor(top[r], 2));
      const float m_new = fmaxf(m[r], top[r]);
      base[r] = m_new == kNegInf ? 0.0f : m_new;  // a row with no key yet: p = 0, not NaN
      corr[r] = exp2_fast(m[r] - base[r]);
      m[r] = m_new;
      l[r] *= corr[r];
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[dt][e] *= corr[e / 2];
    // P (16 bits) as A fragments: k-chunk kc covers n-tiles 2kc and 2kc + 1.
#pragma unroll
    for (int kc = 0; kc < Keys / 16; ++kc) {
      uint32_t a[4];
      float pr[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          pr[h][e] = exp2_fast(sc[2 * kc + h][e] - base[e / 2]);
          l[e / 2] += pr[h][e];
        }
      a[0] = Mma<T>::pack(pr[0][0], pr[0][1]);
      a[1] = Mma<T>::pack(pr[0][2], pr[0][3]);
      a[2] = Mma<T>::pack(pr[1][0], pr[1][1]);
      a[3] = Mma<T>::pack(pr[1][2], pr[1][3]);
#pragma unroll
      for (int dt = 0; dt < D / 8; dt += 2) {
        uint32_t b[4];
        const int key = kc * 16 + (lane % 8) + 8 * ((lane / 8) % 2), chunk = dt + lane / 16;
        ldsm_x4_t(smem_addr(v_tile + swizzled<D>(key, chunk)), b);
        Mma<T>::run(o[dt], a, b[0], b[1]);
        Mma<T>::run(o[dt + 1], a, b[2], b[3]);
      }
    }
  }

  // After the last tile: the rows' sums over the quad.
  __device__ __forceinline__ void finish() {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l[r] += shfl_xor(l[r], 1);
      l[r] += shfl_xor(l[r], 2);
    }
  }

  // Row r's output times `scale` (an fp8 cache's value scale; 1 otherwise) into
  // `dst` (its first element; 4-byte pairs of Out, which may differ from the
  // products' T), and its log-sum-exp (natural log; -inf for a row that saw no
  // key) into `lse` if given.
  template <class Out>
  __device__ __forceinline__ void store(int r, Out *dst, float *lse, int tq, float scale = 1.0f) const {
    const float inv = l[r] > 0.0f ? scale / l[r] : 0.0f;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
      *reinterpret_cast<uint32_t *>(dst + dt * 8 + tq * 2) = Mma<Out>::pack(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
    if (lse != nullptr && tq == 0) *lse = l[r] > 0.0f ? (m[r] + log2f(l[r])) * kLn2 : kNegInf;
  }
};

}  // namespace
