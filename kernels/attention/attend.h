// The attention core shared by the decode and prefill kernels, written without
// tensor-core instructions so that every target (NVIDIA and AMD) builds it.
//
// A block of kThreads threads owns R rows (query token, query head) of one kv
// head and streams a key range through shared memory kKeys keys at a time,
// converted once to fp32 (fp8 dequantized with its scale):
//   1. scores: a warp-sized group of lanes per row, a lane per key;
//   2. online softmax per row (running max and sum, flash-attention order);
//   3. the tile's probabilities times its values, into per-thread accumulators.
// The raw bytes of the next tile are loaded into registers while the current
// one is computed, so the memory system stays busy.
#pragma once

#include "../common/numeric.h"
#include "attention_params.h"

namespace attn {

constexpr int kThreads = 128;
constexpr int kKeys = 32;  // keys a tile: one lane each in the score loop
constexpr float kNegInf = -__builtin_huge_valf();

// A block's shared memory: R rows, head dims DK (q, k) and DV (v, out).
template <int DK, int DV, int R>
struct Smem {
  float q[R][DK];          // query rows, times the softmax scale
  float k[kKeys][DK + 4];  // +4: consecutive keys start in different banks (the score loop reads across keys)
  float v[kKeys][DV];
  float p[R][kKeys + 1];   // the tile's probabilities; +1 for the same reason
  float corr[R];           // rescale of each row's accumulator by this tile's new max
  float m[R], l[R];        // each row's final max and sum
  int lo[R], hi[R];        // each row's visible keys [lo, hi); lo >= hi for an unused row
  int key_ok[kKeys];       // the tile's key is in the range and its index was valid
  int scalar;              // a value one thread reads from device memory, for all
};

__device__ __forceinline__ float attn_log(float x) {
#if defined(AITER_AMD)
  return __builtin_logf(x);
#else
  return logf(x);
#endif
}

// tanh through exp, which every target has: saturates to +-1 for large |x|.
__device__ __forceinline__ float soft_cap(float x, float cap) {
  const float e = fast_exp(2.0f * x / cap);
  return cap * (1.0f - 2.0f / (e + 1.0f));
}

__device__ __forceinline__ float warp32_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, shfl_xor(v, m));
  return v;
}
__device__ __forceinline__ float warp32_sum(float v) {
  for (int m = 16; m > 0; m >>= 1) v += shfl_xor(v, m);
  return v;
}

// ---- fp8 and 16-byte chunks -------------------------------------------------------

// An fp8 byte as fp32, exactly: the byte's exponent and mantissa placed in an
// fp32 pattern, then scaled by 2^(127 - bias) (fp32 subnormals carry the fp8 ones).
__device__ __forceinline__ float fp8_to_f32(uint32_t b, int kind) {
  const uint32_t sign = (b & 0x80u) << 24, em = b & 0x7fu;
  if (kind == kQuantE5m2) {
    if (em >= 0x7cu) return bits_f32(sign | (em == 0x7cu ? 0x7f800000u : 0x7fc00000u));
    return bits_f32(sign | (em << 21)) * 0x1p112f;
  }
  if (kind == kQuantE4m3fnuz) return b == 0x80u ? bits_f32(0x7fc00000u) : bits_f32(sign | (em << 20)) * 0x1p119f;
  return em == 0x7fu ? bits_f32(sign | 0x7fc00000u) : bits_f32(sign | (em << 20)) * 0x1p120f;
}

// The elements of a 16-byte chunk of C (float, half_t, bf16_t, or uint8_t = fp8).
template <class C> struct Chunk { static constexpr int kElems = 16 / int(sizeof(C)); };

template <class C>
__device__ __forceinline__ void chunk_to_f32(const uint4 &raw, float (&out)[Chunk<C>::kElems], int kind) {
  const Vec<C, Chunk<C>::kElems> v = __builtin_bit_cast(Vec<C, Chunk<C>::kElems>, raw);
#pragma unroll
  for (int i = 0; i < Chunk<C>::kElems; ++i) out[i] = to_f32(v.v[i]);
}
template <>
__device__ __forceinline__ void chunk_to_f32<uint8_t>(const uint4 &raw, float (&out)[16], int kind) {
  const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 16; ++i) out[i] = fp8_to_f32((words[i / 4] >> (8 * (i % 4))) & 0xffu, kind);
}

// 16 bytes of a row: one load where rows are 16-byte aligned, else element by element.
template <class C>
__device__ __forceinline__ uint4 load_chunk(const C *p, bool vec) {
  if (vec) return *reinterpret_cast<const uint4 *>(p);
  Vec<C, Chunk<C>::kElems> v;
#pragma unroll
  for (int i = 0; i < Chunk<C>::kElems; ++i) v.v[i] = p[i];
  return __builtin_bit_cast(uint4, v);
}

// ---- one tile of keys and values ---------------------------------------------------

// The raw chunks of a tile a thread loads: D-element rows of C, kKeys rows.
template <class C, int D>
struct RowChunks {
  static constexpr int kPerRow = D / Chunk<C>::kElems;
  static constexpr int kCount = kKeys * kPerRow / kThreads;
  static_assert(kKeys * kPerRow % kThreads == 0, "whole chunks a thread");
  uint4 raw[kCount];
  unsigned ok = 0;  // bit i: chunk i's row was in range with a valid index
};

// Loads the chunks of keys [first, first + kKeys) below `end`; src.row(pos, &k, &v)
// gives the element offsets of key pos's rows, false for an invalid index.
template <class C, int DK, int DV, class Source>
__device__ __forceinline__ void load_tile(RowChunks<C, DK> &kc, RowChunks<C, DV> &vc, const C *k, const C *v,
                                          int first, int end, const Source &src, bool vec) {
  constexpr int E = Chunk<C>::kElems;
  const uint4 zero = {0u, 0u, 0u, 0u};
  kc.ok = 0;
#pragma unroll
  for (int i = 0; i < RowChunks<C, DK>::kCount; ++i) {
    const int c = int(thread_x()) + i * kThreads, j = c / RowChunks<C, DK>::kPerRow;
    const int part = c % RowChunks<C, DK>::kPerRow;
    long long ko = 0, vo = 0;
    const bool ok = first + j < end && src.row(first + j, &ko, &vo);
    kc.raw[i] = ok ? load_chunk(k + ko + part * E, vec) : zero;
    if (DK == DV) vc.raw[i] = ok ? load_chunk(v + vo + part * E, vec) : zero;
    kc.ok |= unsigned(ok) << i;
  }
  if (DK != DV) {
#pragma unroll
    for (int i = 0; i < RowChunks<C, DV>::kCount; ++i) {
      const int c = int(thread_x()) + i * kThreads, j = c / RowChunks<C, DV>::kPerRow;
      const int part = c % RowChunks<C, DV>::kPerRow;
      long long ko = 0, vo = 0;
      const bool ok = first + j < end && src.row(first + j, &ko, &vo);
      vc.raw[i] = ok ? load_chunk(v + vo + part * E, vec) : zero;
    }
  }
}

// The loaded chunks, as fp32 times `scale`, into the tile's rows in shared memory.
template <class C, int D, int Stride>
__device__ __forceinline__ void chunks_to_smem(const RowChunks<C, D> &rc, float *rows, float scale, int kind) {
  constexpr int E = Chunk<C>::kElems;
#pragma unroll
  for (int i = 0; i < RowChunks<C, D>::kCount; ++i) {
    const int c = int(thread_x()) + i * kThreads, j = c / RowChunks<C, D>::kPerRow;
    const int part = c % RowChunks<C, D>::kPerRow;
    float f[E];
    chunk_to_f32<C>(rc.raw[i], f, kind);
    float *dst = rows + j * Stride + part * E;
#pragma unroll
    for (int e = 0; e < E; e += 4) {
      Vec<float, 4> w = {{f[e] * scale, f[e + 1] * scale, f[e + 2] * scale, f[e + 3] * scale}};
      *reinterpret_cast<Vec<float, 4> *>(dst + e) = w;
    }
  }
}

// ---- the three steps of a tile -------------------------------------------------------

// Per-row online-softmax state of the score loop: rows warp + 4 * i.
template <int R>
struct RowState {
  float m[R / 4], l[R / 4];
};

// Scores of the tile's keys for every row, then the rows' online softmax: the
// probabilities and each row's rescale factor go to shared memory.
template <int DK, int DV, int R>
__device__ __forceinline__ void score_tile(Smem<DK, DV, R> &s, RowState<R> &st, int first, float softcap) {
  const int lane = int(thread_x()) % 32, warp = int(thread_x()) / 32;
  const int pos = first + lane;
  const bool key_ok = s.key_ok[lane] != 0;
  const Vec<float, 4> *krow = reinterpret_cast<const Vec<float, 4> *>(s.k[lane]);
#pragma unroll
  for (int i = 0; i < R / 4; ++i) {
    const int g = warp + 4 * i;
    const Vec<float, 4> *qrow = reinterpret_cast<const Vec<float, 4> *>(s.q[g]);
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 8
    for (int d = 0; d < DK / 4; ++d) {
      const Vec<float, 4> a = qrow[d], b = krow[d];
#pragma unroll
      for (int e = 0; e < 4; ++e) part[e] += a.v[e] * b.v[e];
    }
    float x = (part[0] + part[1]) + (part[2] + part[3]);
    if (softcap > 0.0f) x = soft_cap(x, softcap);
    const bool visible = key_ok && s.lo[g] <= pos && pos < s.hi[g];
    x = visible ? x : kNegInf;
    const float m_new = fmaxf(st.m[i], warp32_max(x));
    const float base = m_new == kNegInf ? 0.0f : m_new;  // no key yet: keep exp() away from -inf - -inf
    const float p = visible ? fast_exp(x - base) : 0.0f;
    const float corr = fast_exp(st.m[i] - base);
    st.l[i] = st.l[i] * corr + warp32_sum(p);
    st.m[i] = m_new;
    s.p[g][lane] = p;
    if (lane == 0) s.corr[g] = corr;
  }
}

// The PV step's thread layout: W consecutive columns of DV and R / kRowsPerPass rows.
template <int DV, int R>
struct PvLayout {
  static constexpr int kW = R * DV / kThreads >= 4 ? 4 : 2;
  static constexpr int kColGroups = DV / kW;
  static constexpr int kRowsPerPass = kThreads / kColGroups;
  static constexpr int kPasses = R / kRowsPerPass;
  static_assert(kRowsPerPass >= 1 && R % kRowsPerPass == 0, "rows tile the block");
  __device__ static int col() { return int(thread_x()) % kColGroups * kW; }
  __device__ static int row(int pass) { return int(thread_x()) / kColGroups + pass * kRowsPerPass; }
};

template <int DK, int DV, int R>
__device__ __forceinline__ void pv_tile(const Smem<DK, DV, R> &s, float (&acc)[PvLayout<DV, R>::kPasses][4]) {
  using L = PvLayout<DV, R>;
  const int col = L::col();
#pragma unroll
  for (int pass = 0; pass < L::kPasses; ++pass) {
    const int g = L::row(pass);
    const float c = s.corr[g];
#pragma unroll
    for (int w = 0; w < L::kW; ++w) acc[pass][w] *= c;
#pragma unroll 8
    for (int j = 0; j < kKeys; ++j) {
      const float pj = s.p[g][j];
      if (L::kW == 4) {
        const Vec<float, 4> v = *reinterpret_cast<const Vec<float, 4> *>(&s.v[j][col]);
#pragma unroll
        for (int w = 0; w < 4; ++w) acc[pass][w] += pj * v.v[w];
      } else {
        const Vec<float, 2> v = *reinterpret_cast<const Vec<float, 2> *>(&s.v[j][col]);
        acc[pass][0] += pj * v.v[0];
        acc[pass][1] += pj * v.v[1];
      }
    }
  }
}

// ---- a block's whole key range ------------------------------------------------------

// The union of the rows' visible ranges, cut to [from, to).
template <int DK, int DV, int R>
__device__ __forceinline__ void key_range(const Smem<DK, DV, R> &s, long long from, long long to, int *first,
                                          int *end) {
  long long lo = to, hi = from;
  for (int r = 0; r < R; ++r)
    if (s.lo[r] < s.hi[r]) lo = lo < s.lo[r] ? lo : s.lo[r], hi = hi > s.hi[r] ? hi : s.hi[r];
  lo = lo > from ? lo : from;
  hi = hi < to ? hi : to;
  hi = hi > lo ? hi : lo;
  *first = int(hi == lo ? 0 : lo);  // an empty range is [0, 0): `to` may lie past int's range
  *end = int(hi == lo ? 0 : hi);
}

// Rows (s.q, s.lo, s.hi set and synchronized) against keys [first, end) of
// caches or tensors k, v; then emit(row, col, o[W], lse) for every row and the
// thread's W columns: o the softmax-weighted values (zeros for a row that saw
// no key), lse the row's log-sum-exp (-inf then).
template <class C, int DK, int DV, int R, class Source, class Emit>
__device__ __forceinline__ void attend(Smem<DK, DV, R> &s, const C *k, const C *v, int first, int end,
                                       const Source &src, const SoftmaxParams &sm, bool vec, Emit &&emit) {
  using L = PvLayout<DV, R>;
  RowState<R> st;
#pragma unroll
  for (int i = 0; i < R / 4; ++i) st.m[i] = kNegInf, st.l[i] = 0.0f;
  float acc[L::kPasses][4] = {};
  RowChunks<C, DK> kc;
  RowChunks<C, DV> vc;
  if (first < end) load_tile(kc, vc, k, v, first, end, src, vec);
  for (int tile = first; tile < end; tile += end - tile > kKeys ? kKeys : end - tile) {  // no int overflow near 2^31
    sync_block();  // the previous tile is consumed
    chunks_to_smem<C, DK, DK + 4>(kc, &s.k[0][0], sm.k_scale, sm.quant);
    chunks_to_smem<C, DV, DV>(vc, &s.v[0][0], sm.v_scale, sm.quant);
#pragma unroll
    for (int i = 0; i < RowChunks<C, DK>::kCount; ++i) {
      const int c = int(thread_x()) + i * kThreads;
      if (c % RowChunks<C, DK>::kPerRow == 0) s.key_ok[c / RowChunks<C, DK>::kPerRow] = (kc.ok >> i) & 1u;
    }
    sync_block();
    if (end - tile > kKeys) load_tile(kc, vc, k, v, tile + kKeys, end, src, vec);  // in flight during the math
    score_tile(s, st, tile, sm.softcap);
    sync_block();
    pv_tile(s, acc);
  }
  const int lane = int(thread_x()) % 32, warp = int(thread_x()) / 32;
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < R / 4; ++i) s.m[warp + 4 * i] = st.m[i], s.l[warp + 4 * i] = st.l[i];
  }
  sync_block();
  const int col = L::col();
#pragma unroll
  for (int pass = 0; pass < L::kPasses; ++pass) {
    const int g = L::row(pass);
    const float l = s.l[g];
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    float o[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) o[w] = acc[pass][w] * inv;
    emit(g, col, o, l > 0.0f ? s.m[g] + attn_log(l) : kNegInf);
  }
}

// Query row r of the block from q (element `d` at q_row[d]), times the softmax
// scale, into shared memory; zeros for an unused row (q_row null).
template <class T, int DK, int DV, int R>
__device__ __forceinline__ void load_query_elem(Smem<DK, DV, R> &s, int r, int d, const T *q_row, float scale) {
  s.q[r][d] = q_row != nullptr ? to_f32(q_row[d]) * scale : 0.0f;
}

// Writes W columns of an output row in T.
template <class T, int W>
__device__ __forceinline__ void store_cols(T *dst, const float (&o)[4]) {
#pragma unroll
  for (int w = 0; w < W; ++w) dst[w] = from_f32<T>(o[w]);
}

}  // namespace attn
