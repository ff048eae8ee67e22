// Paged decode attention on NVIDIA tensor cores (mma.sync m16n8k16, ldmatrix,
// cp.async; sm_80 and up).  AMD targets run decode.cu, whose features this
// kernel keeps: any page size, several new tokens a sequence (causal among
// them), sliding window, soft-cap, split-KV partial results, fp8 caches.
//
// A block of 4 warps takes the 16 rows (new token x query head of one kv head,
// padded to 16: one m16 tile) of a sequence over one split of its context.  The
// key range is cut into tiles of 16 or 32 keys (Geometry) dealt round-robin to the warps; each
// warp streams its own tiles through its own ring of shared-memory stages with
// cp.async (several in flight), and computes, for all 16 rows at once,
// S = Q K^T (q in registers), an online softmax, and O += P V with P taken
// straight from S's registers.  No barrier in the key loop: the warps' partial
// results (max, sum, O) are merged once at the end.  Each cached byte is read
// once for the whole GQA group.
//
// fp8 caches are copied as raw bytes (half the bytes of a 16-bit cache) and
// widened in registers after ldmatrix: e5m2 and e4m3 are both exact in fp16
// (e4m3fn by the hardware's cvt on sm_89 and up, else by placing the bits;
// e4m3fnuz by placing the bits), times a power of two folded into the scales.
// Both products then run in fp16, so a key needs no second widening to bf16: a
// bf16 query row is scaled by a power of two that puts its largest element in
// [2^13, 2^14) (no bf16 value overflows fp16, and fp16 holds every element down
// to 2^-27 of the largest exactly) and the factor comes back in the row's logit
// scale.
// A byte-wide ldmatrix hands a thread 4 consecutive dims of a key (K) or 2 dims
// of 2 consecutive keys (V, transposed), so the reduction dim of Q K^T is
// permuted (q's fragments are loaded in the same order) and P V's output
// columns are permuted (undone when O is stored).
//
// Block ids and context lengths live in device memory, unchecked by the host:
// each is read once, a length is clamped to the table's capacity, and a key
// whose block id is out of range is masked (its rows zero-filled, never read).
#include "../common/numeric.h"
#include "attention_params.h"
#include "fp8_widen.h"
#include "mma16.h"

namespace {

constexpr int kWarps = 4, kThreads = 32 * kWarps;
constexpr int kRows = 16;  // rows a block (one m16 tile)
constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();

// Sizes of a cache row (one key of one kv head) and of a warp's ring.
template <int D, int CK>
struct Geometry {
  static constexpr bool kFp8 = CK != kQuantNone;
  static constexpr int kRowBytes = D * (kFp8 ? 1 : 2);
  static constexpr int kRowChunks = kRowBytes / 16;
  // Keys a tile (a warp's stage): 32 for rows of up to 128 bytes (fp8, 16-bit
  // D64), so that a tile's softmax and copies serve as many bytes as 16 keys of
  // 256-byte rows do; 16 keys of 256 bytes keep the ring at 3 stages.
  static constexpr int kKeys = kRowBytes <= 128 ? 32 : 16;
  static constexpr int kKeySteps = kKeys / 16;  // k-steps of P V (16 keys each)
  static constexpr int kTileBytes = kKeys * kRowBytes;  // the K (or V) rows of a tile
  static constexpr int kStageBytes = 2 * kTileBytes;
  // ~24 KB of stages a warp, 3 to 8 of them: with 2 blocks an SM, 8 warps keep
  // ~130-170 KB of cache reads in flight.
  static constexpr int kStages = 24576 / kStageBytes < 3 ? 3 : 24576 / kStageBytes > 8 ? 8 : 24576 / kStageBytes;
  static constexpr int kCopies = kTileBytes / 16 / 32;  // 16-byte copies a lane, K (and as many of V)
  static_assert(kRowChunks % 2 == 0 && kTileBytes % (16 * 32) == 0, "whole chunk pairs and copies");
};

template <int D, int CK>
struct alignas(128) Smem {
  using G = Geometry<D, CK>;
  unsigned char ring[kWarps][G::kStages][G::kStageBytes];  // per stage: K rows, then V rows (swizzled)
  unsigned keys_ok[kWarps][G::kStages];  // bit k: the tile's key k is in range with a valid block id
  float m[kWarps][kRows], l[kWarps][kRows];  // each warp's row maxima (log2 domain) and sums
  float top[kRows], total[kRows];            // the block's
  int len;
};
// At the end the ring holds each warp's O rows as fp32, D + 4 apart.
template <int D, int CK>
constexpr bool kOutFits = sizeof(float) * kWarps * kRows * (D + 4) <= sizeof(Smem<D, CK>::ring);

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return uint32_t(__cvta_generic_to_shared(p)); }

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of Chunks chunks a
// row: XOR-swizzled so that the 8 rows an ldmatrix reads hit 8 different bank quads.
template <int Chunks>
__device__ __forceinline__ uint32_t swz(int row, int chunk) {
  const int x = Chunks >= 8 ? (row & 7) : (row >> 1) & (Chunks - 1);
  return uint32_t(row * Chunks * 16 + ((chunk ^ x) << 4));
}


// ---- the rows ----------------------------------------------------------------------

// A thread's two rows of the tile (lane / 4 and lane / 4 + 8): their visible key
// positions [lo, hi).  A padding row sees every key: its query is 0, its
// results are never stored, and so interior tiles need no mask for it.
struct RowRanges {
  int lo[2], hi[2];
};

// A bf16 query's fragments (rows lane / 4 and lane / 4 + 8 of the tile, each
// spread over the quad's 4 lanes) as fp16, each row times 2^k with its largest
// element in [2^13, 2^14); unscale[h] = 2^-k.
template <int D>
__device__ __forceinline__ void to_scaled_fp16(uint32_t (&qa)[D / 16][4], float (&unscale)[2]) {
  uint32_t top[2] = {0u, 0u};  // per row: the largest |element|'s bits in both halves (bf16 magnitudes order as bits)
#pragma unroll
  for (int s = 0; s < D / 16; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) top[i & 1] = __vmaxu2(top[i & 1], qa[s][i] & 0x7fff7fffu);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    top[h] = __vmaxu2(top[h], __shfl_xor_sync(0xffffffffu, top[h], 1));
    top[h] = __vmaxu2(top[h], __shfl_xor_sync(0xffffffffu, top[h], 2));
    const uint32_t bits = max(top[h] >> 16, top[h] & 0xffffu);  // bf16 bits of the row's largest |element|
    const Fp16Range range = fp16_range((bits >> 7) & 0xffu, bits == 0u);
    const float scale = range.scale;
    unscale[h] = range.unscale;
#pragma unroll
    for (int s = 0; s < D / 16; ++s)
#pragma unroll
      for (int i = h; i < 4; i += 2) {
        const uint32_t w = qa[s][i];
        qa[s][i] = Mma<half_t>::pack(bits_f32(w << 16) * scale, bits_f32(w & 0xffff0000u) * scale);
      }
  }
}

// q's A fragments for the D / 16 k-steps of S = Q K^T.  16-bit caches: the
// standard order (dims 2q, 2q+1 and 2q+8, 2q+9 of the step); fp8: the order the
// byte-wide ldmatrix of K gives (dims 4q..4q+3), see the file's comment.
// unscale[h]: what the products of row h must be multiplied by (1, or for a
// bf16 query over an fp8 cache the inverse of the row's power-of-two factor).
template <class T, int D, bool Fp8>
__device__ __forceinline__ void load_q(const T *row0, const T *row1, uint32_t (&qa)[D / 16][4], float (&unscale)[2]) {
  const int q = int(thread_x()) & 3;
  auto pair = [](const T *r, int d) -> uint32_t {
    return r == nullptr ? 0u : uint32_t(r[d].bits) | (uint32_t(r[d + 1].bits) << 16);
  };
#pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    const int d0 = Fp8 ? 16 * s + 4 * q : 16 * s + 2 * q, d1 = Fp8 ? d0 + 2 : d0 + 8;
    qa[s][0] = pair(row0, d0);
    qa[s][1] = pair(row1, d0);
    qa[s][2] = pair(row0, d1);
    qa[s][3] = pair(row1, d1);
  }
  unscale[0] = unscale[1] = 1.0f;
  if constexpr (Fp8 && !Mma<T>::kHalf) to_scaled_fp16<D>(qa, unscale);
}

// The online-softmax state of a thread's two rows.
struct RowPair {
  float m[2] = {kNegInf, kNegInf};  // running maxima of the log2-scaled logits
  float l[2] = {0.0f, 0.0f};        // this thread's share of the running sums
};

// Everything a warp needs to copy its tiles.
struct Stream {
  const char *k, *v;      // the caches, in bytes, at this kv head's first row
  const int *table_row;   // the sequence's block-table row
  long long num_blocks;
  long long key_bytes;    // bytes between slots (kv_heads rows)
  int page_size, end;     // end: the block's last key position + 1
};

// Lane k < Keys: the raw block id of the tile's key k (read once), -1 past the end.
template <int Keys>
__device__ __forceinline__ int fetch_entry(const int *table_row, int page_size, long long start, long long end) {
  const int lane = int(thread_x()) & 31;
  const long long key = start + (lane & (Keys - 1));
  return lane < Keys && key < end ? table_row[key / page_size] : -1;
}
template <int Keys>
__device__ __forceinline__ int fetch_entry(const Stream &st, long long start) {
  return fetch_entry<Keys>(st.table_row, st.page_size, start, st.end);
}

// Starts the copies of the tile at `start` (block ids `entry`, from fetch_entry)
// into stage `slot`; a key out of range or of an invalid block id is zero-filled
// and flagged off in keys_ok.
template <int D, int CK>
__device__ __forceinline__ void issue_tile(Smem<D, CK> &s, const Stream &st, long long start, int entry, int slot) {
  using G = Geometry<D, CK>;
  const int lane = int(thread_x()) & 31, warp = int(thread_x()) >> 5;
  const long long key = start + (lane & (G::kKeys - 1));
  const bool ok = lane < G::kKeys && key < st.end && entry >= 0 && entry < st.num_blocks;
  const long long off = ok ? ((long long)entry * st.page_size + key % st.page_size) * st.key_bytes : 0;
  const unsigned mask = __ballot_sync(0xffffffffu, ok);
  if (lane == 0) s.keys_ok[warp][slot] = mask;
  const uint32_t kdst = smem_u32(s.ring[warp][slot]), vdst = kdst + G::kTileBytes;
#pragma unroll
  for (int i = 0; i < G::kCopies; ++i) {
    const int c = lane + 32 * i, row = c / G::kRowChunks, part = c % G::kRowChunks;
    const long long o = __shfl_sync(0xffffffffu, off, row) + part * 16;
    const bool valid = (mask >> row) & 1u;
    copy16(kdst + swz<G::kRowChunks>(row, part), st.k + o, valid);
    copy16(vdst + swz<G::kRowChunks>(row, part), st.v + o, valid);
  }
}

// Logit scaling of the scores: log2 domain, soft-capped first where asked.
// mul is per row h of the thread's two (load_q's unscale folded in).
struct Logits {
  float mul[2];   // without soft-cap: everything times log2(e); with it: the plain scale
  float softcap;  // 0: off
  __device__ __forceinline__ float operator()(float s, int h) const {
    if (softcap <= 0.0f) return s * mul[h];
    const float e = exp2f(2.0f * kLog2e * s * mul[h] / softcap);  // tanh through exp, as decode.cu
    return softcap * (1.0f - 2.0f / (e + 1.0f)) * kLog2e;
  }
};

// One tile of kKeys keys at `start`, in stage `slot` of the warp's ring: scores,
// online softmax, O += P V.
template <class T, int D, int CK>
__device__ __forceinline__ void attend_tile(const Smem<D, CK> &s, int slot, long long start,
                                            const uint32_t (&qa)[D / 16][4], const RowRanges &rr,
                                            const Logits &logits, RowPair &st, float (&o)[D / 8][4]) {
  using G = Geometry<D, CK>;
  using TP = typename ProductType<T, CK>::type;
  constexpr int NT = G::kKeys / 8;  // n8 tiles of S
  const int lane = int(thread_x()) & 31, warp = int(thread_x()) >> 5, q = lane & 3;
  const uint32_t kbase = smem_u32(s.ring[warp][slot]), vbase = kbase + G::kTileBytes;
  const unsigned ok = s.keys_ok[warp][slot];

  // S = Q K^T, 16 keys (two n8 tiles) an ldmatrix; the chunk pairs alternate
  // between two accumulators (independent chains of products).
  float acc[2][NT][4] = {};
  {
    const int krow = (lane & 7) + ((lane >> 4) << 3), ksel = (lane >> 3) & 1;
#pragma unroll
    for (int j = 0; j < G::kRowChunks / 2; ++j)
#pragma unroll
      for (int kg = 0; kg < G::kKeySteps; ++kg) {
        uint32_t r[4];  // keys 0-7 chunk 2j, keys 0-7 chunk 2j+1, keys 8-15 chunk 2j, keys 8-15 chunk 2j+1
        ldsm_x4(kbase + swz<G::kRowChunks>(16 * kg + krow, 2 * j + ksel), r);
        const int n0 = 2 * kg, n1 = 2 * kg + 1;
        if constexpr (!G::kFp8) {  // chunks 2j, 2j+1: k-step j
          Mma<T>::run(acc[j & 1][n0], qa[j], r[0], r[1]);
          Mma<T>::run(acc[j & 1][n1], qa[j], r[2], r[3]);
        } else {  // chunk c: k-step c, a thread's word = dims 4q..4q+3 of its key
          uint32_t b[4][2];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            fp8_pairs<CK, 0, 1, 2, 3>(r[i], b[i][0], b[i][1]);
          }
          Mma<TP>::run(acc[0][n0], qa[2 * j], b[0][0], b[0][1]);
          Mma<TP>::run(acc[0][n1], qa[2 * j], b[2][0], b[2][1]);
          Mma<TP>::run(acc[1][n0], qa[2 * j + 1], b[1][0], b[1][1]);
          Mma<TP>::run(acc[1][n1], qa[2 * j + 1], b[3][0], b[3][1]);
        }
      }
  }
  // Logits, masks, the rows' maxima over the quad's keys.  A tile whose keys
  // are all valid and seen by every row of the warp (most of a long context)
  // skips the per-key masks.
  constexpr unsigned kAllKeys = G::kKeys == 32 ? 0xffffffffu : (1u << G::kKeys) - 1u;
  const bool interior = ok == kAllKeys && start >= rr.lo[0] && start >= rr.lo[1] &&
                        start + G::kKeys <= rr.hi[0] && start + G::kKeys <= rr.hi[1];
  float x[NT][4], top[2] = {kNegInf, kNegInf};
  if (__all_sync(0xffffffffu, interior)) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        x[nt][e] = logits(acc[0][nt][e] + acc[1][nt][e], e >> 1);
        top[e >> 1] = fmaxf(top[e >> 1], x[nt][e]);
      }
  } else {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = nt * 8 + 2 * q + (e & 1), h = e >> 1;
        const long long pos = start + key;
        const bool seen = ((ok >> key) & 1u) && pos >= rr.lo[h] && pos < rr.hi[h];
        x[nt][e] = seen ? logits(acc[0][nt][e] + acc[1][nt][e], h) : kNegInf;
        top[h] = fmaxf(top[h], x[nt][e]);
      }
  }
  float alpha[2], base[2];
  bool grew = false;  // a row's maximum grew: O is rescaled (else alpha is 1, or O still 0)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    top[h] = fmaxf(top[h], __shfl_xor_sync(0xffffffffu, top[h], 1));
    top[h] = fmaxf(top[h], __shfl_xor_sync(0xffffffffu, top[h], 2));
    const float m = fmaxf(st.m[h], top[h]);
    grew = grew || m > st.m[h];
    base[h] = m == kNegInf ? 0.0f : m;  // no key seen yet: every p is 0
    alpha[h] = exp2f(st.m[h] - base[h]);
    st.m[h] = m;
  }
  // P as the A fragments of the k-steps over the tile's keys (16 each).
  uint32_t pa[G::kKeySteps][4];
  {
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int kg = 0; kg < G::kKeySteps; ++kg) {
      float p[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) p[i][e] = exp2f(x[2 * kg + i][e] - base[e >> 1]);
      sum[0] += (p[0][0] + p[0][1]) + (p[1][0] + p[1][1]);
      sum[1] += (p[0][2] + p[0][3]) + (p[1][2] + p[1][3]);
      pa[kg][0] = Mma<TP>::pack(p[0][0], p[0][1]);
      pa[kg][1] = Mma<TP>::pack(p[0][2], p[0][3]);
      pa[kg][2] = Mma<TP>::pack(p[1][0], p[1][1]);
      pa[kg][3] = Mma<TP>::pack(p[1][2], p[1][3]);
    }
    st.l[0] = st.l[0] * alpha[0] + sum[0];
    st.l[1] = st.l[1] * alpha[1] + sum[1];
  }
  if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      o[nt][0] *= alpha[0], o[nt][1] *= alpha[0];
      o[nt][2] *= alpha[1], o[nt][3] *= alpha[1];
    }
  }
  // O += P V.  16-bit: n-tile c = dims 8c..8c+7.  fp8: n-tile 2c + parity =
  // dims 16c + 2n + parity (n = 0..7).
  const int vrow = (lane & 7) + (((lane >> 3) & 1) << 3), vsel = lane >> 4;
#pragma unroll
  for (int kg = 0; kg < G::kKeySteps; ++kg)
#pragma unroll
    for (int j = 0; j < G::kRowChunks / 2; ++j) {
      uint32_t r[4];  // keys 0-7 chunk 2j, keys 8-15 chunk 2j, keys 0-7 chunk 2j+1, keys 8-15 chunk 2j+1
      ldsm_x4_t(vbase + swz<G::kRowChunks>(16 * kg + vrow, 2 * j + vsel), r);
      if constexpr (!G::kFp8) {
        Mma<TP>::run(o[2 * j], pa[kg], r[0], r[1]);
        Mma<TP>::run(o[2 * j + 1], pa[kg], r[2], r[3]);
      } else {  // a thread's word: keys 2q, 2q+1 x dims 2n, 2n+1 of the chunk
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int nt = 2 * (2 * j + c);
          uint32_t even[2], odd[2];  // the n-tiles of the chunk's even and odd dims
          fp8_pairs<CK, 0, 2, 1, 3>(r[2 * c], even[0], odd[0]);
          fp8_pairs<CK, 0, 2, 1, 3>(r[2 * c + 1], even[1], odd[1]);
          Mma<TP>::run(o[nt], pa[kg], even[0], even[1]);
          Mma<TP>::run(o[nt + 1], pa[kg], odd[0], odd[1]);
        }
      }
    }
}

// The column of O that element e (0..3) of n-tile nt holds for this thread.
template <int D, bool Fp8>
__device__ __forceinline__ int out_col(int nt, int e) {
  const int q = int(thread_x()) & 3;
  return Fp8 ? (nt >> 1) * 16 + 4 * q + 2 * (e & 1) + (nt & 1) : nt * 8 + 2 * q + (e & 1);
}

template <class T, int D, int CK>
__device__ __forceinline__ void decode_mma(const DecodeParams &p) {
  using G = Geometry<D, CK>;
  extern __shared__ __attribute__((aligned(128))) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<Smem<D, CK> *>(smem_raw);
  const int t = int(thread_x()), lane = t & 31, warp = t >> 5;
  // Grid: x = ((sequence, split), kv head, row block), the heads fastest: blocks
  // running side by side read the kv heads of the same slots, adjacent in memory.
  const int heads_rb = p.kv_heads * p.row_blocks, bs = int(block_x()) / heads_rb, hr = int(block_x()) % heads_rb;
  const int b = bs / p.splits, split = bs % p.splits;
  const int kvh = hr / p.row_blocks, rb = hr % p.row_blocks;
  const int group = p.q_heads / p.kv_heads, rows = p.q_tokens * group;
  constexpr int KT = G::kKeys, S = G::kStages;
  const long long capacity = (long long)p.max_blocks * p.page_size;
  if (t == 0) {
    const long long len = p.context_lens[b];  // read once
    s.len = int(len < 0 ? 0 : len > capacity ? capacity : len);
  }
  // The block ids of the warp's first tiles, read while the length is: where no
  // window starts the keys later, the split's first key is known without it
  // (ids past the length are read from the table but never used).
  const int *table_row = p.block_table + (long long)b * p.table_stride;
  const long long split_first = (long long)split * p.split_keys;
  const long long split_bound = split_first + p.split_keys < capacity ? split_first + p.split_keys : capacity;
  int early[S - 1];
#pragma unroll
  for (int j = 0; j < S - 1; ++j)
    early[j] = fetch_entry<KT>(table_row, p.page_size, split_first + (long long)(warp + kWarps * j) * KT, split_bound);
  sync_block();
  const int len = s.len;

  // The thread's rows: new token i at position len - q_tokens + i sees [lo, pos].
  RowRanges rr;
  const T *qrow[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = rb * kRows + (lane >> 2) + 8 * h, i = n / group;
    rr.lo[h] = 0, rr.hi[h] = INT_MAX;
    qrow[h] = nullptr;
    if (n < rows) {
      const int pos = len - p.q_tokens + i;
      rr.hi[h] = pos + 1 < 0 ? 0 : pos + 1;
      rr.lo[h] = p.sm.window_left >= 0 && pos - p.sm.window_left > 0 ? pos - p.sm.window_left : 0;
      qrow[h] = static_cast<const T *>(p.q) + b * p.q_seq_stride + (long long)i * p.q_token_stride +
                (long long)(kvh * group + n % group) * p.q_head_stride;
    }
  }
  // The block's keys: the union of its rows' ranges (the first row sees the
  // fewest, the last the most) within the split.
  long long first, end;
  {
    const int n0 = rb * kRows, n1 = (n0 + kRows < rows ? n0 + kRows : rows) - 1;
    const int pos0 = len - p.q_tokens + n0 / group, pos1 = len - p.q_tokens + n1 / group;
    const long long lo = p.sm.window_left >= 0 && pos0 - p.sm.window_left > 0 ? pos0 - p.sm.window_left : 0;
    const long long hi = pos1 + 1 < 0 ? 0 : pos1 + 1;
    const long long from = (long long)split * p.split_keys, to = from + p.split_keys;
    first = lo > from ? lo : from;
    end = hi < to ? hi : to;
  }
  const long long tiles = end > first ? (end - first + KT - 1) / KT : 0;
  const int mine = tiles > warp ? int((tiles - warp + kWarps - 1) / kWarps) : 0;  // tiles warp, warp + 4, ...
  auto tile_start = [&](int j) { return first + (long long)(warp + kWarps * j) * KT; };

  const long long row_bytes = G::kRowBytes;
  const Stream stream{static_cast<const char *>(p.k_cache) + kvh * row_bytes,
                      static_cast<const char *>(p.v_cache) + kvh * row_bytes,
                      table_row,
                      p.num_blocks,
                      row_bytes * p.kv_heads,
                      p.page_size,
                      int(end)};

  uint32_t qa[D / 16][4];
  float unscale[2];
  load_q<T, D, G::kFp8>(qrow[0], qrow[1], qa, unscale);
  const float fold = fp8_fold<CK>();
  const float mul = p.sm.softcap > 0.0f ? p.sm.scale * p.sm.k_scale * fold : p.sm.scale * p.sm.k_scale * fold * kLog2e;
  const Logits logits{{mul * unscale[0], mul * unscale[1]}, p.sm.softcap};

  // Prologue: stages 0..S-2 (a group each, empty past the warp's tiles), their
  // block ids read together.
  int entries[S - 1];
#pragma unroll
  for (int j = 0; j < S - 1; ++j)
    entries[j] = j >= mine ? -1 : first == split_first ? early[j] : fetch_entry<KT>(stream, tile_start(j));
#pragma unroll
  for (int j = 0; j < S - 1; ++j) {
    if (j < mine) issue_tile(s, stream, tile_start(j), entries[j], j);
    commit();
  }
  // The next tile's block ids, in flight during the math (as in the loop below).
  int entry = S - 1 < mine ? fetch_entry<KT>(stream, tile_start(S - 1)) : -1;
  RowPair st;
  float o[D / 8][4] = {};
  for (int j = 0; j < mine; ++j) {
    const int next = j + S - 1;
    __syncwarp();  // stage next % S was read by the previous tile's ldmatrix
    if (next < mine) {
      issue_tile(s, stream, tile_start(next), entry, next % S);
      entry = next + 1 < mine ? fetch_entry<KT>(stream, tile_start(next + 1)) : -1;
    }
    commit();
    wait_pending<S - 1>();  // this thread's copies of tile j have landed
    __syncwarp();           // and the other lanes'
    attend_tile<T, D, CK>(s, j % S, tile_start(j), qa, rr, logits, st, o);
  }
  asm volatile("cp.async.wait_all;" ::: "memory");

  // Merge the warps: row sums over the quad, then each warp's O rescaled to the
  // block's maximum and summed through shared memory (the ring, now free).
  const int r0 = lane >> 2, q = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    st.l[h] += __shfl_xor_sync(0xffffffffu, st.l[h], 1);
    st.l[h] += __shfl_xor_sync(0xffffffffu, st.l[h], 2);
  }
  if (q == 0) {
#pragma unroll
    for (int h = 0; h < 2; ++h) s.m[warp][r0 + 8 * h] = st.m[h], s.l[warp][r0 + 8 * h] = st.l[h];
  }
  sync_block();
  float *obuf = reinterpret_cast<float *>(s.ring);
  constexpr int kStride = D + 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = r0 + 8 * h;
    float top = kNegInf;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) top = fmaxf(top, s.m[w][r]);
    const float f = st.m[h] == kNegInf ? 0.0f : exp2f(st.m[h] - top);
    float *dst = obuf + (warp * kRows + r) * kStride;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) dst[out_col<D, G::kFp8>(nt, e)] = o[nt][2 * h + e] * f;
  }
  if (t < kRows) {
    float top = kNegInf, total = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) top = fmaxf(top, s.m[w][t]);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += s.m[w][t] == kNegInf ? 0.0f : s.l[w][t] * exp2f(s.m[w][t] - top);
    s.top[t] = top;
    s.total[t] = total;
  }
  sync_block();
  const float value_scale = p.sm.v_scale * fold;
  for (int idx = t; idx < kRows * D; idx += kThreads) {
    const int r = idx / D, col = idx % D, n = rb * kRows + r;
    if (n >= rows) break;  // rows only grow with idx
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += obuf[(w * kRows + r) * kStride + col];
    const float total = s.total[r];
    const float v = total > 0.0f ? sum * (value_scale / total) : 0.0f;
    const int i = n / group, h = kvh * group + n % group;
    if (p.splits == 1) {
      T *dst = static_cast<T *>(p.out) + b * p.out_seq_stride + (long long)i * p.out_token_stride +
               (long long)h * p.out_head_stride;
      dst[col] = from_f32<T>(v);
    } else {
      const long long slot = (((long long)b * p.q_tokens + i) * p.q_heads + h) * p.splits + split;
      p.partial_out[slot * D + col] = v;
      if (col == 0) p.partial_lse[slot] = total > 0.0f ? (s.top[r] + log2f(total)) * kLn2 : kNegInf;
    }
  }
}

// One row (sequence, new token, query head) of the output from its splits'
// partial results, as decode.cu's merge: each weighted by exp(its lse - the
// largest), a split that saw no key by 0.  Every load is issued at once,
// before the weights are known: thread t reads dim t of every split's partial
// row (head_dim <= kThreads: the tensor-core kernel's 64 and 128) and split
// t's lse, so the row costs one round trip to L2, not one a group of 8 splits
// (B1 at 32k context, 33 splits, on an H100: about 1 us less a call in graph
// replays, docs/performance_attention.md).
constexpr int kMaxSplits = 64;  // kDecodeMaxSplits (libaiter/ops/attention.hpp)

__device__ __forceinline__ float block_reduce(float v, bool is_max, float *red) {
  const int lane = int(thread_x()) & 31, warp = int(thread_x()) >> 5;
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, m);
    v = is_max ? fmaxf(v, o) : v + o;
  }
  if (lane == 0) red[warp] = v;
  sync_block();
  float r = red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
  sync_block();  // red is reused
  return r;
}

template <class T>
__device__ __forceinline__ void merge_splits(const DecodeMergeParams &p) {
  __shared__ float weight[kMaxSplits];
  __shared__ float red[kWarps];
  const long long row = block_x();
  const int t = int(thread_x());
  const bool has_dim = t < p.head_dim;
  const float *part = p.partial_out + row * p.splits * p.head_dim + t;
  float x[kMaxSplits];
#pragma unroll
  for (int s = 0; s < kMaxSplits; ++s) x[s] = has_dim && s < p.splits ? part[(long long)s * p.head_dim] : 0.0f;
  const float lse = t < p.splits ? p.partial_lse[row * p.splits + t] : kNegInf;
  const float top = block_reduce(lse, true, red);
  const float w = lse == kNegInf ? 0.0f : exp2f((lse - top) * kLog2e);
  if (t < kMaxSplits) weight[t] = w;  // 0 past the splits
  const float total = block_reduce(w, false, red);  // its barriers publish weight[] too
  if (!has_dim) return;
  float acc[8] = {};
#pragma unroll
  for (int s = 0; s < kMaxSplits; ++s)
    if (s < p.splits) acc[s % 8] += weight[s] == 0.0f ? 0.0f : weight[s] * x[s];
  const float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  const long long token = row / p.q_heads;  // (sequence, new token)
  T *dst = static_cast<T *>(p.out) + token / p.q_tokens * p.out_seq_stride +
           token % p.q_tokens * p.out_token_stride + row % p.q_heads * p.out_head_stride;
  dst[t] = from_f32<T>(sum * (total > 0.0f ? 1.0f / total : 0.0f));
}

}  // namespace

#define AITER_DECODE_MMA_KERNEL(name, T, D, CK)                               \
  AITER_KERNEL void AITER_LAUNCH_BOUNDS_MIN(kThreads, 2) name(DecodeParams p) { \
    enter_stream_order();                                                     \
    decode_mma<T, D, CK>(p);                                                  \
  }

// Variants: q dtype . cache (same dtype, or one fp8 kind) . head dim;
// smem = sizeof(Smem<D, CK>), checked by static_asserts at the end.
// aiter-kernel-family: op=paged_decode_attention variant=mma.{dt}.same.{shape} symbol=aiter_decode_mma_{dt}_same_{shape} block=128 smem={smem} dt=f16,bf16 shape=d64:99072,d128:99072
// aiter-kernel-family: op=paged_decode_attention variant=mma.{dt}.{cache}.{shape} symbol=aiter_decode_mma_{dt}_{cache}_{shape} block=128 smem={smem} dt=f16,bf16 cache=e4m3fn,e4m3fnuz,e5m2 shape=d64:99072,d128:99072
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_same_d64, half_t, 64, kQuantNone)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_same_d128, half_t, 128, kQuantNone)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_same_d64, bf16_t, 64, kQuantNone)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_same_d128, bf16_t, 128, kQuantNone)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_e4m3fn_d64, half_t, 64, kQuantE4m3fn)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_e4m3fn_d128, half_t, 128, kQuantE4m3fn)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_e4m3fn_d64, bf16_t, 64, kQuantE4m3fn)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_e4m3fn_d128, bf16_t, 128, kQuantE4m3fn)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_e4m3fnuz_d64, half_t, 64, kQuantE4m3fnuz)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_e4m3fnuz_d128, half_t, 128, kQuantE4m3fnuz)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_e4m3fnuz_d64, bf16_t, 64, kQuantE4m3fnuz)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_e4m3fnuz_d128, bf16_t, 128, kQuantE4m3fnuz)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_e5m2_d64, half_t, 64, kQuantE5m2)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_f16_e5m2_d128, half_t, 128, kQuantE5m2)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_e5m2_d64, bf16_t, 64, kQuantE5m2)
AITER_DECODE_MMA_KERNEL(aiter_decode_mma_bf16_e5m2_d128, bf16_t, 128, kQuantE5m2)

// aiter-kernel-family: op=paged_decode_attention variant=mma.merge.{dt} symbol=aiter_decode_mma_merge_{dt} block=128 smem=0 dt=f16,bf16
AITER_ENTRY(aiter_decode_mma_merge_f16, kThreads, DecodeMergeParams, merge_splits<half_t>)
AITER_ENTRY(aiter_decode_mma_merge_bf16, kThreads, DecodeMergeParams, merge_splits<bf16_t>)

// The manifest's smem figures above are these structs' sizes.
static_assert(sizeof(Smem<64, kQuantNone>) == 99072 && sizeof(Smem<128, kQuantNone>) == 99072, "update smem");
static_assert(sizeof(Smem<64, kQuantE5m2>) == 99072 && sizeof(Smem<128, kQuantE5m2>) == 99072, "update smem");
static_assert(kOutFits<64, kQuantNone> && kOutFits<128, kQuantNone> && kOutFits<64, kQuantE5m2> &&
                  kOutFits<128, kQuantE5m2>,
              "the warps' O rows fit the ring");
