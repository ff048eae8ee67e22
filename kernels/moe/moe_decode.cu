// Fused MoE for few pairs (decode): the whole layer in one kernel whose blocks
// are all resident (a cooperative launch, libaiter/gpu/moe_decode.cpp) and
// meet at grid barriers between its phases, instead of the sort, the
// quantizations, two stages and the combine as six kernels.  At T 1 that chain
// alone costs 17-35 us (docs/performance_moe.md, run 37), more than Qwen3-30B's
// experts take to stream.
//
// Each block first lists the experts the pairs use, each with its pairs in
// increasing order (the same table in every block, from topk_ids; no sort).
// Then, each phase's work spread over all blocks or warps:
//   1. (fp8) x quantized per token, a block a row (the chain's codes and scales);
//   2. stage 1: a warp takes 8 columns of inter of one expert, its 8 gate and 8
//      up rows of w1 as the M side of mma.sync and that expert's pairs as N
//      (16 a pass over K, in two products of 8), and writes act(gate) * up;
//   3. (fp8) those rows quantized per pair, a block a row;
//   4. stage 2: a warp takes 16 rows of w2 (of hidden) of one expert, its pairs
//      as N;
//   5. the combine, a thread 8 columns of a token (moe_combine.h).
// Where items are few (T 1 to 4), a team of 2, 4 or 8 warps of a block takes an
// item, each warp a part of its K, and the first adds the others' sums from
// shared memory: the items then spread evenly over the warps, and stage 2 needs
// no fp32 partial rows (whose combine took 9-10 us at Mixtral's T 1; run 45 of
// docs/performance_moe.md; the launcher picks the sizes).
// The weights stream through registers, never shared memory: a lane loads 16
// bytes of each of its two rows a 64-byte K step, and the same 16 bytes of its
// column's input row; since a product's sum does not depend on the order of
// K, those bytes serve as the lane's fragments as they are (mma.h's layout with
// K permuted the same way for A and B).  kSteps steps' loads go out together.
// What a phase reads that an earlier phase wrote (other blocks' rows and
// scales) is loaded from L2 (load_row<true>, ld.global.cg): the SM's L1 is not
// coherent with other SMs' writes, and the read-only path (ld.global.nc) is
// only for data no thread writes during the launch.
//
// NVIDIA only (mma.sync; fp8 products from sm_89); the launcher checks the
// shapes: hidden and inter multiples of 64, 16-byte aligned rows.
#include <cooperative_groups.h>

#include "../attention/fp8_widen.h"
#include "../common/numeric.h"
#include "../common/phase_clock.h"
#include "../gemm/mma.h"
#include "moe_act.h"
#include "moe_combine.h"
#include "moe_params.h"

namespace {

constexpr int kThreads = kMoeDecodeThreads, kWarps = kThreads / 32;
constexpr int kSteps = kMoeDecodeSteps;  // 64-byte K steps whose loads a warp issues at once
constexpr int kGroups = 2;      // groups of 8 pairs a pass over K multiplies
constexpr int kStepBytes = 64;  // a K step of a row: 4 lanes x 16 bytes
// fp8 items of at most this many pairs read their inputs decoded to fp16
// (fp8_rows_times_cols), the others as codes: at 1-2 pairs the conversions
// saved count most, at 4 and more the doubled input bytes.  H200, 2026-11-29
// (docs/performance_moe.md, run 47): layers up to 4% faster; with every item on
// decoded inputs, Mixtral's T 16-128 were 3-45% slower.
constexpr int kFewPairs = 2;

// The experts in use, in increasing order, each with its pairs in increasing order.
struct ExpertTable {
  int active;                     // experts with pairs
  int expert[kMoeMaxExperts];     // active expert a: its index in w1 / w2 (local)
  int first[kMoeMaxExperts + 1];  // its pairs: pair[first[a] .. first[a + 1])
  int pair[kMoeDecodeMaxPairs];
};

// The warps of a block that share an item, each summing a part of its K.
struct WarpTeam {
  int parts, part;    // its size (1, 2, 4 or 8) and this warp's place in it
  int index, count;   // the team's index over the grid, the teams of the grid
  int barrier;        // its named barrier (0 is __syncthreads's)
};

__device__ __forceinline__ WarpTeam warp_team(int parts) {
  const int warp = int(threadIdx.x) / 32, per_block = kWarps / parts;
  return {parts, warp % parts, int(blockIdx.x) * per_block + warp / parts, int(gridDim.x) * per_block,
          1 + warp / parts};
}

__device__ __forceinline__ void team_sync(const WarpTeam &team) {
  asm volatile("bar.sync %0, %1;" ::"r"(team.barrier), "r"(team.parts * 32) : "memory");
}

// This warp's K steps of [0, steps): part `part` of `parts` contiguous ranges.
__device__ __forceinline__ void team_steps(const WarpTeam &team, int steps, int &s0, int &s1) {
  const int per = (steps + team.parts - 1) / team.parts;
  s0 = min(steps, team.part * per), s1 = min(steps, s0 + per);
}

// Each lane's sums of a team's parts, added in the first warp (its own first,
// then the others in order, the same order every call); true there.
template <int G>
__device__ __forceinline__ bool team_sum(const WarpTeam &team, float (&acc)[G][4]) {
  __shared__ float sums[kWarps][kGroups * 4][32];
  if (team.parts == 1) return true;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (team.part > 0)
#pragma unroll
    for (int i = 0; i < G * 4; ++i) sums[warp][i][lane] = acc[i / 4][i % 4];
  team_sync(team);
  if (team.part == 0)
    for (int r = 1; r < team.parts; ++r)
#pragma unroll
      for (int i = 0; i < G * 4; ++i) acc[i / 4][i % 4] += sums[warp + r][i][lane];
  team_sync(team);  // (the team's next pass writes them again)
  return team.part == 0;
}

// Exclusive prefix sums of v[0..n) in place (n <= 4 x kThreads); the total.
__device__ int block_scan(int *v, int n, int *warp_sums) {
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  int mine[4], sum = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) mine[i] = 4 * t + i < n ? v[4 * t + i] : 0, sum += mine[i];
  int inclusive = sum;
#pragma unroll
  for (int m = 1; m < 32; m <<= 1) {
    const int o = __shfl_up_sync(0xffffffffu, inclusive, m);
    if (lane >= m) inclusive += o;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  int before = inclusive - sum, total = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += warp_sums[w];
    total += warp_sums[w];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (4 * t + i < n) v[4 * t + i] = before, before += mine[i];
  __syncthreads();
  return total;
}

// Pair q's expert as an index into w1 / w2 (the local experts), or -1 where the
// pair adds nothing (an id out of range, an expert outside the mask).
// local_of: with a mask, each global expert's local index.
__device__ __forceinline__ int pair_expert(const FusedMoeParams &p, long long q, const int *local_of) {
  const long long t = q / p.topk;
  const int e = p.ids[t * p.ids_stride + q % p.topk];
  if (!expert_used(p, e)) return -1;
  const int local = p.mask != nullptr ? local_of[e] : e;
  return local < p.local_experts ? local : -1;
}

// Every block lists the same table: counts per local expert, their offsets,
// the used experts' places, then each pair in its expert's list.
__device__ void build_table(const FusedMoeParams &p, ExpertTable &tab, int *scratch) {
  __shared__ int local_of[kMoeMaxExperts], count[kMoeMaxExperts], offset[kMoeMaxExperts], place[kMoeMaxExperts];
  const int pairs = int(p.tokens * p.topk), locals = p.local_experts;
  if (p.mask != nullptr) {
    for (int e = threadIdx.x; e < p.experts; e += kThreads) local_of[e] = mask_on(p, e) ? 1 : 0;
    __syncthreads();
    block_scan(local_of, p.experts, scratch);
  }
  for (int e = threadIdx.x; e < locals; e += kThreads) count[e] = 0;
  __syncthreads();
  for (int q = threadIdx.x; q < pairs; q += kThreads) {
    const int e = pair_expert(p, q, local_of);
    if (e >= 0) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < locals; e += kThreads) offset[e] = count[e], place[e] = count[e] > 0;
  __syncthreads();
  const int listed = block_scan(offset, locals, scratch);
  const int active = block_scan(place, locals, scratch);
  for (int e = threadIdx.x; e < locals; e += kThreads) {
    if (count[e] > 0) tab.expert[place[e]] = e, tab.first[place[e]] = offset[e];
    count[e] = 0;  // now each expert's fill counter
  }
  if (threadIdx.x == 0) tab.first[active] = listed, tab.active = active;
  __syncthreads();
  // The lists in increasing pair order, by one warp 32 pairs at a time, so that
  // every block holds the same table (the quantization of h deals pairs out by
  // their place in it).
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    for (int base = 0; base < pairs; base += 32) {
      const int q = base + lane, e = q < pairs ? pair_expert(p, q, local_of) : -1;
      const unsigned same = __match_any_sync(0xffffffffu, e);
      const int before = __popc(same & ((1u << lane) - 1u));
      if (e >= 0) tab.pair[offset[e] + count[e] + before] = q;
      __syncwarp();
      if (e >= 0 && before == 0) count[e] += __popc(same);
      __syncwarp();
    }
  }
  __syncthreads();
}

// ---- quantization of a row (fp8): moe_quant's codes and scale ----------------
// Row src[0..n) (n a multiple of 8, 16-byte aligned) by one block, 16-byte packs
// held in registers where the row fits (n <= kHeldValues), else read again.
// The codes go to `codes` and, decoded, to `decoded` as fp16 (every e4m3 value is
// exact in fp16): the products widen them to fp16 anyway (sm_90 has no fp8
// mma.sync), and decoding them once here spares the items of few pairs their
// conversions of them.  decoded may be src itself: each thread writes only the
// values it read.
constexpr int kHeldPacks = 4, kHeldValues = kHeldPacks * kCombineCols * kThreads;

template <class T, int KIND>
__device__ __noinline__ void quant_row(const T *src, int n, unsigned char *codes, half_t *decoded, float *scale,
                                      float *scratch) {
  Pack8<T> held[kHeldPacks];
  auto load = [&](int c0) {
#pragma unroll
    for (int c = 0; c < kHeldPacks; ++c) {
      const int i = c0 + (c * kThreads + threadIdx.x) * kCombineCols;
      if (i < n) held[c] = load_row<true>(reinterpret_cast<const Pack8<T> *>(src + i));
    }
  };
  float amax = 0.0f;
  for (int c0 = 0; c0 < n; c0 += kHeldValues) {
    load(c0);
#pragma unroll
    for (int c = 0; c < kHeldPacks; ++c)
      if (c0 + (c * kThreads + threadIdx.x) * kCombineCols < n)
#pragma unroll
        for (int j = 0; j < kCombineCols; ++j) amax = fmaxf(amax, fabsf(to_f32(held[c].v[j])));
  }
  amax = block_max(amax, scratch);
  const float s = dynamic_scale(amax, KIND), inv = 1.0f / s;
  for (int c0 = 0; c0 < n; c0 += kHeldValues) {
    if (n > kHeldValues) load(c0);
#pragma unroll
    for (int c = 0; c < kHeldPacks; ++c) {
      const int i = c0 + (c * kThreads + threadIdx.x) * kCombineCols;
      if (i >= n) continue;
      uint32_t pair[4], word[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        pair[j] = quantize2(to_f32(held[c].v[2 * j]) * inv, to_f32(held[c].v[2 * j + 1]) * inv, KIND);
        word[j] = fp8_pair<kQuantE4m3fn, 0, 1>(pair[j]);
      }
      *reinterpret_cast<Codes8 *>(codes + i) = Codes8{pair[0] | pair[1] << 16, pair[2] | pair[3] << 16};
      *reinterpret_cast<uint4 *>(decoded + i) = make_uint4(word[0], word[1], word[2], word[3]);
    }
  }
  if (threadIdx.x == 0) *scale = s;
  __syncthreads();  // (scratch and held rows reused by the next row)
}

// ---- the products ---------------------------------------------------------------
// 16 bytes of an input row: from L2 where this launch wrote it (FRESH: the SM's
// L1 may hold a stale copy), else through L1 (x, which every warp of an SM reads).
template <bool FRESH>
__device__ __forceinline__ uint4 load_input(const char *p) {
  return FRESH ? load_row<true>(reinterpret_cast<const uint4 *>(p)) : load_cached(p);
}

// This lane's 16 bytes of weight rows w0 and w8 at K step s (zero from step s1
// on); returns the step's byte offset in a row, which the inputs share.
__device__ __forceinline__ long long load_weight_step(const char *w0, const char *w8, int s, int s1, uint4 &a0,
                                                      uint4 &a8) {
  const long long at = (long long)s * kStepBytes + (threadIdx.x % 4) * 16;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  a0 = s < s1 ? load_stream(w0 + at) : zero;
  a8 = s < s1 ? load_stream(w8 + at) : zero;
  return at;
}

// acc[g] += (16 weight rows: this lane's rows g and g + 8 at w0 / w8) x (group
// g's 8 columns: this lane's column's input row at col[g], null for none), over
// the K steps [s0, s1) of 64 bytes.  W: the weights' (and inputs') element;
// FRESH: the inputs were written in this launch (load_row), else they are
// read through L1 (x, which every warp of an SM reads).
template <class W, bool FRESH, int G>
__device__ __forceinline__ void rows_times_cols(const char *w0, const char *w8, const char *const (&col)[G], int s0,
                                                int s1, float (&acc)[G][4]) {
  using Mma = MmaOf<W>;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  for (int s = s0; s < s1; s += kSteps) {
    uint4 a0[kSteps], a8[kSteps], b[G][kSteps];
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const bool in = s + u < s1;
      const long long at = load_weight_step(w0, w8, s + u, s1, a0[u], a8[u]);
#pragma unroll
      for (int g = 0; g < G; ++g)
        b[g][u] = !in || col[g] == nullptr ? zero : load_input<FRESH>(col[g] + at);
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (s + u >= s1) continue;
        Mma::run(acc[g], a0[u].x, a8[u].x, a0[u].y, a8[u].y, b[g][u].x, b[g][u].y);
        Mma::run(acc[g], a0[u].z, a8[u].z, a0[u].w, a8[u].w, b[g][u].z, b[g][u].w);
      }
  }
}

// The same for fp8 weights against fp16 inputs (the fp8 inputs decoded,
// quant_row): a lane's 16 weight bytes of a row a K step widen to 8 fp16 pairs
// (cvt.rn.f16x2.e4m3x2, exact), its column's 16 inputs come as 32 bytes, and
// the products run as four m16n8k16 in fp16, which is what ptxas makes of an
// fp8 mma.sync on sm_90, less the inputs' conversions.  Lane t's K positions
// 4m..4m+3 of its 16 feed product m: the first pair as k 2t, 2t + 1, the second
// as k 2t + 8, 2t + 9, for the weights and the inputs alike.  One group of 8
// columns: item_products takes it for items of 1 or 2 pairs (kFewPairs).
template <bool FRESH>
__device__ __forceinline__ void fp8_rows_times_cols(const char *w0, const char *w8, const char *col, int s0, int s1,
                                                    float (&acc)[4]) {
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  for (int s = s0; s < s1; s += kSteps) {
    uint4 a0[kSteps], a8[kSteps], b[kSteps][2];
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const bool in = s + u < s1;
      const long long at = load_weight_step(w0, w8, s + u, s1, a0[u], a8[u]);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const char *c = col + 2 * at + 16 * h;
        b[u][h] = !in || col == nullptr ? zero : load_input<FRESH>(c);
      }
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      if (s + u >= s1) continue;
      const uint32_t r0[4] = {a0[u].x, a0[u].y, a0[u].z, a0[u].w}, r8[4] = {a8[u].x, a8[u].y, a8[u].z, a8[u].w};
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        uint32_t lo0, hi0, lo8, hi8;
        fp8_pairs<kQuantE4m3fn, 0, 1, 2, 3>(r0[m], lo0, hi0);
        fp8_pairs<kQuantE4m3fn, 0, 1, 2, 3>(r8[m], lo8, hi8);
        const uint4 &in = b[u][m / 2];
        MmaOf<half_t>::run(acc, lo0, lo8, hi0, hi8, m % 2 ? in.z : in.x, m % 2 ? in.w : in.y);
      }
    }
  }
}

// A team's item: 16 weight rows of expert `a` (the table's place) of `steps`
// K steps against its pairs in passes of kGroups x 8, this warp its part of
// the steps; `input` gives a pair's input row (fp8: its codes) and `decoded`
// (fp8 only) its values in fp16, `store` takes (pair slot's pair, the lane's two
// sums of it) for each of the lane's two columns in each group (in the team's
// first warp, which holds the whole sums).
template <class W, bool FRESH, class Input, class Decoded, class Store>
__device__ __forceinline__ void item_products(const ExpertTable &tab, const WarpTeam &team, int a, const char *w0,
                                              const char *w8, int steps, Input input, Decoded decoded, Store store) {
  const int first = tab.first[a], count = tab.first[a + 1] - first, lane = threadIdx.x % 32;
  int s0, s1;
  team_steps(team, steps, s0, s1);
  for (int n0 = 0; n0 < count; n0 += kGroups * 8) {
    const int slot = n0 + lane / 4;  // this lane's column in group 0
    if (count - n0 > 8) {
      const char *col[2] = {input(tab.pair[first + slot]),
                            slot + 8 < count ? input(tab.pair[first + slot + 8]) : nullptr};
      float acc[2][4] = {};
      rows_times_cols<W, FRESH, 2>(w0, w8, col, s0, s1, acc);
      if (!team_sum(team, acc)) continue;
#pragma unroll
      for (int g = 0; g < 2; ++g)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int c = n0 + g * 8 + 2 * (lane % 4) + h;
          if (c < count) store(tab.pair[first + c], acc[g][h], acc[g][2 + h]);
        }
    } else {
      float acc[1][4] = {};
      if (sizeof(W) == 1 && count <= kFewPairs) {
        fp8_rows_times_cols<FRESH>(w0, w8, slot < count ? decoded(tab.pair[first + slot]) : nullptr, s0, s1, acc[0]);
      } else {
        const char *col[1] = {slot < count ? input(tab.pair[first + slot]) : nullptr};
        rows_times_cols<W, FRESH, 1>(w0, w8, col, s0, s1, acc);
      }
      if (!team_sum(team, acc)) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = n0 + 2 * (lane % 4) + h;
        if (c < count) store(tab.pair[first + c], acc[0][h], acc[0][2 + h]);
      }
    }
  }
}

template <class W, class O>
struct Decode {
  static constexpr bool kFp8 = sizeof(W) == 1;

  // fp8: the quantized inputs decoded to fp16 (quant_row): x's rows in pair_out's
  // first tokens x hidden values (free until stage 2 writes it), h's over
  // inter_buf's own.
  static __device__ half_t *x_decoded(const FusedMoeParams &p) { return static_cast<half_t *>(p.pair_out); }
  static __device__ half_t *h_decoded(const FusedMoeParams &p) { return static_cast<half_t *>(p.inter_buf); }

  // Stage 1, item (a, columns i0..i0+7 of inter): rows g gate, g + 8 up.
  static __device__ __noinline__ void stage1_item(const FusedMoeParams &p, const ExpertTable &tab, const WarpTeam &team,
                                                  int a, int i0) {
    const int e = tab.expert[a], g = (threadIdx.x % 32) / 4, i = i0 + g;
    const long long row_bytes = (long long)p.hidden * sizeof(W);
    const char *w = static_cast<const char *>(p.w1) + (long long)e * 2 * p.inter * row_bytes;
    const char *w0 = w + i * row_bytes, *w8 = w + (p.inter + i) * row_bytes;
    auto input = [&](int q) -> const char * {
      const long long t = q / p.topk;
      return kFp8 ? static_cast<const char *>(p.xq) + t * p.hidden
                  : reinterpret_cast<const char *>(static_cast<const O *>(p.x) + t * p.x_stride);
    };
    auto decoded = [&](int q) { return reinterpret_cast<const char *>(x_decoded(p) + q / p.topk * p.hidden); };
    // (fp8: the row scales loaded before the products, not after them)
    const float *ws = kFp8 ? p.w1_scale + (long long)e * 2 * p.inter : nullptr;
    const float gate_scale = kFp8 ? ws[i] : 1.0f, up_scale = kFp8 ? ws[p.inter + i] : 1.0f;
    auto store = [&](int q, float gate, float up) {
      if (kFp8) {
        const float xs = load_row<true>(p.x_scale + q / p.topk);
        gate *= xs * gate_scale, up *= xs * up_scale;
      }
      static_cast<O *>(p.inter_buf)[(long long)q * p.inter + i] = from_f32<O>(moe_gated(p.act, gate, up));
    };
    item_products<W, kFp8>(tab, team, a, w0, w8, int(row_bytes / kStepBytes), input, decoded, store);  // (fp8: written here)
  }

  // Stage 2, item (a, rows c0..c0+15 of hidden).
  static __device__ __noinline__ void stage2_item(const FusedMoeParams &p, const ExpertTable &tab, const WarpTeam &team,
                                                  int a, int c0) {
    const int e = tab.expert[a], g = (threadIdx.x % 32) / 4;
    const long long row_bytes = (long long)p.inter * sizeof(W);
    const char *w = static_cast<const char *>(p.w2) + (long long)e * p.hidden * row_bytes;
    auto input = [&](int q) -> const char * {
      return kFp8 ? static_cast<const char *>(p.hq) + (long long)q * p.inter
                  : reinterpret_cast<const char *>(static_cast<const O *>(p.inter_buf) + (long long)q * p.inter);
    };
    auto decoded = [&](int q) { return reinterpret_cast<const char *>(h_decoded(p) + (long long)q * p.inter); };
    const int col = c0 + g;
    const float *ws = kFp8 ? p.w2_scale + (long long)e * p.hidden : nullptr;
    const float scale0 = kFp8 ? ws[col] : 1.0f, scale8 = kFp8 ? ws[col + 8] : 1.0f;  // (as in stage 1)
    auto store = [&](int q, float v0, float v8) {
      if (kFp8) {
        const float hs = load_row<true>(p.h_scale + q);
        v0 *= hs * scale0, v8 *= hs * scale8;
      }
      O *row = static_cast<O *>(p.pair_out) + (long long)q * p.hidden;
      row[col] = from_f32<O>(v0), row[col + 8] = from_f32<O>(v8);
    };
    item_products<W, true>(tab, team, a, w + (long long)(c0 + g) * row_bytes, w + (long long)(c0 + 8 + g) * row_bytes,
                           int(row_bytes / kStepBytes), input, decoded, store);
  }

  // The combine, a thread 8 columns of a token with its 8 pairs' loads at once:
  // at few tokens a few hundred threads do it all, so its time is their loads'
  // round trips.
  static __device__ __noinline__ void combine(const FusedMoeParams &p) {
    const int chunks = (p.hidden + kCombineCols - 1) / kCombineCols;
    for (long long i = (long long)blockIdx.x * kThreads + threadIdx.x; i < p.tokens * chunks;
         i += (long long)gridDim.x * kThreads)
      combine_cols<O, true, 8>(p, i / chunks, int(i % chunks) * kCombineCols);
  }

  static __device__ void run(const FusedMoeParams &p) {
    __shared__ ExpertTable tab;
    __shared__ int scratch[32];
    __shared__ float fscratch[32];
    auto grid = cooperative_groups::this_grid();
    enter_stream_order();  // (launched programmatically too: its launch overlaps the routing's run)
    stamp_phase(0);  // (phase clock: benchmarks/profile_moe_decode_phases.py)
    build_table(p, tab, scratch);
    stamp_phase(1);
    const int active = tab.active, pairs_listed = tab.first[active];
    if constexpr (kFp8) {
      for (long long t = blockIdx.x; t < p.tokens; t += gridDim.x)
        quant_row<O, kQuantE4m3fn>(static_cast<const O *>(p.x) + t * p.x_stride, p.hidden,
                                   static_cast<unsigned char *>(p.xq) + t * p.hidden, x_decoded(p) + t * p.hidden,
                                   p.x_scale + t, fscratch);
      grid.sync();
    }
    stamp_phase(2);
    const int tiles1 = p.inter / 8;
    const WarpTeam team1 = warp_team(p.team1);
    for (int item = team1.index; item < active * tiles1; item += team1.count)
      stage1_item(p, tab, team1, item / tiles1, item % tiles1 * 8);
    stamp_phase(3);
    grid.sync();
    stamp_phase(4);
    if constexpr (kFp8) {
      for (int j = blockIdx.x; j < pairs_listed; j += gridDim.x) {
        const long long q = tab.pair[j];
        quant_row<O, kQuantE4m3fn>(static_cast<const O *>(p.inter_buf) + q * p.inter, p.inter,
                                   static_cast<unsigned char *>(p.hq) + q * p.inter, h_decoded(p) + q * p.inter,
                                   p.h_scale + q, fscratch);
      }
      grid.sync();
    }
    stamp_phase(5);
    const int tiles2 = p.hidden / 16;
    const WarpTeam team2 = warp_team(p.team2);
    for (int item = team2.index; item < active * tiles2; item += team2.count)
      stage2_item(p, tab, team2, item / tiles2, item % tiles2 * 16);
    stamp_phase(6);
    grid.sync();
    combine(p);
    stamp_phase(7);
  }
};

}  // namespace

// __grid_constant__: run() passes p by reference to the phases' functions,
// which without it makes every thread copy the 280-byte block to local memory
// first (18 MB of local stores a launch of 264 x 256 threads, PTX of 2026-11-29).
#define AITER_MOE_DECODE(name, W, O)                                                     \
  extern "C" __global__ void __launch_bounds__(kThreads, kMoeDecodeBlocksPerSm)          \
      name(const __grid_constant__ FusedMoeParams p) {                                   \
    Decode<W, O>::run(p);                                                                \
  }
AITER_MOE_DECODE(aiter_moe_decode_bf16, bf16_t, bf16_t)
AITER_MOE_DECODE(aiter_moe_decode_f16, half_t, half_t)
AITER_MOE_DECODE(aiter_moe_decode_e4m3fn_bf16, e4m3fn_t, bf16_t)
AITER_MOE_DECODE(aiter_moe_decode_e4m3fn_f16, e4m3fn_t, half_t)

// Variant names: <dtype> (16-bit weights) and e4m3fn.<dtype> (fp8 per channel);
// launched cooperatively, kMoeDecodeBlocksPerSm blocks an SM.
// aiter-kernel-family: op=moe_decode variant={dt} symbol=aiter_moe_decode_{dt} block=256 smem=0 dt=bf16,f16
// aiter-kernel-family: op=moe_decode variant=e4m3fn.{dt} symbol=aiter_moe_decode_e4m3fn_{dt} block=256 smem=0 dt=bf16@89,f16@89
