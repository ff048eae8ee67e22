// Fused MoE, the portable kernels (every target; NVIDIA uses its tensor-core
// stages from fused_moe_mma.cu where the shapes allow): the routing-weighted
// input gather, both expert GEMM stages on CUDA/vector cores, and the combine.
//
// Rows are the sorted token-expert pairs (moe_sorting): a tile of 32 rows lies
// in one expert block, whose expert block_experts names.  Tiles past num_valid,
// of no expert, or of an expert outside w1 / w2 exit at once, so the grid is
// sized by the upper bound of the rows and the launch needs no host sync.
// Stage 1: inter[r, n] = act(x_r . w1[e, n]) * (x_r . w1[e, I + n]), rounded
// to the dtype; stage 2: pair_out[p, n] = inter_r . w2[e, n], rounded.  Each
// stage's tile: 32 rows x 32 columns, K in slices of 32 through shared memory
// (fp32), 256 threads of 2 x 2 outputs.  Combine: out[t] = sum_j w_j y_j in fp32,
// in j order.  Finish: out = the fp32 sums the Triton stage 2 adds up itself.
#include "../common/numeric.h"
#include "../gemm/gemm_elements.h"
#include "moe_act.h"
#include "moe_combine.h"
#include "moe_params.h"

namespace {

constexpr int kTile = 32, kSlice = 32, kThreads = 256, kCombineThreads = 256;


// A if FIRST, else B (no <type_traits> in the AMD device build).
template <bool FIRST, class A, class B> struct Pick { using type = A; };
template <class A, class B> struct Pick<false, A, B> { using type = B; };

// The tile's expert, or -1 when the tile has nothing to do.
__device__ __forceinline__ int tile_expert(const FusedMoeParams &p, long long m0) {
  if (m0 >= p.num_valid[0]) return -1;
  const int e = p.block_experts[m0 / p.block];
  return e >= 0 && e < p.local_experts ? e : -1;
}

// Block-scaled fp8: the scale of weight row n (of n_rows an expert, k_total
// columns) for K group kg, as [experts, n_rows / 128, k_total / 128].
__device__ __forceinline__ float block_weight_scale(const float *scales, int e, long long n, int n_rows,
                                                    int k_total, int kg) {
  return scales[((long long)e * (n_rows / 128) + n / 128) * (k_total / 128) + kg];
}

// The sums of K group kg of a thread's 2 x 2 outputs (rows r0, r0 + 1; columns
// n0, n0 + 1), times their row and weight scales, into the totals; sums reset.
template <bool GATED>
__device__ __forceinline__ void promote(const FusedMoeParams &p, int e, long long r0, int n0, int kg,
                                        float (&g)[2][2], float (&u)[2][2], float (&gt)[2][2], float (&ut)[2][2]) {
  const int n_total = GATED ? p.inter : p.hidden, k_total = GATED ? p.hidden : p.inter;
  const int groups = k_total / 128;
  const float *rs = GATED ? p.x_scale : p.h_scale;
  const float *ws = GATED ? p.w1_scale : p.w2_scale;
  const int w_rows = GATED ? 2 * n_total : n_total;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const long long r = r0 + i < p.rows ? r0 + i : p.rows - 1;
    const float a = rs[r * groups + kg];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int n = n0 + j < n_total ? n0 + j : n_total - 1;
      gt[i][j] += g[i][j] * (a * block_weight_scale(ws, e, n, w_rows, k_total, kg));
      if (GATED) ut[i][j] += u[i][j] * (a * block_weight_scale(ws, e, n_total + n, w_rows, k_total, kg));
      g[i][j] = 0.0f, u[i][j] = 0.0f;
    }
  }
}

// Stage 1 (GATED) or 2 over one 32 x 32 tile.  A rows: the input rows of the
// tile's pairs (stage 1) or its inter rows (stage 2), of T, or for fp8 weights
// W their quantized copies (xq, hq) with a scale per row; W rows: w1's gate and
// up rows of the tile's columns, or w2's.  Outputs in T.
template <class T, class W, bool GATED>
__device__ __forceinline__ void stage_tile(const FusedMoeParams &p) {
  constexpr bool kFp8 = sizeof(W) == 1;
  using A = typename Pick<kFp8, W, T>::type;
  __shared__ float a_s[kTile][kSlice + 1], g_s[kTile][kSlice + 1], u_s[GATED ? kTile : 1][kSlice + 1];
  __shared__ const A *rows[kTile];
  const long long m0 = (long long)block_y() * kTile;
  const int e = tile_expert(p, m0);
  if (e < 0) return;
  const long long pairs = p.tokens * p.topk;
  const int n_total = GATED ? p.inter : p.hidden, k_total = GATED ? p.hidden : p.inter;
  const int n0 = block_x() * kTile, tid = thread_x();
  if (tid < kTile) {
    const long long r = m0 + tid, q = p.sorted[r];
    const A *src = nullptr;
    if (q < pairs && q >= 0) {
      if (kFp8)
        src = reinterpret_cast<const A *>(GATED ? p.xq : p.hq) + r * k_total;
      else if (!GATED)
        src = reinterpret_cast<const A *>(p.inter_buf) + r * p.inter;
      else if (p.weights_on_input)
        src = reinterpret_cast<const A *>(p.x_sorted) + r * p.hidden;
      else
        src = reinterpret_cast<const A *>(p.x) + (q / p.topk) * p.x_stride;
    }
    rows[tid] = src;
  }
  const W *w = static_cast<const W *>(GATED ? p.w1 : p.w2) + (long long)e * (GATED ? 2LL : 1LL) * n_total * k_total;
  const int tr = (tid / 16) * 2, tc = (tid % 16) * 2;
  float g[2][2] = {}, u[2][2] = {}, gt[2][2] = {}, ut[2][2] = {};
  sync_block();
  for (int k0 = 0; k0 < k_total; k0 += kSlice) {
    for (int i = tid; i < kTile * kSlice; i += kThreads) {
      const int r = i / kSlice, c = i % kSlice, k = k0 + c, n = n0 + r;
      a_s[r][c] = rows[r] != nullptr && k < k_total ? to_f32(rows[r][k]) : 0.0f;
      g_s[r][c] = n < n_total && k < k_total ? to_f32(w[(long long)n * k_total + k]) : 0.0f;
      if (GATED) u_s[r][c] = n < n_total && k < k_total ? to_f32(w[(long long)(n_total + n) * k_total + k]) : 0.0f;
    }
    sync_block();
#pragma unroll 8
    for (int c = 0; c < kSlice; ++c)
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          g[i][j] += a_s[tr + i][c] * g_s[tc + j][c];
          if (GATED) u[i][j] += a_s[tr + i][c] * u_s[tc + j][c];
        }
    sync_block();
    if (kFp8 && p.group > 0 && (k0 + kSlice) % p.group == 0)  // a 128-wide K group done: into the totals
      promote<GATED>(p, e, m0 + tr, n0 + tc, (k0 + kSlice) / p.group - 1, g, u, gt, ut);
  }
  if (kFp8 && p.group > 0) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) g[i][j] = gt[i][j], u[i][j] = ut[i][j];
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const long long r = m0 + tr + i, q = p.sorted[r];
    if (rows[tr + i] == nullptr) continue;
    const float row_scale = kFp8 && p.group == 0 ? (GATED ? p.x_scale : p.h_scale)[r] : 1.0f;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int n = n0 + tc + j;
      if (n >= n_total) continue;
      if (kFp8 && p.group == 0) {
        const float *ws = (GATED ? p.w1_scale : p.w2_scale) + (long long)e * (GATED ? 2 : 1) * n_total;
        g[i][j] *= row_scale * ws[n];
        if (GATED) u[i][j] *= row_scale * ws[n_total + n];
      }
      if (GATED)
        static_cast<T *>(p.inter_buf)[r * p.inter + n] = from_f32<T>(moe_gated(p.act, g[i][j], u[i][j]));
      else
        static_cast<T *>(p.pair_out)[q * p.hidden + n] = from_f32<T>(g[i][j]);
    }
  }
}

// fp8: stage input row r quantized to the weights' format with a dynamic
// scale (dynamic_scale: the CPU's rule), values first gathered in fp32: x[t]
// (times the pair's weight with weights_on_input) or inter row r.  In 16-byte
// packs where the rows allow: per channel quant_row_packed, 1 x 128 groups
// quant_groups_packed; otherwise element by element, the row read twice
// (amax, then codes), the second time mostly from L2.
template <class T>
__device__ __forceinline__ float quant_source(const FusedMoeParams &p, long long r, long long q, int i) {
  if (p.quant_source == 1) return to_f32(static_cast<const T *>(p.inter_buf)[r * p.inter + i]);
  const long long t = q / p.topk;
  const float v = to_f32(static_cast<const T *>(p.x)[t * p.x_stride + i]);
  return p.weights_on_input ? v * p.weights[t * p.weights_stride + q % p.topk] : v;
}

// Per channel, the common case: a row's values (times w) read once, in 16-byte
// packs kept in registers, a lane's loads all in flight together; codes written
// 8 at a time.  The same operations as the element-wise loops below (amax of
// |v w|, codes of (v w) * (1 / scale)), so the same codes.  The element loop,
// a row a block, waited out a load's latency for each value, twice: the two
// passes took 542 us at Mixtral fp8 T4096 and 470 at Qwen3-30B T4096 on an
// H100, now 218 and 120 (docs/performance_moe.md, run 12).  LANES: 32 (a team
// a row, for rows of up to kMoeQuantShortRow) or the block's 256.
constexpr int kQuantPacks = 8;  // a lane's packs: rows of up to 8 x 8 x 256 = 16384 values
static_assert(kQuantPacks * kCombineCols * 32 == kMoeQuantShortRow, "a team's packs hold a short row");

template <int LANES>
__device__ __forceinline__ bool quant_packs_fit(const void *src, const unsigned char *codes, int n) {
  return n % kCombineCols == 0 && n <= kQuantPacks * kCombineCols * LANES && aligned16(src) && aligned8(codes);
}

template <int LANES>
__device__ __forceinline__ float lanes_max(float v, float *scratch) {
  if (LANES == kCombineThreads) {
    v = block_max(v, scratch);
  } else {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, shfl_xor(v, m));  // within 32 lanes (also on 64-wide waves)
  }
  return v;
}

// KIND: the code format as a constant, so that quantize() is one conversion (e4m3fn on sm_89+).
template <class T, int KIND, int LANES>
__device__ __forceinline__ void quant_row_packed(const T *src, float w, int n, unsigned char *codes, float *scale,
                                                 int lane, float *scratch) {
  Pack8<T> pack[kQuantPacks];
#pragma unroll
  for (int c = 0; c < kQuantPacks; ++c) {
    const int i = (c * LANES + lane) * kCombineCols;
    if (i < n) pack[c] = *reinterpret_cast<const Pack8<T> *>(src + i);
  }
  float amax = 0.0f;
#pragma unroll
  for (int c = 0; c < kQuantPacks; ++c)
    if ((c * LANES + lane) * kCombineCols < n)
#pragma unroll
      for (int j = 0; j < kCombineCols; ++j) amax = fmaxf(amax, fabsf(to_f32(pack[c].v[j]) * w));
  amax = lanes_max<LANES>(amax, scratch);
  const float s = dynamic_scale(amax, KIND), inv = 1.0f / s;
#pragma unroll
  for (int c = 0; c < kQuantPacks; ++c) {
    const int i = (c * LANES + lane) * kCombineCols;
    if (i >= n) continue;
    uint32_t word[2] = {0u, 0u};
#pragma unroll
    for (int j = 0; j < kCombineCols; ++j)
      word[j / 4] |= uint32_t(quantize(to_f32(pack[c].v[j]) * w * inv, KIND)) << (8 * (j % 4));
    *reinterpret_cast<Codes8 *>(codes + i) = Codes8{word[0], word[1]};
  }
  if (lane == 0) *scale = s;
}

// Where row r of the stage's input comes from: src null where r has no pair
// (past the valid rows, or padding).
template <class T>
struct QuantRow {
  const T *src;
  float w;  // the pair's routing weight, with weights_on_input (else 1)
  long long q;
  unsigned char *codes;
};

// Row r's source, given its pair q (the sorted entry: padding rows hold none).
template <class T>
__device__ __forceinline__ QuantRow<T> quant_row_at(const FusedMoeParams &p, long long r, long long q) {
  QuantRow<T> row{nullptr, 1.0f, -1, nullptr};
  if (q < 0 || q >= p.tokens * p.topk) return row;
  const int n = p.quant_source == 1 ? p.inter : p.hidden;
  const long long t = q / p.topk;
  row.src = p.quant_source == 1 ? static_cast<const T *>(p.inter_buf) + r * p.inter
                                : static_cast<const T *>(p.x) + t * p.x_stride;
  if (p.quant_source != 1 && p.weights_on_input) row.w = p.weights[t * p.weights_stride + q % p.topk];
  row.q = q;
  row.codes = static_cast<unsigned char *>(p.quant_source == 1 ? p.hq : p.xq) + r * n;
  return row;
}

template <class T>
__device__ __forceinline__ QuantRow<T> quant_row_of(const FusedMoeParams &p, long long r) {
  return r < p.num_valid[0] ? quant_row_at<T>(p, r, p.sorted[r]) : QuantRow<T>{nullptr, 1.0f, -1, nullptr};
}

// Block-scaled (1 x 128 groups): a warp quantizes a row in chunks of
// 2 kChunkPacks groups, a 16-byte pack (8 values) a lane, the chunk's packs
// loaded together; a group is 16 lanes' packs, its amax reduced over them, 8
// codes a lane.  The same operations as quant_groups_elementwise, so the same
// codes.  Before (H200, ncu, DeepSeek-V3 T 4096): a block a row with 128
// registers (the kernel shared with the per-channel path), two blocks an SM,
// 24% of the DRAM bandwidth: 414 us (x) + 279 us (h); now 290 + 94 us.  8 packs
// a lane took 118 registers and 353 + 114 us (docs/performance_moe.md run 40).
constexpr int kChunkPacks = 4;
constexpr int kGroupLanes = 128 / kCombineCols;  // 16

__device__ __forceinline__ bool quant_groups_fit(const void *src, const unsigned char *codes, int n) {
  return n % 128 == 0 && aligned16(src) && aligned8(codes);
}

// Groups [g0, g0 + 2 kChunkPacks) of a row (those below `groups`).  Every lane
// runs every shuffle: a chunk's last pack may hold one group, not two.
template <class T, int KIND>
__device__ __forceinline__ void quant_groups_chunk(const T *src, float w, int groups, int g0, unsigned char *codes,
                                                   float *scales, int lane) {
  const int half = lane / kGroupLanes, offset = (lane % kGroupLanes) * kCombineCols;
  Pack8<T> pack[kChunkPacks];
#pragma unroll
  for (int c = 0; c < kChunkPacks; ++c) {
    const int g = g0 + 2 * c + half;
    if (g < groups) pack[c] = *reinterpret_cast<const Pack8<T> *>(src + g * 128 + offset);
  }
#pragma unroll
  for (int c = 0; c < kChunkPacks; ++c) {
    const int g = g0 + 2 * c + half;
    if (g0 + 2 * c >= groups) break;  // the same for the whole warp
    float amax = 0.0f;
    if (g < groups)
#pragma unroll
      for (int j = 0; j < kCombineCols; ++j) amax = fmaxf(amax, fabsf(to_f32(pack[c].v[j]) * w));
#pragma unroll
    for (int m = kGroupLanes / 2; m > 0; m >>= 1) amax = fmaxf(amax, shfl_xor(amax, m));  // within 16 lanes
    if (g >= groups) continue;
    const float scale = dynamic_scale(amax, KIND), inv = 1.0f / scale;
    uint32_t word[2] = {0u, 0u};
#pragma unroll
    for (int j = 0; j < kCombineCols; ++j)
      word[j / 4] |= uint32_t(quantize(to_f32(pack[c].v[j]) * w * inv, KIND)) << (8 * (j % 4));
    *reinterpret_cast<Codes8 *>(codes + g * 128 + offset) = Codes8{word[0], word[1]};
    if (offset == 0) scales[g] = scale;
  }
}

// Element by element within a team of 32 lanes (short rows whose packs do not fit).
template <class T>
__device__ __forceinline__ void quant_row_team(const FusedMoeParams &p, long long r, long long q, int n,
                                               unsigned char *codes, float *scale, int lane) {
  float amax = 0.0f;
  for (int i = lane; i < n; i += 32) amax = fmaxf(amax, fabsf(quant_source<T>(p, r, q, i)));
  amax = lanes_max<32>(amax, nullptr);
  const float s = dynamic_scale(amax, p.quant), inv = 1.0f / s;
  for (int i = lane; i < n; i += 32) codes[i] = quantize(quant_source<T>(p, r, q, i) * inv, p.quant);
  if (lane == 0) *scale = s;
}

// Block-scaled, element by element (rows whose packs do not fit): a warp a
// row, 32 lanes a group, 4 values a lane.
template <class T>
__device__ __forceinline__ void quant_groups_elementwise(const FusedMoeParams &p, long long r, long long q, int n,
                                                         unsigned char *codes, float *scales) {
  const int lane = thread_x() % 32;
  for (int grp = 0; grp < n / 128; ++grp) {
    float v[4], amax = 0.0f;
#pragma unroll
    for (int c = 0; c < 4; ++c) amax = fmaxf(amax, fabsf(v[c] = quant_source<T>(p, r, q, grp * 128 + c * 32 + lane)));
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) amax = fmaxf(amax, shfl_xor(amax, m));
    const float scale = dynamic_scale(amax, p.quant), inv = 1.0f / scale;
#pragma unroll
    for (int c = 0; c < 4; ++c) codes[grp * 128 + c * 32 + lane] = quantize(v[c] * inv, p.quant);
    if (lane == 0) scales[grp] = scale;
  }
}

// A row a block, element by element, per channel (rows whose packs do not fit).
template <class T>
__device__ __forceinline__ void quant_row_block(const FusedMoeParams &p, long long r, long long q, int n,
                                                unsigned char *codes, float *scale, float *scratch) {
  float amax = 0.0f;
  for (int i = thread_x(); i < n; i += kCombineThreads) amax = fmaxf(amax, fabsf(quant_source<T>(p, r, q, i)));
  amax = block_max(amax, scratch);
  const float s = dynamic_scale(amax, p.quant), inv = 1.0f / s;
  for (int i = thread_x(); i < n; i += kCombineThreads) codes[i] = quantize(quant_source<T>(p, r, q, i) * inv, p.quant);
  if (thread_x() == 0) *scale = s;
}

// Row r of the stage's input, per channel, quantized by LANES lanes (lane: this thread's).
template <class T, int LANES>
__device__ __forceinline__ void quant_row(const FusedMoeParams &p, long long r, int lane, float *scratch) {
  const QuantRow<T> row = quant_row_of<T>(p, r);
  if (row.src == nullptr) return;
  const int n = p.quant_source == 1 ? p.inter : p.hidden;
  float *scale = (p.quant_source == 1 ? p.h_scale : p.x_scale) + r;
  if (quant_packs_fit<LANES>(row.src, row.codes, n)) {
    if (p.quant == kQuantE4m3fn)
      quant_row_packed<T, kQuantE4m3fn, LANES>(row.src, row.w, n, row.codes, scale, lane, scratch);
    else
      quant_row_packed<T, kQuantE4m3fnuz, LANES>(row.src, row.w, n, row.codes, scale, lane, scratch);
    return;
  }
  if (LANES == 32)
    quant_row_team<T>(p, r, row.q, n, row.codes, scale, lane);
  else
    quant_row_block<T>(p, r, row.q, n, row.codes, scale, scratch);
}

// moe_quant, per channel: kMoeQuantTeams rows a block where they are short
// (moe_quant_short_rows), else a row a block.
template <class T>
__device__ __forceinline__ void quant_rows(const FusedMoeParams &p) {
  __shared__ float scratch[32];
  const int n = p.quant_source == 1 ? p.inter : p.hidden;
  if (n <= kMoeQuantShortRow)
    quant_row<T, 32>(p, (long long)block_x() * kMoeQuantTeams + thread_x() / 32, thread_x() % 32, scratch);
  else
    quant_row<T, kCombineThreads>(p, block_x(), thread_x(), scratch);
}

// moe_quant_groups, 1 x 128 groups: kMoeQuantWarpRows rows a warp, one after
// another, their pairs loaded together first.  (A kernel of its own: in one
// function with the per-channel path, ptxas gave both that path's 128
// registers.)
template <class T>
__device__ __forceinline__ void quant_groups(const FusedMoeParams &p) {
  const int lane = thread_x() % 32, n = p.quant_source == 1 ? p.inter : p.hidden;
  const long long r0 = ((long long)block_x() * (kCombineThreads / 32) + thread_x() / 32) * kMoeQuantWarpRows;
  const long long valid = p.num_valid[0];
  if (r0 >= valid) return;
  // Lane j holds row r0 + j's pair (a sorted entry is an int).
  const int mine = lane < kMoeQuantWarpRows && r0 + lane < valid ? p.sorted[r0 + lane] : -1;
#pragma unroll 1
  for (int j = 0; j < kMoeQuantWarpRows; ++j) {
    const QuantRow<T> row = quant_row_at<T>(p, r0 + j, shfl_from(mine, j));
    if (row.src == nullptr) continue;
    float *scales = (p.quant_source == 1 ? p.h_scale : p.x_scale) + (r0 + j) * (n / 128);
    if (!quant_groups_fit(row.src, row.codes, n)) {
      quant_groups_elementwise<T>(p, r0 + j, row.q, n, row.codes, scales);
      continue;
    }
    for (int g0 = 0; g0 < n / 128; g0 += 2 * kChunkPacks)
      if (p.quant == kQuantE4m3fn)
        quant_groups_chunk<T, kQuantE4m3fn>(row.src, row.w, n / 128, g0, row.codes, scales, lane);
      else
        quant_groups_chunk<T, kQuantE4m3fnuz>(row.src, row.w, n / 128, g0, row.codes, scales, lane);
  }
}

// weights_on_input: x_sorted[r] = x[t] * w[t, j], rounded, for the valid rows.
template <class T>
__device__ __forceinline__ void gather_scaled(const FusedMoeParams &p) {
  const long long r = block_x(), pairs = p.tokens * p.topk;
  if (r >= p.num_valid[0]) return;
  const long long q = p.sorted[r];
  if (q < 0 || q >= pairs) return;
  const long long t = q / p.topk;
  const float w = p.weights[t * p.weights_stride + q % p.topk];
  const T *x = static_cast<const T *>(p.x) + t * p.x_stride;
  T *dst = static_cast<T *>(p.x_sorted) + r * p.hidden;
  for (int i = thread_x(); i < p.hidden; i += kCombineThreads) dst[i] = from_f32<T>(to_f32(x[i]) * w);
}

// The combine: a block's thread sums kCombineCols columns of token block_x()
// (moe_combine.h).
template <class T>
__device__ __forceinline__ void combine(const FusedMoeParams &p) {
  combine_cols<T>(p, block_x(), (block_y() * kCombineThreads + thread_x()) * kCombineCols);
}

// out[t, n] = acc[t, n] rounded to the dtype, acc = (float *)pair_out [tokens,
// hidden]: the sums stage 2 added up in fp32 (the Triton stages' atomic
// epilogue), kCombineCols columns a thread as in combine.
template <class T>
__device__ __forceinline__ void finish(const FusedMoeParams &p) {
  const long long t = block_x();
  const int n0 = (block_y() * kCombineThreads + thread_x()) * kCombineCols;
  if (n0 >= p.hidden) return;
  const float *acc = static_cast<const float *>(p.pair_out) + t * p.hidden + n0;
  T *out = static_cast<T *>(p.out) + t * p.out_stride + n0;
  const bool packed = n0 + kCombineCols <= p.hidden && aligned16(acc) && aligned16(out);
  if (packed) {  // two 16-byte loads, one 16-byte store
    const Pack8<float> a = *reinterpret_cast<const Pack8<float> *>(acc);
    Pack8<T> v;
    for (int c = 0; c < kCombineCols; ++c) v.v[c] = from_f32<T>(a.v[c]);
    *reinterpret_cast<Pack8<T> *>(out) = v;
    return;
  }
  const int cols = n0 + kCombineCols <= p.hidden ? kCombineCols : p.hidden - n0;
  for (int c = 0; c < cols; ++c) out[c] = from_f32<T>(acc[c]);
}

}  // namespace

#define PORTABLE(dt, T)                                                                            \
  AITER_ENTRY(aiter_moe_stage1_##dt, kThreads, FusedMoeParams, (stage_tile<T, T, true>))           \
  AITER_ENTRY(aiter_moe_stage2_##dt, kThreads, FusedMoeParams, (stage_tile<T, T, false>))          \
  AITER_ENTRY(aiter_moe_gather_##dt, kCombineThreads, FusedMoeParams, gather_scaled<T>)            \
  AITER_ENTRY(aiter_moe_combine_##dt, kCombineThreads, FusedMoeParams, combine<T>)                 \
  AITER_ENTRY(aiter_moe_finish_##dt, kCombineThreads, FusedMoeParams, finish<T>)                   \
  AITER_ENTRY(aiter_moe_quant_##dt, kCombineThreads, FusedMoeParams, quant_rows<T>)                \
  AITER_ENTRY(aiter_moe_quant_groups_##dt, kCombineThreads, FusedMoeParams, quant_groups<T>)
PORTABLE(bf16, bf16_t)
PORTABLE(f16, half_t)
#define PORTABLE_FP8(wdt, W, dt, T)                                                                 \
  AITER_ENTRY(aiter_moe_stage1_##wdt##_##dt, kThreads, FusedMoeParams, (stage_tile<T, W, true>))   \
  AITER_ENTRY(aiter_moe_stage2_##wdt##_##dt, kThreads, FusedMoeParams, (stage_tile<T, W, false>))
PORTABLE_FP8(e4m3fn, e4m3fn_t, bf16, bf16_t)
PORTABLE_FP8(e4m3fn, e4m3fn_t, f16, half_t)
PORTABLE_FP8(e4m3fnuz, e4m3fnuz_t, bf16, bf16_t)
PORTABLE_FP8(e4m3fnuz, e4m3fnuz_t, f16, half_t)

// Variant names: <dtype>.  Tiles of 32 rows x 32 columns (stage 1 and 2),
// a row a block (gather), a token's 2048 columns a block (combine; grid x over tokens).
// aiter-kernel-family: op=moe_stage1 variant={dt}.portable symbol=aiter_moe_stage1_{dt} block=256 smem=0 dt=bf16,f16
// aiter-kernel-family: op=moe_stage2 variant={dt}.portable symbol=aiter_moe_stage2_{dt} block=256 smem=0 dt=bf16,f16
// aiter-kernel-family: op=moe_gather variant={dt} symbol=aiter_moe_gather_{dt} block=256 smem=0 dt=bf16,f16
// aiter-kernel-family: op=moe_combine variant={dt} symbol=aiter_moe_combine_{dt} block=256 smem=0 dt=bf16,f16
// aiter-kernel-family: op=moe_finish variant={dt} symbol=aiter_moe_finish_{dt} block=256 smem=0 dt=bf16,f16
// fp8 weights: stages <weights>.<dtype>.portable; moe_quant <dtype> (the format a runtime parameter).
// aiter-kernel-family: op=moe_quant variant={dt} symbol=aiter_moe_quant_{dt} block=256 smem=0 dt=bf16,f16
// aiter-kernel-family: op=moe_quant_groups variant={dt} symbol=aiter_moe_quant_groups_{dt} block=256 smem=0 dt=bf16,f16
// aiter-kernel-family: op=moe_stage1 variant={wdt}.{dt}.portable symbol=aiter_moe_stage1_{wdt}_{dt} block=256 smem=0 wdt=e4m3fn,e4m3fnuz dt=bf16,f16
// aiter-kernel-family: op=moe_stage2 variant={wdt}.{dt}.portable symbol=aiter_moe_stage2_{wdt}_{dt} block=256 smem=0 wdt=e4m3fn,e4m3fnuz dt=bf16,f16
