// MLA decode on NVIDIA tensor cores (mma.sync m16n8k16, fp16/bf16, fp32
// accumulators).  A block takes M rows (new token x query head, M = 16 or 32) of
// one sequence over one split of its context, 64 latent rows (keys) at a time:
// S = Q K^T with K = 576 on the latent tile, an online softmax, O += P V with the
// tile's first 512 columns as V.  Each latent row is loaded once for all M rows,
// with cp.async, in "units" of keys held in a ring of shared-memory slots, so
// that several units stream in while a tile is computed: 16-bit caches in units
// of 32 keys (36 KB) in 5 slots, 3 in flight; fp8 caches in raw units of 64 keys
// in 3 slots, 2 in flight, each tile widened to the 16-bit type in shared memory
// (e4m3fn by the hardware's conversion) before its products.  (A ring of two
// 64-key tiles, one in flight, reached 72-81% of the device copy's bandwidth on
// an H100; this one 82-93%: benchmarks/bench_mla.py, docs/performance_mla.md.)
//
// Warps: M / 16 row groups x 4.  Warp (rg, g) computes S for rows rg*16..+16 and
// keys g*16..+16 of the tile, and owns O for the same rows and columns
// g*128..+128.  P goes through shared memory between the two products.
//
// Block ids and context lengths live in device memory, unchecked by the host: a
// length is clamped to the block table's capacity and a key whose block id is
// out of range is masked (its row zero-filled, never read from outside).
#include "../attention/mma16.h"
#include "../common/numeric.h"
#include "mla_params.h"

namespace {

constexpr int kKeys = 64;                // latent rows a tile
constexpr int kDim = 576, kValueDim = 512;
constexpr int kRowBytes = kDim * 2;      // a 16-bit latent row
constexpr int kChunks = kRowBytes / 16;  // its 16-byte chunks
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();

// Keys a unit and ring slots: 16-bit caches 32 and 5, fp8 64 and 3.
template <bool FP8> struct Ring {
  static constexpr int kUnitKeys = FP8 ? 64 : 32;
  static constexpr int kSlots = FP8 ? 3 : 5;
  static constexpr int kUnitsPerTile = kKeys / kUnitKeys;
  static constexpr int kUnitBytes = kUnitKeys * (FP8 ? kDim : kRowBytes);
};

template <int M, bool FP8> struct alignas(128) Smem {
  unsigned char q[M * kRowBytes];
  unsigned char unit[Ring<FP8>::kSlots][Ring<FP8>::kUnitBytes];  // 16-bit rows swizzled, or raw fp8 rows
  unsigned char kv[1][FP8 ? kKeys * kRowBytes : 16];              // fp8: the tile widened to 16 bits
  unsigned char p[M * kKeys * 2];
  float red[4][M];     // per-warp row maxima, then row sums
  int hi[M];           // positions a row sees: [0, hi)
  int valid[Ring<FP8>::kSlots][Ring<FP8>::kUnitKeys];  // key has a block in range and lies in the split
};

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return uint32_t(__cvta_generic_to_shared(p)); }
// Chunk `chunk` of row `row`: the XOR spreads the 8 rows an ldmatrix reads over all banks.
__device__ __forceinline__ uint32_t swz(int row, int chunk, int row_bytes) {
  return uint32_t(row * row_bytes + ((chunk ^ (row & 7)) << 4));
}
__device__ __forceinline__ void copy16(uint32_t dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
__device__ __forceinline__ void ldsm_x4(uint32_t a, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t a, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// Four e4m3 bytes as 16-bit pairs, exactly: each byte's exponent and mantissa
// placed in an fp32 pattern (subnormals included), times 2^120 (e4m3fn) or
// 2^119 (e4m3fnuz) = `unbias`.  NaN codes are not singled out.
template <class T>
__device__ __forceinline__ void widen4_bits(uint32_t w, float unbias, uint32_t &lo, uint32_t &hi) {
  float f[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t b = (w >> (8 * i)) & 0xffu;
    f[i] = __uint_as_float(((b & 0x80u) << 24) | ((b & 0x7fu) << 20)) * unbias;
  }
  lo = Mma<T>::pack(f[0], f[1]);
  hi = Mma<T>::pack(f[2], f[3]);
}

__device__ __forceinline__ float half_bits_to_f32(uint32_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(uint16_t(h)));
  return f;
}

// Four e4m3fn bytes through the hardware's conversion (sm_89 and up; exact: fp16
// holds every e4m3fn value), then to bf16 pairs where T is bf16 (exact too).
template <class T>
__device__ __forceinline__ void widen4_e4m3fn(uint32_t w, uint32_t &lo, uint32_t &hi) {
#if __CUDA_ARCH__ >= 890
  uint32_t h0, h1;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h0) : "h"(uint16_t(w & 0xffffu)));
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h1) : "h"(uint16_t(w >> 16)));
  if constexpr (Mma<T>::kHalf) {
    lo = h0, hi = h1;
  } else {
    lo = Mma<T>::pack(half_bits_to_f32(h0 & 0xffffu), half_bits_to_f32(h0 >> 16));
    hi = Mma<T>::pack(half_bits_to_f32(h1 & 0xffffu), half_bits_to_f32(h1 >> 16));
  }
#else
  widen4_bits<T>(w, 0x1p120f, lo, hi);
#endif
}

template <class T, bool Hw>
__device__ __forceinline__ void widen4(uint32_t w, float unbias, uint32_t &lo, uint32_t &hi) {
  if constexpr (Hw)
    widen4_e4m3fn<T>(w, lo, hi);
  else
    widen4_bits<T>(w, unbias, lo, hi);
}

template <int M>
struct Layout {
  static constexpr int kThreads = M * 8;  // M/16 row groups x 4 warps
};

// Starts the copies of unit positions [start, start + KU) into ring slot `slot`.
template <class T, bool FP8, int M>
__device__ __forceinline__ void issue_unit(const MlaDecodeParams &p, Smem<M, FP8> &s, const int *table_row,
                                           int start, int end, int slot_index) {
  constexpr int kPerRow = Layout<M>::kThreads / Ring<FP8>::kUnitKeys;  // loader threads a latent row
  constexpr int kBytes = FP8 ? kDim : kRowBytes, kRowChunks = kBytes / 16;
  const int t = int(thread_x()), row = t / kPerRow, part = t % kPerRow, pos = start + row;
  bool ok = pos < end;
  long long slot = 0;
  if (ok) {
    const int block = table_row[pos / p.page_size];  // read once: checked and used as read
    ok = block >= 0 && block < p.num_blocks;
    slot = ok ? (long long)block * p.page_size + pos % p.page_size : 0;
  }
  if (part == 0) s.valid[slot_index][row] = ok;
  const char *src = static_cast<const char *>(p.kv_cache) + slot * kBytes;
  const uint32_t dst = smem_u32(s.unit[slot_index]);
  if (FP8) {
    for (int c = part; c < kRowChunks; c += kPerRow) copy16(dst + row * kBytes + c * 16, src + c * 16, ok);
  } else {
    for (int c = part; c < kRowChunks; c += kPerRow) copy16(dst + swz(row, c, kRowBytes), src + c * 16, ok);
  }
}

// Issues unit u of the split's `units` (a unit past the context's end still
// clears its slot's flags; past the last tile none is read: an empty group), so
// that every thread commits the same number of groups.
template <class T, bool FP8, int M>
__device__ __forceinline__ void issue_and_commit(const MlaDecodeParams &p, Smem<M, FP8> &s, const int *table_row,
                                                 int first, int end, int u, int units) {
  constexpr int KU = Ring<FP8>::kUnitKeys;
  if (u < units) issue_unit<T, FP8, M>(p, s, table_row, first + u * KU, end, u % Ring<FP8>::kSlots);
  commit();
}

template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// The raw fp8 tile in ring slot `slot_index` as 16-bit rows in kv[0]; Hw: e4m3fn through the
// hardware conversion, else the bit construction (e4m3fnuz, whose 0x7f is 240
// where e4m3fn's is NaN).
template <class T, bool FP8, int M, bool Hw>
__device__ __forceinline__ void widen_tile(Smem<M, FP8> &s, int slot_index, float unbias) {
  constexpr int kRaw = kKeys * kDim / 16;  // 16-byte raw chunks a tile
  const uint32_t dst = smem_u32(s.kv[0]);
  for (int c = int(thread_x()); c < kRaw; c += Layout<M>::kThreads) {
    const int row = c / (kDim / 16), rc = c % (kDim / 16);
    const uint4 w = *reinterpret_cast<const uint4 *>(s.unit[slot_index] + c * 16);
    uint4 a, b;
    widen4<T, Hw>(w.x, unbias, a.x, a.y);
    widen4<T, Hw>(w.y, unbias, a.z, a.w);
    widen4<T, Hw>(w.z, unbias, b.x, b.y);
    widen4<T, Hw>(w.w, unbias, b.z, b.w);
    asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(dst + swz(row, 2 * rc, kRowBytes)), "r"(a.x), "r"(a.y),
                 "r"(a.z), "r"(a.w));
    asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(dst + swz(row, 2 * rc + 1, kRowBytes)), "r"(b.x),
                 "r"(b.y), "r"(b.z), "r"(b.w));
  }
}

// The softmax state of the two rows (lane / 4 and lane / 4 + 8) a thread holds.
struct RowPair {
  float m[2] = {kNegInf, kNegInf};  // running maxima of the log2-scaled logits
  float l[2] = {0.0f, 0.0f};        // this thread's share of the running sums
};

template <class T, bool FP8, int M>
__device__ __forceinline__ void decode_block(const MlaDecodeParams &p) {
  extern __shared__ __attribute__((aligned(128))) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<Smem<M, FP8> *>(smem_raw);
  constexpr int kThreads = Layout<M>::kThreads;
  const int t = int(thread_x()), lane = t & 31, warp = t >> 5, rg = warp >> 2, g = warp & 3;
  const int b = int(block_x()) / p.splits, split = int(block_x()) % p.splits, tile_row0 = int(block_y()) * M;
  const int capacity = p.max_blocks * p.page_size;  // fits: the launcher checked
  const int len_raw = p.context_lens[b];            // read once
  const int len = len_raw < 0 ? 0 : len_raw > capacity ? capacity : len_raw;
  const int first = split * p.split_keys;
  const int end = first + p.split_keys < len ? first + p.split_keys : len;
  const int tiles = end > first ? (end - first + kKeys - 1) / kKeys : 0;
  const int *table_row = p.block_table + (long long)b * p.table_stride;

  for (int r = t; r < M; r += kThreads) {  // row r: new token i sees positions [0, len - q_tokens + i]
    const int n = tile_row0 + r, i = n / p.q_heads, hi = len - p.q_tokens + i + 1;
    s.hi[r] = n < p.rows && hi > 0 ? hi : 0;
  }
  {
    const char *q = static_cast<const char *>(p.q) + ((long long)b * p.rows + tile_row0) * kRowBytes;
    const uint32_t dst = smem_u32(s.q);
    for (int c = t; c < M * kChunks; c += kThreads) {
      const int row = c / kChunks, ch = c % kChunks;
      const bool ok = tile_row0 + row < p.rows;
      copy16(dst + swz(row, ch, kRowBytes), ok ? q + (long long)row * kRowBytes + ch * 16 : p.q, ok);
    }
  }
  // Prologue: the first kSlots - kUnitsPerTile units (q joins the first group).
  constexpr int kUnits = Ring<FP8>::kUnitsPerTile, kSlots = Ring<FP8>::kSlots, KU = Ring<FP8>::kUnitKeys;
  for (int u = 0; u < kSlots - kUnits; ++u) issue_and_commit<T, FP8, M>(p, s, table_row, first, end, u, tiles * kUnits);

  const float unbias = p.quant == kQuantE4m3fnuz ? 0x1p119f : 0x1p120f;
  const int r0 = rg * 16 + (lane >> 2), r1 = r0 + 8;
  RowPair st;
  float o[16][4] = {};
  for (int tile = 0; tile < tiles; ++tile) {
    const int start = first + tile * kKeys, u0 = tile * kUnits;
    // The slots of units u0 - kUnits.. (the last tile's) are free: refill them.
    for (int j = 0; j < kUnits; ++j)
      issue_and_commit<T, FP8, M>(p, s, table_row, first, end, u0 + kSlots - kUnits + j, tiles * kUnits);
    wait_pending<kSlots - kUnits>();  // this tile's units have landed
    sync_block();
    if (FP8) {
      if (p.quant == kQuantE4m3fn)
        widen_tile<T, FP8, M, true>(s, u0 % kSlots, unbias);
      else
        widen_tile<T, FP8, M, false>(s, u0 % kSlots, unbias);
      sync_block();
    }
    // Key k of the tile: row k % KU of unit u0 + k / KU (fp8: row k of the widened tile).
    auto key_base = [&](int k) -> uint32_t {
      return FP8 ? smem_u32(s.kv[0]) : smem_u32(s.unit[(u0 + k / KU) % kSlots]);
    };
    auto key_row = [&](int k) { return FP8 ? k : k % KU; };
    auto key_valid = [&](int k) { return s.valid[(u0 + k / KU) % kSlots][k % KU] != 0; };

    // S = Q K^T: rows rg*16.., keys g*16.. (two n8 tiles), the even and odd K steps
    // in separate accumulators (four independent chains of products, not two).
    float sacc[2][4] = {};
    {
      float odd[2][4] = {};
      const uint32_t qa = smem_u32(s.q);
      const int a_row = rg * 16 + (lane & 15), b_key = g * 16 + (lane & 7) + ((lane >> 4) << 3);
      const uint32_t kb = key_base(g * 16);  // a warp's 16 keys lie in one unit
      const int b_row = key_row(b_key);
#pragma unroll 3
      for (int k = 0; k < kChunks / 2; k += 2) {
        uint32_t a[4], bb[4], a2[4], bb2[4];
        ldsm_x4(qa + swz(a_row, 2 * k + (lane >> 4), kRowBytes), a);
        ldsm_x4(kb + swz(b_row, 2 * k + ((lane >> 3) & 1), kRowBytes), bb);
        ldsm_x4(qa + swz(a_row, 2 * k + 2 + (lane >> 4), kRowBytes), a2);
        ldsm_x4(kb + swz(b_row, 2 * k + 2 + ((lane >> 3) & 1), kRowBytes), bb2);
        Mma<T>::run(sacc[0], a, bb[0], bb[1]);
        Mma<T>::run(sacc[1], a, bb[2], bb[3]);
        Mma<T>::run(odd[0], a2, bb2[0], bb2[1]);
        Mma<T>::run(odd[1], a2, bb2[2], bb2[3]);
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) sacc[nt][e] += odd[nt][e];
    }
    // Mask, scale (log2 domain), this warp's row maxima.
    const int hi[2] = {s.hi[r0], s.hi[r1]};
    float top[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = g * 16 + nt * 8 + (lane & 3) * 2 + (e & 1), h = e >> 1;
        const bool seen = key_valid(key) && start + key < hi[h];
        sacc[nt][e] = seen ? sacc[nt][e] * p.logit_scale : kNegInf;
        top[h] = fmaxf(top[h], sacc[nt][e]);
      }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      top[h] = fmaxf(top[h], __shfl_xor_sync(0xffffffffu, top[h], 1));
      top[h] = fmaxf(top[h], __shfl_xor_sync(0xffffffffu, top[h], 2));
    }
    if ((lane & 3) == 0) s.red[g][r0] = top[0], s.red[g][r1] = top[1];
    sync_block();
    float alpha[2], base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = h ? r1 : r0;
      const float m = fmaxf(fmaxf(st.m[h], fmaxf(s.red[0][r], s.red[1][r])), fmaxf(s.red[2][r], s.red[3][r]));
      base[h] = m == kNegInf ? 0.0f : m;  // no key seen yet: every p is 0
      alpha[h] = exp2f(st.m[h] - base[h]);
      st.m[h] = m;
    }
    const uint32_t pw = smem_u32(s.p);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      float pr[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) pr[e] = exp2f(sacc[nt][e] - base[e >> 1]);
      st.l[0] = st.l[0] * (nt == 0 ? alpha[0] : 1.0f) + pr[0] + pr[1];
      st.l[1] = st.l[1] * (nt == 0 ? alpha[1] : 1.0f) + pr[2] + pr[3];
      const int chunk = g * 2 + nt, byte = (lane & 3) * 4;
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(pw + swz(r0, chunk, kKeys * 2) + byte),
                   "r"(Mma<T>::pack(pr[0], pr[1])));
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(pw + swz(r1, chunk, kKeys * 2) + byte),
                   "r"(Mma<T>::pack(pr[2], pr[3])));
    }
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      o[nt][0] *= alpha[0], o[nt][1] *= alpha[0];
      o[nt][2] *= alpha[1], o[nt][3] *= alpha[1];
    }
    sync_block();

    // O += P V: rows rg*16.., columns g*128.. (16 n8 tiles), 64 keys.
    {
      const int a_row = rg * 16 + (lane & 15);
#pragma unroll
      for (int ks = 0; ks < kKeys / 16; ++ks) {
        uint32_t a[4];
        ldsm_x4(pw + swz(a_row, 2 * ks + (lane >> 4), kKeys * 2), a);
        const int key = ks * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        const uint32_t kb = key_base(ks * 16);  // a k-step's 16 keys lie in one unit
        const int v_row = key_row(key);
#pragma unroll
        for (int np = 0; np < 8; ++np) {
          uint32_t bb[4];
          ldsm_x4_t(kb + swz(v_row, g * 16 + np * 2 + (lane >> 4), kRowBytes), bb);
          Mma<T>::run(o[2 * np], a, bb[0], bb[1]);
          Mma<T>::run(o[2 * np + 1], a, bb[2], bb[3]);
        }
      }
    }
    sync_block();
  }
  asm volatile("cp.async.wait_all;" ::: "memory");  // prefetched units past the split's end (and q) in flight

  // Row sums: the quad's shares, then the four warps' (over their keys).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    st.l[h] += __shfl_xor_sync(0xffffffffu, st.l[h], 1);
    st.l[h] += __shfl_xor_sync(0xffffffffu, st.l[h], 2);
  }
  if ((lane & 3) == 0) s.red[g][r0] = st.l[0], s.red[g][r1] = st.l[1];
  sync_block();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = h ? r1 : r0, n = tile_row0 + r;
    if (n >= p.rows) continue;
    const float total = s.red[0][r] + s.red[1][r] + s.red[2][r] + s.red[3][r];
    const float inv = total > 0.0f ? p.value_scale / total : 0.0f;
    const float lse = total > 0.0f ? (st.m[h] + __log2f(total)) * kLn2 : kNegInf;
    const long long row = (long long)b * p.rows + n;
    const int col0 = g * 128 + (lane & 3) * 2;
    if (p.splits == 1) {
      T *dst = static_cast<T *>(p.out) + row * kValueDim + col0;
#pragma unroll
      for (int nt = 0; nt < 16; ++nt)
        *reinterpret_cast<uint32_t *>(dst + nt * 8) = Mma<T>::pack(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
      if (p.lse != nullptr && g == 0 && (lane & 3) == 0) p.lse[row] = lse;
    } else {
      const long long slot = row * p.splits + split;
      float *dst = p.partial_out + slot * kValueDim + col0;
#pragma unroll
      for (int nt = 0; nt < 16; ++nt)
        *reinterpret_cast<float2 *>(dst + nt * 8) = make_float2(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
      if (g == 0 && (lane & 3) == 0) p.partial_lse[slot] = lse;
    }
  }
}

}  // namespace

#define AITER_MLA_MMA_KERNEL(name, T, FP8, M) \
  AITER_KERNEL void __launch_bounds__(M * 8, 1) name(MlaDecodeParams p) { \
    enter_stream_order();                                                   \
    decode_block<T, FP8, M>(p);                                             \
  }

// aiter-kernel: op=mla_decode variant=mma.f16.same.m16 symbol=aiter_mla_mma_f16_same_m16 block=128 smem=205824
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_same_m16, half_t, false, 16)
// aiter-kernel: op=mla_decode variant=mma.f16.same.m32 symbol=aiter_mla_mma_f16_same_m32 block=256 smem=226688
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_same_m32, half_t, false, 32)
// aiter-kernel: op=mla_decode variant=mma.f16.fp8.m16 symbol=aiter_mla_mma_f16_fp8_m16 block=128 smem=205952
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_fp8_m16, half_t, true, 16)
// aiter-kernel: op=mla_decode variant=mma.f16.fp8.m32 symbol=aiter_mla_mma_f16_fp8_m32 block=256 smem=226688
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_fp8_m32, half_t, true, 32)
// aiter-kernel: op=mla_decode variant=mma.bf16.same.m16 symbol=aiter_mla_mma_bf16_same_m16 block=128 smem=205824
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_same_m16, bf16_t, false, 16)
// aiter-kernel: op=mla_decode variant=mma.bf16.same.m32 symbol=aiter_mla_mma_bf16_same_m32 block=256 smem=226688
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_same_m32, bf16_t, false, 32)
// aiter-kernel: op=mla_decode variant=mma.bf16.fp8.m16 symbol=aiter_mla_mma_bf16_fp8_m16 block=128 smem=205952
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_fp8_m16, bf16_t, true, 16)
// aiter-kernel: op=mla_decode variant=mma.bf16.fp8.m32 symbol=aiter_mla_mma_bf16_fp8_m32 block=256 smem=226688
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_fp8_m32, bf16_t, true, 32)

// The manifest's smem figures above are these structs' sizes.
static_assert(sizeof(Smem<16, false>) == 205824, "update smem of m16");
static_assert(sizeof(Smem<32, false>) == 226688, "update smem of m32");
static_assert(sizeof(Smem<16, true>) == 205952, "update smem of fp8 m16");
static_assert(sizeof(Smem<32, true>) == 226688, "update smem of fp8 m32");
