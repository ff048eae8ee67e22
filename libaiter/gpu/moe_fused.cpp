// GPU launcher of the fused MoE: sorting into the workspace, the input step
// (the scaled-input gather of weights_on_input, or for fp8 weights the
// per-row quantization of the inputs), stage 1, [fp8: quantization of stage 1's
// rows], stage 2 and the combine, all on the caller's stream with grids sized
// by the rows' upper bound (no host sync).  Stages: for many rows an expert
// (prefill), the Triton kernels (gpu/moe_triton.cpp: wgmma on sm_90a, matrix
// cores on AMD) where the manifest has them, on sm_90a replaced for fp8 per
// channel with long K by the warp-specialized TMA + wgmma stages
// (gpu/moe_wgmma.cpp, see wgmma_by_default); else
// on NVIDIA the mma.sync stages (kernels/moe/fused_moe_mma.cu) where the shapes
// allow; else the portable kernels (kernels/moe/fused_moe.cu).
// For few pairs (decode) the whole layer runs as one cooperative kernel instead
// (gpu/moe_decode.cpp, see decode_by_default).
// AITER_MOE_KERNEL=decode|wgmma|triton|mma|portable forces one path, "chain"
// keeps the multi-kernel paths (for tests and timing; see forced_path).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/launch.hpp"
#include "gpu/moe_decode.hpp"
#include "gpu/moe_launch.hpp"
#include "gpu/moe_sort.hpp"
#include "gpu/moe_triton.hpp"
#include "gpu/moe_wgmma.hpp"
#include "kernels/common/quant_kind.h"
#include "kernels/moe/moe_params.h"
#include "ops/moe.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int64_t kMmaRows = 64, kMmaCols1 = 64, kMmaCols2 = 128, kMmaThreads = 128;
constexpr int64_t kTile = 32, kPortableThreads = 256, kRowThreads = 256;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool aligned16(const void *p) { return moe_aligned16(p); }
bool is_fp8(const FusedMoeArgs &a) { return a.wdtype == DType::e4m3fn || a.wdtype == DType::e4m3fnuz; }

// The tensor-core stages read 16-byte chunks of every row (fp8: e4m3fn only,
// NVIDIA has no e4m3fnuz products).
bool mma_fits(const FusedMoeArgs &a, const GpuCall &call) {
  if (call.device.device_type != kDLCUDA || a.sort.block % kMmaRows != 0 || !aligned16(a.w1) || !aligned16(a.w2))
    return false;
  if (is_fp8(a)) return a.wdtype == DType::e4m3fn && a.hidden % 16 == 0 && a.inter % 16 == 0;
  const bool x_ok = a.weights_on_input || (aligned16(a.x) && a.x_stride % 8 == 0);
  return a.hidden % 8 == 0 && a.inter % 8 == 0 && x_ok;
}


enum class StagePath { portable, mma, triton, wgmma };

// How one call's stages run: the path, kernel names and grids (mma / portable),
// and for the Triton stages how stage 2 sums a token's pairs.
struct Plan {
  StagePath path = StagePath::portable;
  TritonCombine combine = TritonCombine::pair_rows;
  TritonTiles tiles = TritonTiles::wide;
  std::string stage;  // variant of moe_stage1 / moe_stage2
  unsigned grid1 = 0, grid2 = 0, threads = 0;
  int splits = 1;  // stage 2 (mma, Triton): the parts of K (grid y), each a partial row a pair
};

// AITER_MOE_KERNEL, read once: "decode", "wgmma", "triton" or "mma" force that
// path (where it fits) for params.variant auto and mma ("decode": auto only),
// "portable" the portable stages for auto, "chain" the heuristic without the
// one-kernel path; unset or other: the heuristic.
enum class Forced { none, chain, decode, wgmma, triton, mma, portable };
Forced forced_path() {
  static const Forced forced = [] {
    const char *env = std::getenv("AITER_MOE_KERNEL");
    if (env == nullptr) return Forced::none;
    if (std::strcmp(env, "chain") == 0) return Forced::chain;
    if (std::strcmp(env, "decode") == 0) return Forced::decode;
    if (std::strcmp(env, "wgmma") == 0) return Forced::wgmma;
    if (std::strcmp(env, "triton") == 0) return Forced::triton;
    if (std::strcmp(env, "mma") == 0) return Forced::mma;
    return std::strcmp(env, "portable") == 0 ? Forced::portable : Forced::none;
  }();
  return forced;
}

// The Triton stages by default: prefill, on average 64 or more rows an expert
// (Mixtral from T 256, Qwen3-30B and DeepSeek-V3 from T 1024), where their
// 64-row tiles are full;
// fewer go to the mma.sync stages, whose narrow tiles suit decode.  At Qwen3
// T 1024 (64 rows an expert) the two were level on an H100 (bf16: 554 against
// 564 us, docs/performance_moe.md).
// fp8 (per channel and block-scaled) goes to the Triton stages at every size
// where they are built: on an H100 the tuner measured them 1.13-1.47x faster
// than the mma.sync stages at every T below that threshold too, in all three
// fp8 presets (configs/moe_sm_90a.csv, docs/performance_moe.md, 2026-11-27).
bool triton_by_default(const FusedMoeArgs &a) {
  return is_fp8(a) || a.tokens * a.topk >= 64 * a.local_experts;
}

// The Triton stages' narrow tiles (moe_aot.py: built for fp8 on NVIDIA, two
// blocks an SM) where an expert has fewer than kNarrowRows rows on average
// (decode), so that a block's first loads and epilogue hide under another
// block's stream: on an H100 1-3% less time a layer than the wide tiles at
// T 1-128 of Mixtral-8x7B, Qwen3-30B and DeepSeek-V3 fp8, level at 64 rows an
// expert (docs/performance_moe.md, run 33).  The tuned variants triton_wide /
// triton_narrow fix them.
constexpr int64_t kNarrowRows = 64;
TritonTiles triton_tiles(const FusedMoeArgs &a) {
  if (a.variant == kMoeTritonWide) return TritonTiles::wide;
  if (a.variant == kMoeTritonNarrow) return TritonTiles::narrow;
  return is_fp8(a) && a.tokens * a.topk < kNarrowRows * a.local_experts ? TritonTiles::narrow : TritonTiles::wide;
}

bool use_triton(const FusedMoeArgs &a, const GpuCall &call) {
  const bool fits = triton_moe_fits(a, triton_tiles(a), call);
  if (moe_triton_variant(a.variant)) return fits;  // the tuned variants: at any row count
  const Forced f = forced_path();
  if ((a.variant != kMoeAuto && a.variant != kMoeMma) || f == Forced::mma || f == Forced::portable) return false;
  return (f == Forced::triton || f == Forced::wgmma || triton_by_default(a)) && fits;
}

// The Hopper stages (gpu/moe_wgmma.cpp) by default only where they measured
// faster than the Triton stages (H100, 2026-11-27, docs/performance_moe.md run
// 15): both stages' K at least 4096 and 32 or more rows an expert on average
// (Mixtral T 128-4096: 2.5-9% less time a layer).  Qwen3-30B (K 2048 and 768)
// measured level at T 512-4096 (-1.6% to +1.3%: the epilogue of short-K tiles
// is not overlapped), decode (2 rows an expert) 5-8% slower.  Block-scaled
// (DeepSeek-V3) from 128 rows an expert on average: T 4096 7% less time a
// layer, T 1024 (32 rows) 5% more (H100, 2026-11-27, docs/performance_moe.md).
bool wgmma_by_default(const FusedMoeArgs &a) {
  if (a.group != 0) return a.tokens * a.topk >= 128 * a.local_experts;
  return a.hidden >= 4096 && a.inter >= 4096 && a.tokens * a.topk >= 32 * a.local_experts;
}

// They take such fp8 per-channel calls that would run the Triton stages (the
// tuned variant "triton" too: the same prefill tensor-core path), unless
// AITER_MOE_KERNEL forces another path; AITER_MOE_KERNEL=wgmma gives them
// every call they fit (also where Triton is not built).
bool use_wgmma(const FusedMoeArgs &a, const GpuCall &call) {
  const Forced f = forced_path();
  if (f == Forced::triton || f == Forced::mma || f == Forced::portable) return false;
  if (a.variant != kMoeAuto && a.variant != kMoeMma && a.variant != kMoeTriton) return false;
  if (f != Forced::wgmma && !wgmma_by_default(a)) return false;
  if (!wgmma_moe_fits(a, call)) return false;
  return f == Forced::wgmma || use_triton(a, call);
}

// The 64-row tiles in use at most: one per 64 pairs plus one per expert.
int64_t used_tiles(const FusedMoeArgs &a) {
  return std::min(a.sort.rows / kMmaRows,
                  ceil_div(a.tokens * a.topk, kMmaRows) + std::min(a.local_experts, a.tokens * a.topk));
}

// Stage 2 split along K into 2, 4 or 8 parts where its tiles in use (of
// `cols2` columns) give fewer than `wanted` blocks and each part keeps at
// least kMinSplitStages 128-byte K steps.  Mixtral decode, ncu on an H100
// (docs/performance_moe.md run 28): at T 1 the mma.sync stage 2's 64 blocks
// streamed w2's 14336-wide rows at 1.75 TB/s against stage 1's 2.59, and the
// fp8 Triton stage 2 has 32 blocks of 256 columns.  Needs the workspace's
// partial rows (few pairs).
constexpr int64_t kMinSplitStages = 16;
int stage2_splits(const FusedMoeArgs &a, int64_t cols2, int64_t wanted) {
  if (a.partials == nullptr || cols2 <= 0) return 1;
  const int64_t blocks = used_tiles(a) * ceil_div(a.hidden, cols2);
  const int64_t stages = ceil_div(a.inter * (is_fp8(a) ? 1 : 2), 128);
  return moe_k_splits(blocks, wanted, stages, kMinSplitStages);
}

Plan mma_plan(const FusedMoeArgs &a, const std::string &prefix, int sms) {
  // One block a tile, in the kernel's grouped order (a 1-D grid).  Where the
  // tiles in use give too few blocks of 128 weight rows to keep two on every
  // SM, tiles of 64 rows (unless a tuned variant fixes the width).
  const int64_t tiles = a.sort.rows / kMmaRows, used = used_tiles(a);
  const bool few = used * ceil_div(a.inter, kMmaCols1) < 2 * int64_t(sms);
  const bool narrow = a.variant == kMoeMmaNarrow || (a.variant != kMoeMmaWide && few);
  const int64_t cols1 = narrow ? kMmaCols1 / 2 : kMmaCols1, cols2 = narrow ? kMmaCols2 / 2 : kMmaCols2;
  Plan plan;
  plan.path = StagePath::mma;
  plan.stage = prefix + (narrow ? ".mma.n64" : ".mma") + (a.group > 0 ? ".bs" : "");
  plan.grid1 = unsigned(tiles * ceil_div(a.inter, cols1));
  plan.grid2 = unsigned(tiles * ceil_div(a.hidden, cols2));
  plan.threads = unsigned(kMmaThreads);
  plan.splits = stage2_splits(a, cols2, 2 * int64_t(sms));  // two blocks an SM
  return plan;
}

// Grid x: column tiles; y: row tiles (launch_stage).
Plan portable_plan(const FusedMoeArgs &a, const std::string &prefix) {
  Plan plan;
  plan.stage = prefix + ".portable";
  plan.grid1 = unsigned(ceil_div(a.inter, kTile)), plan.grid2 = unsigned(ceil_div(a.hidden, kTile));
  plan.threads = unsigned(kPortableThreads);
  return plan;
}

// AITER_MOE_COMBINE=sums (read once): the Triton stage 2 adds each pair's
// weighted row to its token's fp32 sums (atomics), then one cast pass, instead
// of a row a pair and the combine kernel that reads them back.  Not the
// default: measured slower (docs/performance_moe.md runs 9-10: Qwen3-30B T 4096
// 952 us against 864 on an H100, 882 against 821 on an H200: the fp32 atomics,
// twice the bytes of the bf16 rows, stall each tile's epilogue, which nothing
// overlaps at one block an SM; that costs more than the combine's 54 us), and
// its sum order varies run to run (bit-reproducible only up to 2 pairs a token).
bool sums_chosen() {
  static const bool chosen = env_is("AITER_MOE_COMBINE", "sums");
  return chosen;
}

// The sums, [tokens, hidden] fp32, take the start of pair_out: room from topk 2 on.
bool fp32_sums(const FusedMoeArgs &a) { return a.topk >= 2 && sums_chosen(); }

Plan triton_plan(const FusedMoeArgs &a, const GpuCall &call, int sms) {
  Plan plan;
  plan.path = StagePath::triton;
  plan.tiles = triton_tiles(a);
  plan.combine = fp32_sums(a) ? TritonCombine::fp32_sums : TritonCombine::pair_rows;
  const int per_sm = plan.tiles == TritonTiles::narrow ? 2 : 1;  // blocks an SM (registers, shared memory)
  if (plan.combine == TritonCombine::pair_rows)
    plan.splits = stage2_splits(a, triton_moe_stage2_width(a, plan.tiles, call), per_sm * int64_t(sms));
  return plan;
}

// The Hopper stages write a row a pair (the combine sums them).
Plan wgmma_plan() {
  Plan plan;
  plan.path = StagePath::wgmma;
  return plan;
}

aiter_status launch_stage(const GpuCall &call, int stage, const Plan &plan, unsigned row_tiles,
                          const FusedMoeArgs &a, const FusedMoeParams &p) {
  if (plan.path == StagePath::triton) return triton_moe_stage(a, stage, plan.tiles, plan.combine, plan.splits, call);
  if (plan.path == StagePath::wgmma) return wgmma_moe_stage(a, stage, call);
  const unsigned grid = stage == 1 ? plan.grid1 : plan.grid2;
  const unsigned splits = stage == 1 ? 1 : unsigned(plan.splits);
  const Dim3 dims = plan.path == StagePath::mma ? Dim3{grid, splits, 1} : Dim3{grid, row_tiles, 1};
  return launch(call, stage == 1 ? "moe_stage1" : "moe_stage2", plan.stage, dims, plan.threads, p);
}

// The fp8 quantization of a stage's input rows, source 0 (x) or 1 (inter)
// (kernels/moe/fused_moe.cu): per channel moe_quant, short rows a team of 32
// lanes each, kMoeQuantTeams a block, else a block a row; 1 x 128 groups
// moe_quant_groups, kMoeQuantWarpRows rows a warp.
aiter_status launch_quant(const FusedMoeArgs &a, FusedMoeParams p, int source, const GpuCall &call) {
  const int values = int(source == 1 ? a.inter : a.hidden);
  p.quant_source = source;
  const int64_t rows_a_block = a.group > 0                    ? kMoeQuantWarpRows * kRowThreads / 32
                               : moe_quant_short_rows(values) ? kMoeQuantTeams
                                                              : 1;
  const Dim3 grid{unsigned(ceil_div(a.sort.rows, rows_a_block)), 1, 1};
  return launch(call, a.group > 0 ? "moe_quant_groups" : "moe_quant", dtype_tag(a.dtype), grid, unsigned(kRowThreads),
                p);
}

// Stage 1, [fp8: quantize its rows], stage 2.
aiter_status run_stages(const FusedMoeArgs &a, FusedMoeParams p, const Plan &plan, const GpuCall &call) {
  const unsigned row_tiles = unsigned(a.sort.rows / kTile);
  aiter_status s = launch_stage(call, 1, plan, row_tiles, a, p);
  if (s == AITER_OK && is_fp8(a)) s = launch_quant(a, p, 1, call);
  if (s == AITER_OK) s = launch_stage(call, 2, plan, row_tiles, a, p);
  return s;
}

// The input step: fp8 quantization of each pair's input row, or the
// weights_on_input gather.
aiter_status prepare_inputs(const FusedMoeArgs &a, const FusedMoeParams &p, const GpuCall &call) {
  const Dim3 rows{unsigned(a.sort.rows), 1, 1};
  if (is_fp8(a)) return launch_quant(a, p, 0, call);
  if (a.weights_on_input) return launch(call, "moe_gather", dtype_tag(a.dtype), rows, unsigned(kRowThreads), p);
  return AITER_OK;
}

// The sort into the workspace: many blocks with inter_buf (unused until stage
// 1) as scratch; with the stage-2 sums, their zeroing in the sort's first kernel.
aiter_status sort_pairs(const FusedMoeArgs &a, const Plan &plan, const GpuCall &call) {
  SortExtras extras;
  extras.scratch = a.inter_buf;
  extras.scratch_bytes = size_t(a.sort.rows) * size_t(a.inter) * 2;
  if (plan.path == StagePath::triton && plan.combine == TritonCombine::fp32_sums && a.tokens > 0) {
    extras.zero = a.pair_out;
    extras.zero_bytes = a.tokens * a.hidden * int64_t(sizeof(float));
  }
  return moe_sorting_fused(a.sort, extras, call);
}

// The one-kernel layer by default for 16-bit experts with at most
// kDecodeRowsAnExpert pairs an expert on average (decode).  On an H200
// (docs/performance_moe.md, run 44) it took 3-11% less time than the chain at
// Qwen3-30B T 1-16 (up to 1 pair an expert) and 4-7% at Mixtral T 2-8 (up to
// 2); as much at Qwen3-30B T 32-64 (2-4), and 5% more or worse from 4 pairs an
// expert at Mixtral (T 16; T 64 1.5x, T 128 2.7x: each pass of 16 pairs streams
// the expert's weights again).  fp8 only where tuned: its two quantization
// phases cost more than they save at Mixtral (T 1: 135 against 114 us), less
// at Qwen3-30B T 2-16 (2-11% faster).
constexpr int64_t kDecodeRowsAnExpert = 2;
bool decode_by_default(const FusedMoeArgs &a) {
  return !is_fp8(a) && a.tokens * a.topk <= kDecodeRowsAnExpert * a.local_experts;
}

bool use_decode(const FusedMoeArgs &a, const GpuCall &call) {
  if (!decode_moe_fits(a, call)) return false;
  if (a.variant == kMoeDecode) return true;
  const Forced f = forced_path();
  return a.variant == kMoeAuto && (f == Forced::decode || (f == Forced::none && decode_by_default(a)));
}

}  // namespace

FusedMoeParams fused_moe_params(const FusedMoeArgs &a) {
  FusedMoeParams p{};
  p.x = a.x, p.w1 = a.w1, p.w2 = a.w2, p.out = a.out;
  p.weights = a.weights, p.ids = a.sort.ids, p.mask = a.sort.mask;
  p.sorted = a.sort.sorted, p.block_experts = a.sort.block_experts, p.num_valid = a.sort.num_valid;
  p.x_sorted = a.x_sorted, p.inter_buf = a.inter_buf, p.pair_out = a.pair_out;
  p.w1_scale = a.w1_scale, p.w2_scale = a.w2_scale, p.xq = a.xq, p.x_scale = a.x_scale, p.hq = a.hq;
  p.h_scale = a.h_scale;
  p.tokens = a.tokens, p.x_stride = a.x_stride, p.out_stride = a.out_stride;
  p.weights_stride = a.weights_stride, p.ids_stride = a.sort.ids_rows.row_stride;
  p.rows = a.sort.rows, p.blocks = a.sort.blocks;
  p.topk = int(a.topk), p.hidden = int(a.hidden), p.inter = int(a.inter);
  p.local_experts = int(a.local_experts), p.experts = a.sort.experts, p.block = a.sort.block;
  p.mask_bytes = a.sort.mask_bytes, p.act = a.act, p.weights_on_input = a.weights_on_input;
  p.group = a.group;
  p.quant = a.wdtype == DType::e4m3fn ? kQuantE4m3fn : a.wdtype == DType::e4m3fnuz ? kQuantE4m3fnuz : kQuantNone;
  p.splits = p.team1 = p.team2 = 1;
  return p;
}

int moe_k_splits(int64_t work, int64_t wanted, int64_t steps, int64_t min_steps) {
  int splits = 1;
  while (splits < kMoeMaxSplits && work * splits < wanted && steps / (2 * splits) >= min_steps) splits *= 2;
  return splits;
}

bool fused_moe_decode_fits(const FusedMoeArgs &a, const GpuCall &call) { return decode_moe_fits(a, call); }

bool fused_moe_mma_fits(const FusedMoeArgs &a, const GpuCall &call) { return mma_fits(a, call); }
bool fused_moe_triton_fits(const FusedMoeArgs &a, const GpuCall &call) {
  return triton_moe_fits(a, triton_tiles(a), call);
}

aiter_status fused_moe(const FusedMoeArgs &a, const GpuCall &call) {
  if (a.variant == kMoeDecode && !decode_moe_fits(a, call))
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "%s: variant decode needs an NVIDIA GPU, 16-bit or e4m3fn per-channel weights, no weights_on_input, "
                "at most %d pairs and %d experts, hidden and inter multiples of 64, 16-byte aligned rows",
                a.sort.op, kMoeDecodeMaxPairs, kMoeMaxExperts);
  if (use_decode(a, call)) {
    const aiter_status s = decode_moe(a, call);
    if (s == AITER_OK || a.variant == kMoeDecode) return s;
    clear_error();  // not built for this device (fp8 products need sm_89+), or not launched: the chain below
  }
  const bool wgmma = use_wgmma(a, call);
  const bool triton = !wgmma && use_triton(a, call);
  const bool portable = a.variant == kMoePortable || (a.variant == kMoeAuto && forced_path() == Forced::portable);
  const bool mma = !wgmma && !triton && !portable && !moe_triton_variant(a.variant) && mma_fits(a, call);
  if (moe_triton_variant(a.variant) && !triton && !wgmma)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "%s: variants triton*: the Triton stages are not built for this device and dtypes, or the call "
                "lacks 64-row blocks, K a multiple of the kernels' K step or 16-byte aligned rows",
                a.sort.op);
  if (a.variant != kMoeAuto && a.variant != kMoePortable && !mma && !triton && !wgmma)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "%s: the tensor-core stages (params.variant 2, variants mma*) need an NVIDIA GPU, block_size 64 or "
                "128, hidden and inter multiples of 8 (fp8: 16, e4m3fn), 16-byte aligned rows",
                a.sort.op);
  const int64_t tiles = a.sort.rows / kTile;
  if (tiles > 65535 || tiles * std::max(ceil_div(a.inter, 32), ceil_div(a.hidden, 64)) > INT32_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: %lld rows of pairs exceed the GPU grid", a.sort.op,
                (long long)a.sort.rows);
  if (a.tokens > INT32_MAX) return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: too many tokens", a.sort.op);
  int sms = 0;
  aiter_status s = multiprocessors(call, &sms);
  const std::string dt = dtype_tag(a.dtype);
  const std::string prefix = is_fp8(a) ? std::string(dtype_tag(a.wdtype)) + "." + dt : dt;
  const Plan plan = wgmma  ? wgmma_plan()
                    : triton ? triton_plan(a, call, sms)
                    : mma    ? mma_plan(a, prefix, sms)
                             : portable_plan(a, prefix);
  if (s == AITER_OK) s = sort_pairs(a, plan, call);
  if (s != AITER_OK || a.tokens == 0) return s;
  FusedMoeParams p = fused_moe_params(a);
  p.splits = plan.splits, p.partials = a.partials;  // the combine adds the parts
  s = prepare_inputs(a, p, call);
  if (s != AITER_OK) return s;
  s = run_stages(a, p, plan, call);
  if (s == AITER_ERR_NO_KERNEL && mma && a.variant == kMoeAuto) {  // fp8 products need sm_89+: the portable stages
    clear_error();
    p.splits = 1;
    s = run_stages(a, p, portable_plan(a, prefix), call);
  }
  if (s != AITER_OK) return s;
  // The combine, or the cast of stage 2's sums: 8 columns a thread (kernels/moe/fused_moe.cu's kCombineCols).
  const bool sums = plan.path == StagePath::triton && plan.combine == TritonCombine::fp32_sums;
  return launch(call, sums ? "moe_finish" : "moe_combine", dt,
                Dim3{unsigned(a.tokens), unsigned(ceil_div(a.hidden, kRowThreads * 8)), 1}, unsigned(kRowThreads), p);
}

}  // namespace gpu
}  // namespace aiter
