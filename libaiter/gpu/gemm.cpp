// GPU GEMM variants (kernels/gemm/): the vendor BLAS (vendor_blas/, listed first),
// the skinny tensor-core kernels for M <= 16,
// the tiled mma.sync kernels (NVIDIA targets), the wgmma kernels (sm_90a: with
// every thread copying, and warp-specialized with TMA copies), and the portable
// kernel that runs any call on every target.  Each variant is one row of
// kKernels; the tuned selection (tuning/select.hpp) picks among those that can
// run a call.
#include <algorithm>
#include <array>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gemm_tma.hpp"
#include "gpu/launch.hpp"
#include "gpu/triton_gemm.hpp"
#include "gpu/vendor_blas/gemm_vendor.hpp"
#include "kernels/gemm/gemm_params.h"
#include "ops/gemm.hpp"

namespace aiter {
namespace gpu {
namespace {

enum class Family { skinny, tiled, wgmma, wgmma_ws, generic };

// skinny: tokens = 8 * NT, rows = 16 * RT of W per block, `warps` split K.
// tiled, wgmma: bm x bn tiles, `stages` deep, `threads` per block.
// block_scaled: the gemm_a8w8_blockscale kernels.
struct KernelShape {
  Family family;
  DType dtype;
  int nt, rt, warps;
  int bm, bn, stages, threads;
  bool block_scaled;
  bool fp32_sum = false;  // fp8 sums added into fp32 every few stages (wgmma_ws ...fp32sum)
  int cluster = 1;        // wgmma_ws ....x2: clusters of two blocks sharing W tiles
  int split = 1;          // wgmma_ws ....k<split>: K split over a cluster of `split` blocks
  int cluster_blocks() const { return cluster * split; }
};

constexpr KernelShape skinny(DType dt, int nt, int rt, int warps, bool bs = false) {
  return {Family::skinny, dt, nt, rt, warps, 0, 0, 0, warps * 32, bs};
}
constexpr KernelShape tiled(DType dt, int bm, int bn, int stages, int threads, bool bs = false) {
  return {Family::tiled, dt, 0, 0, 0, bm, bn, stages, threads, bs};
}
constexpr KernelShape wgmma(DType dt, int bn, int stages, bool bs = false) {
  return {Family::wgmma, dt, 0, 0, 0, 128, bn, stages, 256, bs};
}
constexpr KernelShape wgmma_ws(DType dt, int bm, int bn, int stages, bool bs = false, bool fp32_sum = false) {
  // a copying warpgroup + bm / 64 multiplying ones
  return {Family::wgmma_ws, dt, 0, 0, 0, bm, bn, stages, 128 + 2 * bm, bs, fp32_sum};
}
constexpr KernelShape wgmma_ws_x2(DType dt, int bn, int stages) {
  KernelShape s = wgmma_ws(dt, 128, bn, stages);
  s.cluster = 2;
  return s;
}
constexpr KernelShape wgmma_ws_split(DType dt, int bm, int bn, int stages, int split, bool bs = false) {
  KernelShape s = wgmma_ws(dt, bm, bn, stages, bs);
  s.split = split;
  return s;
}
constexpr KernelShape generic(DType dt) { return {Family::generic, dt, 0, 0, 0, 64, 64, 0, 256, false}; }

#define SKINNY_SHAPES(dt, bs)                                                                  \
  skinny(dt, 1, 1, 8, bs), skinny(dt, 1, 1, 4, bs), skinny(dt, 1, 2, 8, bs), skinny(dt, 1, 2, 4, bs), \
      skinny(dt, 2, 1, 8, bs), skinny(dt, 2, 1, 4, bs), skinny(dt, 2, 2, 8, bs), skinny(dt, 2, 2, 4, bs)
#define TILED_SHAPES(dt)                                                                         \
  tiled(dt, 64, 64, 4, 128), tiled(dt, 64, 128, 4, 256), tiled(dt, 128, 128, 3, 256), \
      tiled(dt, 128, 128, 4, 256), tiled(dt, 128, 256, 3, 256)

#define WGMMA_SHAPES(dt) wgmma(dt, 128, 4), wgmma(dt, 128, 3), wgmma(dt, 256, 3)
#define WGMMA_WS_SHAPES(dt)                                                                                   \
  wgmma_ws(dt, 128, 256, 4), wgmma_ws(dt, 128, 224, 5), wgmma_ws(dt, 128, 192, 5), wgmma_ws(dt, 128, 160, 6), \
      wgmma_ws(dt, 128, 128, 6), wgmma_ws(dt, 128, 64, 8), wgmma_ws(dt, 64, 64, 12), wgmma_ws(dt, 64, 32, 16)

#define WGMMA_WS_X2_SHAPES(dt) wgmma_ws_x2(dt, 256, 4), wgmma_ws_x2(dt, 192, 5), wgmma_ws_x2(dt, 128, 6)
#define WGMMA_WS_SPLIT_SHAPES(dt)                                                                     \
  wgmma_ws_split(dt, 64, 32, 16, 2), wgmma_ws_split(dt, 64, 64, 12, 2), wgmma_ws_split(dt, 64, 128, 7, 2), \
      wgmma_ws_split(dt, 128, 64, 7, 2), wgmma_ws_split(dt, 128, 128, 4, 2)

// In heuristic order: the first that can run a call and fits it wins.
constexpr KernelShape kKernels[] = {
    SKINNY_SHAPES(DType::bf16, false), SKINNY_SHAPES(DType::f16, false), SKINNY_SHAPES(DType::i8, false),
    SKINNY_SHAPES(DType::e4m3fn, false), SKINNY_SHAPES(DType::e5m2, false), SKINNY_SHAPES(DType::e4m3fn, true),
    WGMMA_WS_SHAPES(DType::bf16), WGMMA_WS_SHAPES(DType::f16), WGMMA_WS_SHAPES(DType::e4m3fn),
    WGMMA_WS_SHAPES(DType::e5m2), WGMMA_WS_X2_SHAPES(DType::bf16), WGMMA_WS_X2_SHAPES(DType::e4m3fn),
    WGMMA_WS_SPLIT_SHAPES(DType::bf16), WGMMA_WS_SPLIT_SHAPES(DType::e4m3fn),
    wgmma_ws(DType::e4m3fn, 128, 128, 6, true), wgmma_ws(DType::e4m3fn, 64, 128, 8, true),
    wgmma_ws(DType::e4m3fn, 192, 128, 4, true), wgmma_ws_split(DType::e4m3fn, 64, 128, 7, 2, true),
    wgmma_ws_split(DType::e4m3fn, 128, 128, 4, 2, true),
    wgmma_ws(DType::e4m3fn, 128, 128, 6, false, true), wgmma_ws(DType::e4m3fn, 64, 64, 12, false, true),
    WGMMA_SHAPES(DType::bf16), WGMMA_SHAPES(DType::f16), WGMMA_SHAPES(DType::e4m3fn), WGMMA_SHAPES(DType::e5m2),
    wgmma(DType::e4m3fn, 128, 4, true),
    TILED_SHAPES(DType::bf16), TILED_SHAPES(DType::f16), TILED_SHAPES(DType::i8),
    TILED_SHAPES(DType::e4m3fn), TILED_SHAPES(DType::e5m2),
    tiled(DType::e4m3fn, 64, 128, 4, 256, true), tiled(DType::e4m3fn, 128, 128, 4, 256, true),
    generic(DType::f32), generic(DType::f16), generic(DType::bf16), generic(DType::i8),
    generic(DType::e4m3fn), generic(DType::e4m3fnuz), generic(DType::e5m2),
};
constexpr size_t kCount = std::size(kKernels);

std::string variant_name(const KernelShape &s) {
  const std::string dt = dtype_tag(s.dtype);
  switch (s.family) {
    case Family::skinny:
      return "skinny." + dt + ".t" + std::to_string(s.nt) + ".r" + std::to_string(s.rt) + ".w" +
             std::to_string(s.warps) + (s.block_scaled ? ".bs" : "");
    case Family::tiled:
    case Family::wgmma:
    case Family::wgmma_ws: {
      const std::string family = s.family == Family::tiled ? "tiled." : s.family == Family::wgmma ? "wgmma." : "wgmma_ws.";
      return family + dt + "." + std::to_string(s.bm) + "x" + std::to_string(s.bn) + ".s" + std::to_string(s.stages) +
             (s.block_scaled ? ".bs" : "") + (s.fp32_sum ? ".fp32sum" : "") + (s.cluster == 2 ? ".x2" : "") +
             (s.split > 1 ? ".k" + std::to_string(s.split) : "");
    }
    default: return "generic." + dt;
  }
}

const std::vector<std::string> &variant_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const KernelShape &s : kKernels) v.push_back(variant_name(s));
    return v;
  }();
  return names;
}

// Whether the device's target has kernel I, asked of the manifest once per device.
template <size_t I>
bool built_for(const GpuCall &call) {
  static std::atomic<signed char> known[kDeviceSlots] = {};  // 0 unknown, 1 yes, -1 no
  const int slot = device_slot(call.device);
  if (slot >= 0 && known[slot].load(std::memory_order_relaxed) != 0) return known[slot] > 0;
  Driver *driver = nullptr;
  const bool yes = driver_for(call.device.device_type, &driver) == AITER_OK &&
                   has_kernel(driver, call.device.device_id, "gemm", variant_names()[I]);
  if (slot >= 0) known[slot].store(yes ? 1 : -1, std::memory_order_relaxed);
  return yes;
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The tensor-core kernels read 16-byte pieces of rows.
bool rows_in_16_bytes(const GemmArgs &g) {
  const int64_t size = dtype_size(g.in_dtype);
  return (g.k * size) % 16 == 0 && (g.a.row_stride * size) % 16 == 0 && (g.w.row_stride * size) % 16 == 0 &&
         (g.a_batch_stride * size) % 16 == 0 && (g.w_batch_stride * size) % 16 == 0 && aligned16(g.a.data) &&
         aligned16(g.w.data);
}

struct TileShape {
  int bm, bn;
};

int64_t tile_count(const GemmArgs &g, int bm, int bn) { return ((g.m + bm - 1) / bm) * ((g.n + bn - 1) / bn); }
int64_t tile_count(const GemmArgs &g, const KernelShape &s) { return tile_count(g, s.bm, s.bn); }

// The 128-byte K stages of the Hopper kernels (kRowBytes, kernels/gemm/stage_copy.h).
int64_t k_stages(const GemmArgs &g) {
  const int64_t per_stage = 128 / dtype_size(g.in_dtype);
  return (g.k + per_stage - 1) / per_stage;
}

// An H100's multiprocessors: where the heuristic needs a GPU size (tuned tables
// and other GPUs' own tables supersede it).
constexpr int64_t kHopperSms = 132;

// int8 sums are exact in int32 up to this K (127 * 127 * K < 2^31).
constexpr int64_t kMaxInt8K = 131072;

// The width of 128-row tiles that keeps the most of the GPU busy: the share of
// multiprocessors working in each wave of tiles, times how much a wider tile
// saves on loads (a 128 x bn tile loads 128 + bn rows for 128 * bn outputs).
// Not 224 or 160: their rings leave no room for the staged epilogue, and
// untuned they ran 0.65-0.76x of 128 x 128 (10240 x 8192 at M = 1024, H100).
// 192 only where it divides N: with a ragged last column of tiles they ran
// 0.35-0.88x of cuBLAS (N 5120, 11264, 37888 at M = 128-1024, bf16 and fp8),
// where they divide N 0.94-1.29x (N 3072; bench_gemm_untuned.py, 2026-11-27).
int wide_tile_width(const GemmArgs &g) {
  int best = 128;
  double best_score = 0;
  for (int bn : {256, 192, 128, 64}) {
    if (bn == 192 && g.n % 192 != 0) continue;
    const int64_t tiles = tile_count(g, 128, bn) * g.batch, waves = (tiles + kHopperSms - 1) / kHopperSms;
    const double score = double(tiles) / double(waves * kHopperSms) * bn / (bn + 128);
    if (score > best_score) best = bn, best_score = score;
  }
  return best;
}

// The warp-specialized tile the heuristic takes for a call without block
// scales: above 64 rows 128-row tiles of wide_tile_width; up to 64 rows 64 x 64
// tiles, or 64 x 32 where those fill half the multiprocessors or less.
TileShape heuristic_tile(const GemmArgs &g) {
  if (g.m <= 64) return {64, tile_count(g, 64, 64) * g.batch <= kHopperSms / 2 ? 32 : 64};
  return {128, wide_tile_width(g)};
}

template <size_t I>
bool supports(const GemmArgs &g, const GpuCall *call) {
  constexpr KernelShape s = kKernels[I];
  if (call == nullptr || g.in_dtype != s.dtype || g.batch > 65535) return false;
  if (s.dtype == DType::i8 && g.k > kMaxInt8K) return false;
  if (s.family == Family::skinny && (g.m > 8 * s.nt || g.block_scaled != s.block_scaled || !rows_in_16_bytes(g)))
    return false;
  const bool tiles = s.family == Family::tiled || s.family == Family::wgmma || s.family == Family::wgmma_ws;
  if (tiles && (g.block_scaled != s.block_scaled || !rows_in_16_bytes(g))) return false;
  if (tiles && tile_count(g, s) > 0x7fffffff) return false;
  // The wgmma kernels read a_scale row-major only (a row of groups at a time).
  if ((s.family == Family::wgmma || s.family == Family::wgmma_ws) && g.a_scale_column_major()) return false;
  if (s.family == Family::wgmma_ws && !tma_can_copy(g)) return false;
  if (s.split > 1 && k_stages(g) < s.split) return false;  // every block of a cluster takes a stage or more
  if (s.family == Family::generic && (g.m + s.bm - 1) / s.bm > 65535) return false;  // grid.y
  return built_for<I>(*call);
}

// Block-scaled tiles: 64 x 128 where 128 x 128 tiles fill half the GPU or
// less, else 128 x 128.  (Forced on every DeepSeek-V3 shape at M = 2048-8192 on
// the H100, 128 x 128 ran 0.82-0.85x of the peer and 192 x 128 0.80-0.82x,
// 2026-11-23 19:28 UTC; the tuned table picks 192 x 128 where it wins.)
bool block_scaled_fit(const GemmArgs &g, int bm) {
  if (g.m <= 64 || tile_count(g, 128, 128) * g.batch <= kHopperSms / 2) return bm == 64;
  return bm == 128;
}

// The heuristic's preferences: the smallest token tile that holds M, the
// smallest output tile that still fills the GPU for larger M.
template <size_t I>
bool good_fit(const GemmArgs &g) {
  constexpr KernelShape s = kKernels[I];
  switch (s.family) {
    // One 16-row W tile, 8 warps: forced on every Llama shape at M = 1 and 8
    // the best skinny variant for bf16 and fp8 alike, and the tuned table's most
    // frequent fp8 choice (H100, docs/performance_gemm.md, "fewer registers").
    // Block-scaled: two 16-row W tiles, 8 warps splitting K from K = 4096, else
    // 4; 9-16 tokens only where the 64 x 128 wgmma tiles would fill less than
    // half the GPU (with one tile and 8 warps the heuristic took 1.2-1.6x the
    // tuned time in the H100 tuning runs, before the unscaled kernels' registers
    // were cut).  fp8, 9-16 tokens: likewise the 64 x 64 warp-specialized tiles
    // where the heuristic takes 64 x 64 (not 64 x 32) tiles for the shape: at
    // M = 32 they took 0.83-0.99x the time the 16-token skinny kernel took at
    // M = 16 on all 7 such untuned shapes (N 5120-37888, where the skinny
    // kernel ran 0.93-1.39x of torch._scaled_mm), the 64 x 32 tiles 0.99-1.21x
    // on the 14 others (H100, 2026-11-27 12:27 UTC sweep; the tuned row of
    // 28672 x 4096 at M = 16 is that tile too).  Without the wgmma kernels
    // (not Hopper) the 64-row tiled kernels take these calls: not measured.
    case Family::skinny:
      if (s.block_scaled) {
        const bool long_k = g.k >= 4096;
        if (g.m <= 8) return s.nt == 1 && s.rt == 2 && s.warps == (long_k ? 8 : 4);
        return long_k && tile_count(g, 64, 128) * g.batch < kHopperSms / 2 && s.rt == 2 && s.warps == 8;
      }
      if (g.m > 8 && is_fp8(g.in_dtype) && heuristic_tile(g).bn == 64) return false;
      return s.rt == 1 && s.warps == 8 && (s.nt == 1 || g.m > 8);
    // Hopper: above 128 rows (below, the 64-row mma.sync tiles fill the GPU better;
    // measured by the sm_90a tuning run, configs/gemm_sm_90a.csv).
    case Family::wgmma: return g.m > 128 && s.bn == 128 && (s.stages == 3 || s.block_scaled);  // 2 blocks / SM
    // The warp-specialized kernels come first: above 64 rows 128-row tiles of
    // wide_tile_width; up to 64 rows 64 x 64 tiles, or 64 x 32 where those fill
    // half the multiprocessors or less (block-scaled: 64 x 128, one W block).
    // (Untuned, 65-128 rows went to 64 x 128 mma.sync tiles at 0.4-0.6x of the
    // tuned choice; 64 x 32 tiles in two waves took 1.22-1.26x the time of
    // 64 x 64 in one: 8192 x 28672 at M = 32, 2026-11-23 tuning logs.)
    case Family::wgmma_ws:
      if (s.fp32_sum) return false;  // slower; the tuner picks them where the others miss the tolerance
      if (s.cluster_blocks() > 1) return false;  // left to the tuner
      if (s.block_scaled) return block_scaled_fit(g, s.bm);
      return s.bm == heuristic_tile(g).bm && s.bn == heuristic_tile(g).bn;
    case Family::tiled:
      // 128 x 128: 3 stages fit two blocks per SM (the block-scaled tiles have only 4)
      if (s.bn == 256 || (s.bm == 128 && s.stages == 4 && !s.block_scaled)) return false;
      return s.bm == 64 ? (s.bn == 64 ? g.m <= 64 : g.m <= 128) : true;
    default: return true;
  }
}

GemmParams params_of(const GemmArgs &g) {
  GemmParams p{};
  p.a = g.a.data, p.w = g.w.data, p.out = g.out, p.bias = g.bias;
  p.a_scale = g.a_scale, p.w_scale = g.w_scale;
  p.m = g.m, p.n = g.n, p.k = g.k;
  p.lda = g.a.row_stride, p.ldw = g.w.row_stride, p.ldo = g.out_row_stride;
  p.a_batch = g.a_batch_stride, p.w_batch = g.w_batch_stride, p.out_batch = g.out_batch_stride;
  p.a_scale_batch = g.a_scale_batch_stride, p.w_scale_batch = g.w_scale_batch_stride;
  p.out_kind = g.out_dtype == DType::f32 ? kGemmOutF32 : g.out_dtype == DType::f16 ? kGemmOutF16 : kGemmOutBf16;
  p.bias_f32 = g.bias_dtype == DType::f32;
  p.a_scale_step = g.a_scale_per_token ? 1 : 0;
  p.w_scale_step = g.w_scale_per_channel ? 1 : 0;
  p.block_scaled = g.block_scaled;
  p.kgroups = int((g.k + kScaleBlock - 1) / kScaleBlock);
  p.a_scale_row = g.block_scaled ? g.a_scale_row_stride : 0;
  p.a_scale_group = g.a_scale_group_stride;
  return p;
}

// Persistent: one block per multiprocessor (each holds one), walking the tiles;
// the tensor map's W boxes are a block's share of a W tile.
aiter_status run_warp_specialized(const GemmArgs &g, const GpuCall &call, const KernelShape &s,
                                  const std::string &variant) {
  Driver *driver = nullptr;
  int sms = 0;
  GemmTmaParams q;
  aiter_status st = driver_for(call.device.device_type, &driver);
  if (st == AITER_OK) st = multiprocessors(call, &sms);
  if (st == AITER_OK) st = tma_params(g, params_of(g), s.bm, s.bn / s.cluster, driver, &q);
  if (st != AITER_OK) return st;
  // A cluster's work item: `cluster` tiles stacked in M, or one tile (split K).
  const int64_t items = tile_count(g, s.bm * s.cluster, s.bn) * g.batch;
  int resident = sms;  // blocks, or clusters of blocks, that run at once
  if (s.cluster_blocks() > 1)
    st = active_clusters(call, "gemm", variant, unsigned(s.cluster_blocks()), unsigned(s.threads), &resident);
  if (st != AITER_OK) return st;
  const int64_t clusters = std::min<int64_t>(items, resident);
  return launch(call, "gemm", variant, Dim3{unsigned(clusters * s.cluster_blocks()), 1, 1}, unsigned(s.threads), q);
}

template <size_t I>
aiter_status run(const GemmArgs &g, const GpuCall *call) {
  constexpr KernelShape s = kKernels[I];
  if (g.m == 0 || g.n == 0) return AITER_OK;
  if (s.family == Family::wgmma_ws) return run_warp_specialized(g, *call, s, variant_names()[I]);
  const unsigned batch = unsigned(g.batch);
  Dim3 grid;
  if (s.family == Family::skinny)
    grid = Dim3{unsigned((g.n + 16 * s.rt - 1) / (16 * s.rt)), 1, batch};
  else if (s.family == Family::tiled || s.family == Family::wgmma)  // tiles numbered by the kernel (L2 reuse)
    grid = Dim3{unsigned(tile_count(g, s)), 1, batch};
  else
    grid = Dim3{unsigned((g.n + s.bn - 1) / s.bn), unsigned((g.m + s.bm - 1) / s.bm), batch};
  return launch(*call, "gemm", variant_names()[I], grid, unsigned(s.threads), params_of(g));
}

template <size_t... I>
std::vector<Variant<GemmArgs>> all_variants(std::index_sequence<I...>) {
  return {Variant<GemmArgs>{variant_names()[I].c_str(), supports<I>, good_fit<I>, run<I>}...};
}

// The variants whose kernels an op can use: 16-bit for a16w16, 8-bit for
// a8w8, the block-scaled and portable fp8 kernels for blockscale.
bool belongs(GemmOp op, const KernelShape &s) {
  const bool sixteen = s.dtype == DType::f32 || s.dtype == DType::f16 || s.dtype == DType::bf16;
  switch (op) {
    case GemmOp::a16w16:
    case GemmOp::batched_a16w16: return sixteen;
    case GemmOp::a8w8:
    case GemmOp::batched_a8w8: return !sixteen && !s.block_scaled;
    case GemmOp::a8w8_blockscale:
      return (s.dtype == DType::e4m3fn || s.dtype == DType::e4m3fnuz) &&
             (s.block_scaled || s.family == Family::generic);
  }
  return false;
}

}  // namespace

TileWaves heuristic_tile_waves(const GemmArgs &g) {
  const TileShape t = heuristic_tile(g);
  const int64_t tiles = tile_count(g, t.bm, t.bn) * g.batch;
  const int64_t waves = std::max<int64_t>(1, (tiles + kHopperSms - 1) / kHopperSms);
  return {t.bm, t.bn, tiles, kHopperSms, waves, tiles - (waves - 1) * kHopperSms};
}

VariantList<GemmArgs> gemm_variants(GemmOp op) {
  static const auto lists = [] {
    const std::vector<Variant<GemmArgs>> all = all_variants(std::make_index_sequence<kCount>{});
    std::array<std::vector<Variant<GemmArgs>>, 5> per_op;
    for (size_t o = 0; o < per_op.size(); ++o) {
      per_op[o] = vendor_gemm_variants(GemmOp(o));  // first: the heuristic asks their rule first
      for (size_t i = 0; i < kCount; ++i)
        if (belongs(GemmOp(o), kKernels[i])) per_op[o].push_back(all[i]);
      add_triton_gemm_variants(GemmOp(o), &per_op[o]);  // before the portable kernels
    }
    return per_op;
  }();
  const auto &list = lists[size_t(op)];
  return {list.data(), list.size()};
}

}  // namespace gpu
}  // namespace aiter
