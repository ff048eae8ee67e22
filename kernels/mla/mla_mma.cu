// MLA decode on NVIDIA tensor cores (mma.sync m16n8k16, fp32 accumulators).  A
// block takes M rows (new token x query head, M = 16 or 32) of one sequence over
// one split of its context, 64 latent rows (keys) at a time: S = Q K^T with
// K = 576 on the latent tile, an online softmax, O += P V with the tile's first
// 512 columns as V.  Each latent row is loaded once for all M rows, with
// cp.async, in "units" of keys held in a ring of shared-memory slots, so that
// several units stream in while a tile is computed: 16-bit caches in units of
// 32 keys (36 KB) in 5 slots, 3 in flight; fp8 caches in units of 64 keys
// (37 KB, rows padded) in 5 slots, 4 in flight, or, for 16-row tiles (two
// blocks an SM), of 32 keys in 4 slots, 2 in flight.  (A ring of two 64-key tiles,
// one in flight, reached 72-81% of the device copy's bandwidth on an H100; this
// one 82-93%: benchmarks/bench_mla.py, docs/performance_mla.md.)
//
// fp8 caches: the products run in fp16.  The raw codes stay in shared memory
// and are widened in registers right after ldmatrix (mla_fp8_frag.h), e4m3fn
// by the hardware's exact conversion; the query is rounded to fp16 once per
// block, after scaling by a power of two that puts its largest element near
// 2^14 (so no bf16 query overflows fp16; the factor comes back in the logit
// scale).  fp16 holds every fp8 value, so only the query's rounding (bf16 ->
// fp16: exact for elements down to 2^-27 of the largest) and P in fp16 (finer
// than bf16) differ from the 16-bit kernels.  An fp8 ldmatrix hands a thread
// the 4 adjacent codes of dims 4c..4c+3 of a k-step, where the mma expects
// k = 2c, 2c+1 and 2c+8, 2c+9: the query's pairs are stored in that order
// (load_q_fp16), so both sides agree.  In P V, the transposed load gives each
// thread two adjacent columns, so an n8 tile holds every other column
// (out_pair).  Not yet run on a GPU: see docs/performance_mla.md.
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
#include "mla_fp8_frag.h"
#include "mla_params.h"

namespace {

constexpr int kKeys = 64;                // latent rows a tile
constexpr int kDim = 576, kValueDim = 512;
constexpr int kRowBytes = kDim * 2;      // a 16-bit latent row
constexpr int kChunks = kRowBytes / 16;  // its 16-byte chunks
constexpr int kSteps = kDim / 16;        // k-steps of S over a row
// An fp8 row in shared memory: padded so that 8 consecutive rows' 16-byte chunks
// at one offset fall in 8 different bank groups (ldmatrix reads them together).
constexpr int kFp8Stride = kDim + 16;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();

// Keys a unit and ring slots: 16-bit caches 32 and 5; fp8 64 and 5, but 32 and
// 4 for 16-row tiles, whose blocks run two an SM (kMlaMmaFp8M16PerSm): each
// block's chain of products and barriers is latency-bound (one warp a
// scheduler), so a second block's chain fills the gaps; the ring shrinks to fit
// both in the SM's shared memory.
template <bool FP8, int M> struct Ring {
  static constexpr bool kTwoPerSm = FP8 && M == 16 && kMlaMmaFp8M16PerSm == 2;
  static constexpr int kUnitKeys = FP8 && !kTwoPerSm ? 64 : 32;
  static constexpr int kSlots = kTwoPerSm ? 4 : 5;
  static constexpr int kUnitsPerTile = kKeys / kUnitKeys;
  static constexpr int kUnitBytes = kUnitKeys * (FP8 ? kFp8Stride : kRowBytes);
};

// The products' type: the query's, or fp16 over an fp8 cache.
template <class T, bool FP8> struct Product { using type = T; };
template <class T> struct Product<T, true> { using type = half_t; };

template <int M, bool FP8> struct alignas(128) Smem {
  unsigned char q[M * kRowBytes];  // swizzled rows (fp8 kernels: fp16, scaled, pairs reordered)
  unsigned char unit[Ring<FP8, M>::kSlots][Ring<FP8, M>::kUnitBytes];  // 16-bit rows swizzled, or raw fp8 rows
  unsigned char p[M * kKeys * 2];
  float red[4][M];     // per-warp row maxima, then row sums
  int hi[M];           // positions a row sees: [0, hi)
  unsigned char valid[Ring<FP8, M>::kSlots][Ring<FP8, M>::kUnitKeys];  // key has a block in range and lies in the split
  unsigned q_max;      // fp8 kernels: the tile's largest |q|, as fp32 bits
};

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return uint32_t(__cvta_generic_to_shared(p)); }
// Chunk `chunk` of row `row`: the XOR spreads the 8 rows an ldmatrix reads over all banks.
__device__ __forceinline__ uint32_t swz(int row, int chunk, int row_bytes) {
  return uint32_t(row * row_bytes + ((chunk ^ (row & 7)) << 4));
}
__device__ __forceinline__ void st_shared_v4(uint32_t a, uint32_t x, uint32_t y, uint32_t z, uint32_t w) {
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(a), "r"(x), "r"(y), "r"(z), "r"(w));
}

template <int M>
struct Layout {
  static constexpr int kThreads = M * 8;  // M/16 row groups x 4 warps
};

// The raw block id of this thread's latent row in unit u of the split starting at
// `first` (-1 at or past `bound`, the split's end within the table).  Read ahead
// of the unit's copies (a tile ahead, and the first units' while the context
// length is read), so that no copy waits for its id; a row past the context's
// end is masked when its copy is issued.
template <bool FP8, int M>
__device__ __forceinline__ int unit_block(const MlaDecodeParams &p, const int *table_row, int first, int bound,
                                          int u) {
  constexpr int kPerRow = Layout<M>::kThreads / Ring<FP8, M>::kUnitKeys;
  const int pos = first + u * Ring<FP8, M>::kUnitKeys + int(thread_x()) / kPerRow;
  return pos < bound ? table_row[pos / p.page_size] : -1;
}

// Starts the copies of unit positions [start, start + KU) into ring slot `slot`;
// `block`: this thread's row's id from unit_block (read once: checked and used as read).
template <bool FP8, int M>
__device__ __forceinline__ void issue_unit(const MlaDecodeParams &p, Smem<M, FP8> &s, int block, int start, int end,
                                           int slot_index) {
  constexpr int kPerRow = Layout<M>::kThreads / Ring<FP8, M>::kUnitKeys;  // loader threads a latent row
  constexpr int kBytes = FP8 ? kDim : kRowBytes, kRowChunks = kBytes / 16;
  const int t = int(thread_x()), row = t / kPerRow, part = t % kPerRow, pos = start + row;
  const bool ok = pos < end && block >= 0 && block < p.num_blocks;
  const long long slot = ok ? (long long)block * p.page_size + pos % p.page_size : 0;
  if (part == 0) s.valid[slot_index][row] = ok;
  const char *src = static_cast<const char *>(p.kv_cache) + slot * kBytes;
  const uint32_t dst = smem_u32(s.unit[slot_index]);
  if (FP8) {
    for (int c = part; c < kRowChunks; c += kPerRow) copy16(dst + row * kFp8Stride + c * 16, src + c * 16, ok);
  } else {
    for (int c = part; c < kRowChunks; c += kPerRow) copy16(dst + swz(row, c, kRowBytes), src + c * 16, ok);
  }
}

// Issues unit u of the split's `units` (a unit past the context's end still
// clears its slot's flags; past the last tile none is read: an empty group), so
// that every thread commits the same number of groups.
template <bool FP8, int M>
__device__ __forceinline__ void issue_and_commit(const MlaDecodeParams &p, Smem<M, FP8> &s, int block, int first,
                                                 int end, int u, int units) {
  constexpr int KU = Ring<FP8, M>::kUnitKeys;
  if (u < units) issue_unit<FP8, M>(p, s, block, first + u * KU, end, u % Ring<FP8, M>::kSlots);
  commit();
}


// The tile's query rows as they are (16-bit kernels), copied into s.q.
template <int M>
__device__ __forceinline__ void issue_q(const MlaDecodeParams &p, Smem<M, false> &s, int b, int tile_row0) {
  const char *q = static_cast<const char *>(p.q) + ((long long)b * p.rows + tile_row0) * kRowBytes;
  const uint32_t dst = smem_u32(s.q);
  for (int c = int(thread_x()); c < M * kChunks; c += Layout<M>::kThreads) {
    const int row = c / kChunks, ch = c % kChunks;
    const bool ok = tile_row0 + row < p.rows;
    copy16(dst + swz(row, ch, kRowBytes), ok ? q + (long long)row * kRowBytes + ch * 16 : p.q, ok);
  }
}

template <class T>
__device__ __forceinline__ void pair_f32(uint32_t w, float &lo, float &hi) {
  lo = to_f32(T{uint16_t(w & 0xffffu)});
  hi = to_f32(T{uint16_t(w >> 16)});
}

// fp8 kernels: the tile's query rows in fp16, times 2^k with k putting the
// largest |element| in [2^13, 2^14) (k = 0 when it is 0, infinite or NaN);
// returns 2^-k.  Pair 2c of each k-step's 8 pairs is stored at position c, pair
// 2c + 1 at 4 + c, so that ldmatrix hands each thread the dims of the codes it
// holds (4c..4c+3).  Rows past the end are zeros.
template <class T, int M>
__device__ __forceinline__ float load_q_fp16(const MlaDecodeParams &p, Smem<M, true> &s, int b, int tile_row0) {
  constexpr int kThreads = Layout<M>::kThreads;
  const int t = int(thread_x());
  const int rows = p.rows - tile_row0 < M ? p.rows - tile_row0 : M;
  const uint4 *q = reinterpret_cast<const uint4 *>(static_cast<const char *>(p.q) +
                                                   ((long long)b * p.rows + tile_row0) * kRowBytes);
  if (t == 0) s.q_max = 0u;
  sync_block();
  float top = 0.0f;
  for (int c = t; c < rows * kChunks; c += kThreads) {
    const uint4 w = q[c];
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo, hi;
      pair_f32<T>(words[i], lo, hi);
      top = fmaxf(top, fmaxf(fabsf(lo), fabsf(hi)));  // fmaxf skips NaN
    }
  }
  atomicMax(&s.q_max, f32_bits(top));  // non-negative floats order as their bits
  sync_block();
  const Fp16Range range = fp16_range((s.q_max >> 23) & 0xffu, s.q_max == 0u);
  const float scale = range.scale;
  const uint32_t dst = smem_u32(s.q);
  for (int item = t; item < M * kSteps; item += kThreads) {
    const int row = item / kSteps, step = item % kSteps;
    uint32_t even[4] = {}, odd[4] = {};
    if (row < rows) {
      const uint4 w0 = q[row * kChunks + 2 * step], w1 = q[row * kChunks + 2 * step + 1];
      const uint32_t pairs[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        float lo, hi;
        pair_f32<T>(pairs[i], lo, hi);
        (i & 1 ? odd : even)[i >> 1] = Mma<half_t>::pack(lo * scale, hi * scale);
      }
    }
    st_shared_v4(dst + swz(row, 2 * step, kRowBytes), even[0], even[1], even[2], even[3]);
    st_shared_v4(dst + swz(row, 2 * step + 1, kRowBytes), odd[0], odd[1], odd[2], odd[3]);
  }
  return range.unscale;
}

// The softmax state of the two rows (lane / 4 and lane / 4 + 8) a thread holds.
struct RowPair {
  float m[2] = {kNegInf, kNegInf};  // running maxima of the log2-scaled logits
  float l[2] = {0.0f, 0.0f};        // this thread's share of the running sums
};

// S for the warp's 16 rows and 16 keys of the tile (two n8 tiles), the even and
// odd k-steps in separate accumulators (four independent chains, not two).
// `kb`: the tile's first key row in shared memory (a warp's 16 keys lie in one unit).
template <class T, bool FP8, bool Hw>
__device__ __forceinline__ void scores(float (&sacc)[2][4], uint32_t qa, uint32_t kb, int key_row, int rg, int lane) {
  using P = Mma<typename Product<T, FP8>::type>;
  float odd[2][4] = {};
  const int a_row = rg * 16 + (lane & 15);
  if constexpr (FP8) {
    // Lanes 0-7 / 8-15 / 16-23 / 24-31 address keys 0-7 / 8-15 / 0-7 / 8-15, step k / k / k+1 / k+1.
    const uint32_t b_addr = kb + (key_row + (lane & 7) + ((lane >> 3) & 1) * 8) * kFp8Stride + (lane >> 4) * 16;
#pragma unroll 3
    for (int k = 0; k < kSteps; k += 2) {
      uint32_t a[4], a2[4], w[4], bb[8];
      ldsm_x4(qa + swz(a_row, 2 * k + (lane >> 4), kRowBytes), a);
      ldsm_x4(qa + swz(a_row, 2 * k + 2 + (lane >> 4), kRowBytes), a2);
      ldsm_x4(b_addr + k * 16, w);
#pragma unroll
      for (int i = 0; i < 4; ++i) e4m3_to_f16x2<Hw, 0, 1, 2, 3>(w[i], bb[2 * i], bb[2 * i + 1]);
      P::run(sacc[0], a, bb[0], bb[1]);
      P::run(sacc[1], a, bb[2], bb[3]);
      P::run(odd[0], a2, bb[4], bb[5]);
      P::run(odd[1], a2, bb[6], bb[7]);
    }
  } else {
    const int b_row = key_row + (lane & 7) + ((lane >> 4) << 3);
#pragma unroll 3
    for (int k = 0; k < kSteps; k += 2) {
      uint32_t a[4], bb[4], a2[4], bb2[4];
      ldsm_x4(qa + swz(a_row, 2 * k + (lane >> 4), kRowBytes), a);
      ldsm_x4(kb + swz(b_row, 2 * k + ((lane >> 3) & 1), kRowBytes), bb);
      ldsm_x4(qa + swz(a_row, 2 * k + 2 + (lane >> 4), kRowBytes), a2);
      ldsm_x4(kb + swz(b_row, 2 * k + 2 + ((lane >> 3) & 1), kRowBytes), bb2);
      P::run(sacc[0], a, bb[0], bb[1]);
      P::run(sacc[1], a, bb[2], bb[3]);
      P::run(odd[0], a2, bb2[0], bb2[1]);
      P::run(odd[1], a2, bb2[2], bb2[3]);
    }
  }
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) sacc[nt][e] += odd[nt][e];
}

// O += P V for the warp's 16 rows and 128 columns over the 16 keys of k-step
// `ks`; `vb`: their first key row.  16-bit: n8 tile nt holds columns
// nt*8..+8.  fp8: n8 tiles 4j..4j+3 hold the even, odd columns of j*32..+16,
// then of j*32+16..+16 (out_pair).
template <class T, bool FP8, bool Hw>
__device__ __forceinline__ void accumulate_pv(float (&o)[16][4], const uint32_t (&a)[4], uint32_t vb, int key_row,
                                              int g, int lane) {
  using P = Mma<typename Product<T, FP8>::type>;
  if constexpr (FP8) {
    const uint32_t base = vb + (key_row + (lane & 7) + ((lane >> 3) & 1) * 8) * kFp8Stride + g * 128 + (lane >> 4) * 16;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t r[4], even[4], odd[4];
      ldsm_x4_t(base + j * 32, r);  // keys 0-7, 8-15 of columns j*32..+16, then of j*32+16..+16
#pragma unroll
      for (int i = 0; i < 4; ++i) e4m3_to_f16x2<Hw, 0, 2, 1, 3>(r[i], even[i], odd[i]);
      P::run(o[4 * j], a, even[0], even[1]);
      P::run(o[4 * j + 1], a, odd[0], odd[1]);
      P::run(o[4 * j + 2], a, even[2], even[3]);
      P::run(o[4 * j + 3], a, odd[2], odd[3]);
    }
  } else {
    const int v_row = key_row + (lane & 7) + (((lane >> 3) & 1) << 3);
#pragma unroll
    for (int np = 0; np < 8; ++np) {
      uint32_t bb[4];
      ldsm_x4_t(vb + swz(v_row, g * 16 + np * 2 + (lane >> 4), kRowBytes), bb);
      P::run(o[2 * np], a, bb[0], bb[1]);
      P::run(o[2 * np + 1], a, bb[2], bb[3]);
    }
  }
}

// Output pair i (0..15) of row half h (rows lane/4, lane/4 + 8) of a thread of
// warp g: its first column and its two values, in the layout accumulate_pv left.
template <bool FP8>
__device__ __forceinline__ int out_pair(const float (&o)[16][4], int i, int h, int g, int lane, float &v0, float &v1) {
  const int c = lane & 3;
  if (FP8) {
    const int j = i >> 2, half = (i >> 1) & 1, q = i & 1, nt = 4 * j + 2 * half;
    v0 = o[nt][2 * h + q], v1 = o[nt + 1][2 * h + q];
    return g * 128 + j * 32 + half * 16 + 4 * c + 2 * q;
  }
  v0 = o[i][2 * h], v1 = o[i][2 * h + 1];
  return g * 128 + i * 8 + 2 * c;
}

template <class T, bool FP8, int M, bool Hw>
__device__ __forceinline__ void decode_block(const MlaDecodeParams &p) {
  extern __shared__ __attribute__((aligned(128))) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<Smem<M, FP8> *>(smem_raw);
  constexpr int kThreads = Layout<M>::kThreads;
  using P = Mma<typename Product<T, FP8>::type>;
  const int t = int(thread_x()), lane = t & 31, warp = t >> 5, rg = warp >> 2, g = warp & 3;
  const int b = int(block_x()) / p.splits, split = int(block_x()) % p.splits, tile_row0 = int(block_y()) * M;
  const int capacity = p.max_blocks * p.page_size;  // fits: the launcher checked
  const int first = split * p.split_keys;
  const int bound = first + p.split_keys < capacity ? first + p.split_keys : capacity;
  const int *table_row = p.block_table + (long long)b * p.table_stride;
  constexpr int kUnits = Ring<FP8, M>::kUnitsPerTile, kSlots = Ring<FP8, M>::kSlots, kLead = kSlots - kUnits;
  int lead[kLead];  // the prologue units' block ids, read together with the length
#pragma unroll
  for (int u = 0; u < kLead; ++u) lead[u] = unit_block<FP8, M>(p, table_row, first, bound, u);
  const int len_raw = p.context_lens[b];            // read once
  const int len = len_raw < 0 ? 0 : len_raw > capacity ? capacity : len_raw;
  const int end = first + p.split_keys < len ? first + p.split_keys : len;
  const int tiles = end > first ? (end - first + kKeys - 1) / kKeys : 0;

  for (int r = t; r < M; r += kThreads) {  // row r: new token i sees positions [0, len - q_tokens + i]
    const int n = tile_row0 + r, i = n / p.q_heads, hi = len - p.q_tokens + i + 1;
    s.hi[r] = n < p.rows && hi > 0 ? hi : 0;
  }
  if constexpr (!FP8) issue_q<M>(p, s, b, tile_row0);  // joins the first group
  // Prologue: the first kSlots - kUnitsPerTile units; then the ids of the first tile's refills.
  constexpr int KU = Ring<FP8, M>::kUnitKeys;
#pragma unroll
  for (int u = 0; u < kLead; ++u) issue_and_commit<FP8, M>(p, s, lead[u], first, end, u, tiles * kUnits);
  int ahead[kUnits];
#pragma unroll
  for (int j = 0; j < kUnits; ++j) ahead[j] = unit_block<FP8, M>(p, table_row, first, end, kLead + j);
  // fp8: the query's power-of-two factor and the widening's come back in the scales.
  float logit_scale = p.logit_scale, value_scale = p.value_scale;
  if constexpr (FP8) {
    const float unbias = e4m3_unbias<Hw>(p.quant);
    logit_scale *= unbias * load_q_fp16<T, M>(p, s, b, tile_row0);
    value_scale *= unbias;
  }

  const int r0 = rg * 16 + (lane >> 2), r1 = r0 + 8;
  RowPair st;
  float o[16][4] = {};
  for (int tile = 0; tile < tiles; ++tile) {
    const int start = first + tile * kKeys, u0 = tile * kUnits;
    // The slots of units u0 - kUnits.. (the last tile's) are free: refill them,
    // and read the next tile's ids while this one is computed.
#pragma unroll
    for (int j = 0; j < kUnits; ++j) {
      issue_and_commit<FP8, M>(p, s, ahead[j], first, end, u0 + kLead + j, tiles * kUnits);
      ahead[j] = unit_block<FP8, M>(p, table_row, first, end, u0 + kLead + kUnits + j);
    }
    wait_pending<kSlots - kUnits>();  // this tile's units have landed
    sync_block();
    // Key k of the tile: row k % KU of unit u0 + k / KU (16 keys never straddle units).
    auto key_base = [&](int k) { return smem_u32(s.unit[(u0 + k / KU) % kSlots]); };
    auto key_valid = [&](int k) { return s.valid[(u0 + k / KU) % kSlots][k % KU] != 0; };

    float sacc[2][4] = {};
    scores<T, FP8, Hw>(sacc, smem_u32(s.q), key_base(g * 16), (g * 16) % KU, rg, lane);
    // Mask, scale (log2 domain), this warp's row maxima.
    const int hi[2] = {s.hi[r0], s.hi[r1]};
    float top[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = g * 16 + nt * 8 + (lane & 3) * 2 + (e & 1), h = e >> 1;
        const bool seen = key_valid(key) && start + key < hi[h];
        sacc[nt][e] = seen ? sacc[nt][e] * logit_scale : kNegInf;
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
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(pw + swz(r0, chunk, kKeys * 2) + byte), "r"(P::pack(pr[0], pr[1])));
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(pw + swz(r1, chunk, kKeys * 2) + byte), "r"(P::pack(pr[2], pr[3])));
    }
#pragma unroll
    for (int nt = 0; nt < 16; ++nt) {
      o[nt][0] *= alpha[0], o[nt][1] *= alpha[0];
      o[nt][2] *= alpha[1], o[nt][3] *= alpha[1];
    }
    sync_block();

    // O += P V: rows rg*16.., columns g*128.., 64 keys.
    {
      const int a_row = rg * 16 + (lane & 15);
#pragma unroll
      for (int ks = 0; ks < kKeys / 16; ++ks) {
        uint32_t a[4];
        ldsm_x4(pw + swz(a_row, 2 * ks + (lane >> 4), kKeys * 2), a);
        accumulate_pv<T, FP8, Hw>(o, a, key_base(ks * 16), (ks * 16) % KU, g, lane);
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
    const float inv = total > 0.0f ? value_scale / total : 0.0f;
    const float lse = total > 0.0f ? (st.m[h] + __log2f(total)) * kLn2 : kNegInf;
    const long long row = (long long)b * p.rows + n;
    // One split: the output row; several: this split's partial row of the workspace (in T).
    const long long dst_row = p.splits == 1 ? row : row * p.splits + split;
    T *dst = static_cast<T *>(p.splits == 1 ? p.out : p.partial_out) + dst_row * kValueDim;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float v0, v1;
      const int col = out_pair<FP8>(o, i, h, g, lane, v0, v1);
      *reinterpret_cast<uint32_t *>(dst + col) = Mma<T>::pack(v0 * inv, v1 * inv);
    }
    if (g == 0 && (lane & 3) == 0) {
      if (p.splits > 1)
        p.partial_lse[dst_row] = lse;
      else if (p.lse != nullptr)
        p.lse[row] = lse;
    }
  }
}

// fp8 caches: e4m3fn through the hardware's conversion where it exists.
template <class T, bool FP8, int M>
__device__ __forceinline__ void decode(const MlaDecodeParams &p) {
  if constexpr (FP8) {
    if (p.quant == kQuantE4m3fn)
      decode_block<T, true, M, kHwE4m3>(p);
    else
      decode_block<T, true, M, false>(p);
  } else {
    decode_block<T, false, M, false>(p);
  }
}

}  // namespace

#define AITER_MLA_MMA_KERNEL(name, T, FP8, M) \
  AITER_KERNEL void __launch_bounds__(M * 8, Ring<FP8, M>::kTwoPerSm ? 2 : 1) name(MlaDecodeParams p) { \
    enter_stream_order();                                                   \
    decode<T, FP8, M>(p);                                                   \
  }

// aiter-kernel: op=mla_decode variant=mma.f16.same.m16 symbol=aiter_mla_mma_f16_same_m16 block=128 smem=205312
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_same_m16, half_t, false, 16)
// aiter-kernel: op=mla_decode variant=mma.f16.same.m32 symbol=aiter_mla_mma_f16_same_m32 block=256 smem=226176
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_same_m32, half_t, false, 32)
// aiter-kernel: op=mla_decode variant=mma.f16.fp8.m16 symbol=aiter_mla_mma_f16_fp8_m16 block=128 smem=96768
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_fp8_m16, half_t, true, 16)
// aiter-kernel: op=mla_decode variant=mma.f16.fp8.m32 symbol=aiter_mla_mma_f16_fp8_m32 block=256 smem=231424
AITER_MLA_MMA_KERNEL(aiter_mla_mma_f16_fp8_m32, half_t, true, 32)
// aiter-kernel: op=mla_decode variant=mma.bf16.same.m16 symbol=aiter_mla_mma_bf16_same_m16 block=128 smem=205312
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_same_m16, bf16_t, false, 16)
// aiter-kernel: op=mla_decode variant=mma.bf16.same.m32 symbol=aiter_mla_mma_bf16_same_m32 block=256 smem=226176
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_same_m32, bf16_t, false, 32)
// aiter-kernel: op=mla_decode variant=mma.bf16.fp8.m16 symbol=aiter_mla_mma_bf16_fp8_m16 block=128 smem=96768
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_fp8_m16, bf16_t, true, 16)
// aiter-kernel: op=mla_decode variant=mma.bf16.fp8.m32 symbol=aiter_mla_mma_bf16_fp8_m32 block=256 smem=231424
AITER_MLA_MMA_KERNEL(aiter_mla_mma_bf16_fp8_m32, bf16_t, true, 32)

// The manifest's smem figures above are these structs' sizes.
static_assert(sizeof(Smem<16, false>) == 205312, "update smem of m16");
static_assert(sizeof(Smem<32, false>) == 226176, "update smem of m32");
static_assert(sizeof(Smem<16, true>) == 96768, "update smem of fp8 m16");
static_assert(2 * (sizeof(Smem<16, true>) + 1024) <= 228 * 1024, "two fp8 m16 blocks an SM (1 KB reserved each)");
static_assert(sizeof(Smem<32, true>) == 231424, "update smem of fp8 m32");
static_assert(sizeof(Smem<32, true>) == kMlaMmaMaxSmem && sizeof(Smem<16, true>) <= kMlaMmaMaxSmem &&
                  sizeof(Smem<32, false>) <= kMlaMmaMaxSmem,
              "kMlaMmaMaxSmem (mla_params.h) is the largest of them");
