// Fused MoE stages on NVIDIA tensor cores (mma.sync m16n8k16, bf16 / fp16 in,
// fp32 accumulators), using the GEMM family's pieces (kernels/gemm/stage_copy.h:
// cp.async, the 128-byte XOR swizzle, ldmatrix).
//
// A block computes a 64-row tile of sorted pair rows (within one expert block:
// block_size is 64 or 128) against 128 rows of the expert's weights, K in
// 128-byte stages through a 4-deep cp.async ring.  Four warps, 2 x 2, each 32
// rows x 64 weight rows.  Stage 1 loads, for 64 output columns of inter, the
// gate and the up rows interleaved per warp (32 gate rows, then their 32 up
// rows), so each warp holds both halves of its 32 columns and applies
// act(gate) * up in registers; stage 2 loads 128 rows of w2 and writes each
// row's output to its pair's row of pair_out, or with K split (few pairs: the
// launcher's splits) each block's fp32 sums over its part of K to the pair's
// row of that part in partials.  Rows of padding are zero-filled
// and not stored.  Needs hidden and inter multiples of 8 and 16-byte aligned
// rows (the launcher checks; otherwise the portable kernels run).
#include "../gemm/stage_copy.h"
#include "moe_act.h"
#include "moe_params.h"

namespace {

constexpr int kBM = 64, kThreads = 128, kStages = 4;
constexpr int kWM = 32, kTilesM = kWM / 16;

// T: the elements multiplied (16-bit, or fp8 weights with the stage inputs
// quantized per row); O: x's dtype, of the outputs.  BW: the weight rows of a
// tile (128, or 64 for few tokens: twice the blocks).
//
// BLOCK (block-scaled fp8, DeepSeek-V3): a 128-byte stage is exactly one
// 128-wide K group, so each stage's sums are added to fp32 totals times the
// rows' group scales and the warp's weight-block scale (a warp's columns lie in
// one 128-row weight block: tiles start at multiples of 64 or 32 and inter is
// a multiple of 128).
template <class T, class O, bool GATED, int BW, bool BLOCK = false>
struct MoeStage {
  static constexpr bool kFp8 = sizeof(T) == 1;
  static constexpr int kBW = BW, kWN = BW / 2, kTilesN = kWN / 8;
  static constexpr int kStageBytes = (kBM + kBW) * kRowBytes;
  static constexpr int kCopies = (kBM + kBW) * 8 / kThreads;
  using Mma = MmaOf<T>;
  // acc += the stage's products (the GEMM family's WarpTile, kernels/gemm/stage_copy.h).
  static __device__ __forceinline__ void multiply_stage(uint32_t stage, int warp_m, int warp_n,
                                                        float (&acc)[kTilesM][kTilesN][4]) {
    WarpTile<Mma, kBM, kWM, kWN>::multiply_stage(stage, warp_m, warp_n, acc);
  }

  // The source row of tile row r (null: padding) and of weight row w.
  static __device__ __forceinline__ const char *a_row(const FusedMoeParams &p, long long m) {
    const long long q = p.sorted[m];
    if (q < 0 || q >= p.tokens * p.topk) return nullptr;
    if (kFp8) return static_cast<const char *>(GATED ? p.xq : p.hq) + m * (GATED ? p.hidden : p.inter);
    if (!GATED) return reinterpret_cast<const char *>(static_cast<const T *>(p.inter_buf) + m * p.inter);
    if (p.weights_on_input)
      return reinterpret_cast<const char *>(static_cast<const T *>(p.x_sorted) + m * p.hidden);
    return reinterpret_cast<const char *>(static_cast<const T *>(p.x) + (q / p.topk) * p.x_stride);
  }

  static __device__ __forceinline__ const char *w_row(const FusedMoeParams &p, int e, int n0, int r) {
    const int n_total = GATED ? p.inter : p.hidden, k_total = GATED ? p.hidden : p.inter;
    long long n;
    if (GATED) {
      const int half = r / kWN, q = r % kWN, col = n0 + half * (kWN / 2) + q % (kWN / 2);
      if (col >= n_total) return nullptr;
      n = q < kWN / 2 ? col : n_total + col;
    } else {
      n = n0 + r;
      if (n >= n_total) return nullptr;
    }
    const T *w = static_cast<const T *>(GATED ? p.w1 : p.w2) + (long long)e * (GATED ? 2 : 1) * n_total * k_total;
    return reinterpret_cast<const char *>(w + n * k_total);
  }

  static __device__ __forceinline__ void store(const FusedMoeParams &p, int e, long long m0, int n0, int warp_m,
                                               int warp_n, const float (&acc)[kTilesM][kTilesN][4]) {
    const int g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
    const long long pairs = p.tokens * p.topk;
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long m = m0 + warp_m * kWM + i * 16 + h * 8 + g, q = p.sorted[m];
        if (q < 0 || q >= pairs) continue;
        const float rs = kFp8 && !BLOCK ? (GATED ? p.x_scale : p.h_scale)[m] : 1.0f;
        if (GATED) {
          const float *ws = p.w1_scale + (long long)e * 2 * p.inter;
#pragma unroll
          for (int j = 0; j < kTilesN / 2; ++j) {
            const int col = n0 + warp_n * (kWN / 2) + j * 8 + 2 * t;
            if (col >= p.inter) continue;
            float g0 = acc[i][j][2 * h], g1 = acc[i][j][2 * h + 1];
            float u0 = acc[i][j + kTilesN / 2][2 * h], u1 = acc[i][j + kTilesN / 2][2 * h + 1];
            if (kFp8 && !BLOCK) {
              g0 *= rs * ws[col], g1 *= rs * ws[col + 1];
              u0 *= rs * ws[p.inter + col], u1 *= rs * ws[p.inter + col + 1];
            }
            put_pair(static_cast<O *>(p.inter_buf) + m * p.inter + col, moe_gated(p.act, g0, u0),
                     moe_gated(p.act, g1, u1));
          }
        } else {
          const float *ws = p.w2_scale + (long long)e * p.hidden;
          float *partial = p.splits > 1 ? p.partials + ((long long)blockIdx.y * pairs + q) * p.hidden : nullptr;
#pragma unroll
          for (int j = 0; j < kTilesN; ++j) {
            const int col = n0 + warp_n * kWN + j * 8 + 2 * t;
            if (col >= p.hidden) continue;
            float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
            if (kFp8 && !BLOCK) v0 *= rs * ws[col], v1 *= rs * ws[col + 1];
            if (p.splits > 1)
              *reinterpret_cast<float2 *>(partial + col) = make_float2(v0, v1);
            else
              put_pair(static_cast<O *>(p.pair_out) + q * p.hidden + col, v0, v1);
          }
        }
      }
  }

  // BLOCK: totals += this stage's (K group kg's) sums times their scales; sums reset.
  static __device__ __forceinline__ void promote(const FusedMoeParams &p, int e, long long m0, int n0, int warp_m,
                                                 int warp_n, int kg, float (&acc)[kTilesM][kTilesN][4],
                                                 float (&total)[kTilesM][kTilesN][4]) {
    const int g = (threadIdx.x % 32) / 4;
    const int n_total = GATED ? p.inter : p.hidden, k_total = GATED ? p.hidden : p.inter, groups = k_total / 128;
    const float *rs = GATED ? p.x_scale : p.h_scale;
    const float *ws = GATED ? p.w1_scale : p.w2_scale;
    const int w_blocks = (GATED ? 2 * n_total : n_total) / 128;
    // The warp's first column; past the end: the last block (those columns are not stored).
    int col = GATED ? n0 + warp_n * (kWN / 2) : n0 + warp_n * kWN;
    col = col < n_total ? col : n_total - 1;
    const float w_first = ws[((long long)e * w_blocks + col / 128) * groups + kg];
    const float w_up = GATED ? ws[((long long)e * w_blocks + (n_total + col) / 128) * groups + kg] : 0.0f;
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        long long m = m0 + warp_m * kWM + i * 16 + h * 8 + g;
        m = m < p.rows ? m : p.rows - 1;
        const float a = rs[m * groups + kg];
#pragma unroll
        for (int j = 0; j < kTilesN; ++j) {
          const float s = a * (GATED && j >= kTilesN / 2 ? w_up : w_first);
          total[i][j][2 * h] += acc[i][j][2 * h] * s, total[i][j][2 * h + 1] += acc[i][j][2 * h + 1] * s;
          acc[i][j][2 * h] = 0.0f, acc[i][j][2 * h + 1] = 0.0f;
        }
      }
  }

  // The tile of this block.  Tiles go in groups of kGroupM row tiles, column
  // by column within a group, so that the blocks running at once share a few
  // row tiles' inputs and one column tile's weights in L2: row tiles first made
  // every row tile stream all of its expert's weights from memory (Mixtral,
  // 235 MB of w1 an expert).
  static __device__ __forceinline__ void tile_of(const FusedMoeParams &p, long long *m0, int *n0) {
    constexpr long long kGroupM = 16;
    const int cols = GATED ? kBW / 2 : kBW;
    const long long tiles_m = p.rows / kBM, tiles_n = ((GATED ? p.inter : p.hidden) + cols - 1) / cols;
    const long long tile = blockIdx.x, per_group = kGroupM * tiles_n, first = tile / per_group * kGroupM;
    const long long rows = tiles_m - first < kGroupM ? tiles_m - first : kGroupM;
    *m0 = (first + tile % per_group % rows) * kBM;
    *n0 = int(tile % per_group / rows) * cols;
  }

  // Two adjacent elements, 4-byte aligned (the row lengths are multiples of 8).
  static __device__ __forceinline__ void put_pair(O *at, float v0, float v1) {
    *reinterpret_cast<uint32_t *>(at) = uint32_t(from_f32<O>(v0).bits) | uint32_t(from_f32<O>(v1).bits) << 16;
  }

  static __device__ __forceinline__ void run(const FusedMoeParams &p) {
    extern __shared__ __align__(128) unsigned char ring[];
    long long m0;
    int n0;
    tile_of(p, &m0, &n0);
    if (m0 >= p.num_valid[0]) return;
    const int e = p.block_experts[m0 / p.block];
    if (e < 0 || e >= p.local_experts) return;
    const int k_total = GATED ? p.hidden : p.inter;
    const int warp = threadIdx.x / 32, warp_m = warp / 2, warp_n = warp % 2;
    const uint32_t base = smem_address(ring);
    const int chunk = threadIdx.x % 8;
    const char *row[kCopies];
    uint32_t place[kCopies];
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      const int r = (threadIdx.x + j * kThreads) / 8;
      row[j] = r < kBM ? a_row(p, m0 + r) : w_row(p, e, n0, r - kBM);
      place[j] = swizzled(r, chunk);
    }
    const long long k_bytes = (long long)k_total * sizeof(T);
    // This block's K stages: all, or in stage 2 split p.splits ways its part blockIdx.y.
    int first = 0, stages_k = int((k_bytes + kRowBytes - 1) / kRowBytes);
    if (!GATED && p.splits > 1) {
      const int per = (stages_k + p.splits - 1) / p.splits;
      first = min(stages_k, int(blockIdx.y) * per), stages_k = min(stages_k, first + per);
    }
    auto copy = [&](int s, uint32_t stage) {
      const long long byte = (long long)s * kRowBytes + chunk * 16;
      const bool k_in = byte < k_bytes;
#pragma unroll
      for (int j = 0; j < kCopies; ++j) {
        const bool valid = k_in && row[j] != nullptr;
        copy_async_16(stage + place[j], valid ? row[j] + byte : reinterpret_cast<const char *>(p.sorted), valid);
      }
    };
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (first + s < stages_k) copy(first + s, base + s * kStageBytes);
      copy_async_commit();
    }
    float acc[kTilesM][kTilesN][4] = {};
    float total[BLOCK ? kTilesM : 1][BLOCK ? kTilesN : 1][4] = {};
    for (int kt = first; kt < stages_k; ++kt) {
      copy_async_wait<kStages - 2>();
      __syncthreads();
      const int next = kt + kStages - 1;
      if (next < stages_k) copy(next, base + ((next - first) % kStages) * kStageBytes);
      copy_async_commit();
      multiply_stage(base + ((kt - first) % kStages) * kStageBytes, warp_m, warp_n, acc);
      if constexpr (BLOCK) promote(p, e, m0, n0, warp_m, warp_n, kt, acc, total);
    }
    if constexpr (BLOCK)
      store(p, e, m0, n0, warp_m, warp_n, total);
    else
      store(p, e, m0, n0, warp_m, warp_n, acc);
  }
};

}  // namespace

#define MMA_STAGES(dt, T, O, BW)                                                                               \
  AITER_ENTRY(aiter_moe_stage1_mma_##dt##_##BW, kThreads, FusedMoeParams, (MoeStage<T, O, true, BW>::run))    \
  AITER_ENTRY(aiter_moe_stage2_mma_##dt##_##BW, kThreads, FusedMoeParams, (MoeStage<T, O, false, BW>::run))
MMA_STAGES(bf16, bf16_t, bf16_t, 128)
MMA_STAGES(f16, half_t, half_t, 128)
MMA_STAGES(bf16, bf16_t, bf16_t, 64)
MMA_STAGES(f16, half_t, half_t, 64)
// fp8 (e4m3fn, m16n8k32: sm_89 and up; the manifest lists them there only).
MMA_STAGES(e4m3fn_bf16, e4m3fn_t, bf16_t, 128)
MMA_STAGES(e4m3fn_f16, e4m3fn_t, half_t, 128)
MMA_STAGES(e4m3fn_bf16, e4m3fn_t, bf16_t, 64)
MMA_STAGES(e4m3fn_f16, e4m3fn_t, half_t, 64)

// Variant names: <dtype>.mma (128 weight rows a tile: 64 output columns in
// stage 1, 128 in stage 2) and <dtype>.mma.n64 (64 weight rows); 64-row tiles;
// shared memory: 4 stages of (64 + BW) rows of 128 bytes.
// aiter-kernel-family: op=moe_stage1 variant={dt}.{bw} symbol=aiter_moe_stage1_mma_{dt}_{sym} block=128 smem={smem} dt=bf16,f16 bw=mma:128:98304,mma.n64:64:65536
// aiter-kernel-family: op=moe_stage2 variant={dt}.{bw} symbol=aiter_moe_stage2_mma_{dt}_{sym} block=128 smem={smem} dt=bf16,f16 bw=mma:128:98304,mma.n64:64:65536
// fp8 weights: <weights>.<dtype>.mma[.n64].
#define MMA_BLOCK(dt, O, BW)                                                                                     \
  AITER_ENTRY(aiter_moe_stage1_mma_e4m3fn_##dt##_##BW##_bs, kThreads, FusedMoeParams,                            \
              (MoeStage<e4m3fn_t, O, true, BW, true>::run))                                                      \
  AITER_ENTRY(aiter_moe_stage2_mma_e4m3fn_##dt##_##BW##_bs, kThreads, FusedMoeParams,                            \
              (MoeStage<e4m3fn_t, O, false, BW, true>::run))
MMA_BLOCK(bf16, bf16_t, 128)
MMA_BLOCK(f16, half_t, 128)
MMA_BLOCK(bf16, bf16_t, 64)
MMA_BLOCK(f16, half_t, 64)
// Block-scaled: <weights>.<dtype>.mma[.n64].bs.
// aiter-kernel-family: op=moe_stage1 variant=e4m3fn.{dt}.{bw}.bs symbol=aiter_moe_stage1_mma_e4m3fn_{dt}_{sym}_bs block=128 smem={smem} dt=bf16@89,f16@89 bw=mma:128:98304,mma.n64:64:65536
// aiter-kernel-family: op=moe_stage2 variant=e4m3fn.{dt}.{bw}.bs symbol=aiter_moe_stage2_mma_e4m3fn_{dt}_{sym}_bs block=128 smem={smem} dt=bf16@89,f16@89 bw=mma:128:98304,mma.n64:64:65536
// aiter-kernel-family: op=moe_stage1 variant=e4m3fn.{dt}.{bw} symbol=aiter_moe_stage1_mma_e4m3fn_{dt}_{sym} block=128 smem={smem} dt=bf16@89,f16@89 bw=mma:128:98304,mma.n64:64:65536
// aiter-kernel-family: op=moe_stage2 variant=e4m3fn.{dt}.{bw} symbol=aiter_moe_stage2_mma_e4m3fn_{dt}_{sym} block=128 smem={smem} dt=bf16@89,f16@89 bw=mma:128:98304,mma.n64:64:65536
