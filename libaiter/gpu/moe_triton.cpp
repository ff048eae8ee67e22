// Launching the Triton MoE stages (kernels/triton/moe.py): one code object per
// stage, weight dtype and tile (kernels/triton/moe_aot.py), whose run-time
// arguments are named here and packed in the kernel's own order from the
// manifest (triton_launch.hpp).
#include "gpu/moe_triton.hpp"

#include <atomic>
#include <climits>
#include <cstdint>
#include <string>

#include "gpu/triton_launch.hpp"

namespace aiter {
namespace gpu {
namespace {

// What moe_aot.py builds: 64-row tiles; columns a tile (stage 1: of inter, the
// product twice as wide; stage 2: of hidden) 256 / 512 on NVIDIA (fp8: 128 / 256,
// and the narrow 64 / 128), 64 / 128 on AMD (128 / 256: other builds of moe_aot.py); K steps of 64
// (gfx1100: 32) for 16-bit weights, 128 for fp8.
constexpr int kTileRows = 64;
constexpr int kWidths[2][3] = {{256, 128, 64}, {512, 256, 128}};  // [stage - 1]: widest first
constexpr int kSteps16[] = {64, 32};
constexpr int kStepFp8 = 128;

bool is_fp8(const FusedMoeArgs &a) { return a.wdtype == DType::e4m3fn || a.wdtype == DType::e4m3fnuz; }
bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

struct StageKernel {
  int width = 0, step = 0;  // width 0: none built for the device
};

std::string variant_name(const FusedMoeArgs &a, int width, int step) {
  return std::string("triton_") + dtype_tag(a.wdtype) + "." + std::to_string(kTileRows) + "x" +
         std::to_string(width) + "x" + std::to_string(step) + (a.group > 0 ? ".bs" : "");
}

const char *stage_op(int stage) { return stage == 1 ? "moe_stage1" : "moe_stage2"; }

// Index of the call's weight kind in the cache below: bf16, f16, e4m3fn, e4m3fnuz.
int weight_index(const FusedMoeArgs &a) {
  switch (a.wdtype) {
    case DType::bf16: return 0;
    case DType::f16: return 1;
    case DType::e4m3fn: return 2;
    default: return 3;
  }
}

// The widest built kernel of `stage`, or the narrowest.
StageKernel look_up(const FusedMoeArgs &a, int stage, TritonTiles tiles, const GpuCall &call) {
  const int *widths = kWidths[stage - 1];
  const int count = int(sizeof kWidths[0] / sizeof kWidths[0][0]);
  for (int i = 0; i < count; ++i) {
    const int width = widths[tiles == TritonTiles::wide ? i : count - 1 - i];
    if (is_fp8(a)) {
      if (triton_kernel_built(call, stage_op(stage), variant_name(a, width, kStepFp8))) return {width, kStepFp8};
      continue;
    }
    for (int step : kSteps16)
      if (triton_kernel_built(call, stage_op(stage), variant_name(a, width, step))) return {width, step};
  }
  return {};
}

// The built kernel of `stage` for the call's weights and tiles, asked of the
// manifest once per device (a width of 0: none).
StageKernel find_stage(const FusedMoeArgs &a, int stage, TritonTiles tiles, const GpuCall &call) {
  static std::atomic<int> known[kDeviceSlots][2][4][2][2] = {};  // 0 unknown, -1 none, else width * 1024 + step
  const int slot = device_slot(call.device);
  std::atomic<int> *entry =
      slot >= 0 ? &known[slot][stage - 1][weight_index(a)][a.group > 0][tiles == TritonTiles::narrow] : nullptr;
  const int seen = entry ? entry->load(std::memory_order_relaxed) : 0;
  if (seen > 0) return {seen / 1024, seen % 1024};
  if (seen < 0) return {};
  const StageKernel found = look_up(a, stage, tiles, call);
  if (entry) entry->store(found.width > 0 ? found.width * 1024 + found.step : -1, std::memory_order_relaxed);
  return found;
}

// The stage's input rows: x gathered by token (16-bit stage 1), else rows of
// the sorted layout (weights_on_input's scaled copy, inter_buf, fp8 codes).
const void *stage_input(const FusedMoeArgs &a, int stage) {
  if (stage == 2) return is_fp8(a) ? a.hq : a.inter_buf;
  return is_fp8(a) ? a.xq : a.weights_on_input ? a.x_sorted : a.x;
}
bool gathers_x(const FusedMoeArgs &a, int stage) { return stage == 1 && !is_fp8(a) && !a.weights_on_input; }

int64_t stage_columns(const FusedMoeArgs &a, int stage) { return stage == 1 ? a.inter : a.hidden; }

int64_t grid_of(const FusedMoeArgs &a, int stage, int width) {
  return a.sort.rows / kTileRows * ((stage_columns(a, stage) + width - 1) / width);
}

// What the kernels were compiled to assume (moe_aot.py's ALIGNED), per stage.
bool stage_fits(const FusedMoeArgs &a, int stage, const StageKernel &s) {
  if (s.width == 0) return false;
  const int64_t k = stage == 1 ? a.hidden : a.inter;
  if (k % s.step != 0 || stage_columns(a, stage) % 16 != 0) return false;
  if (!aligned16(stage_input(a, stage)) || (gathers_x(a, stage) && a.x_stride % 16 != 0)) return false;
  return grid_of(a, stage, s.width) <= INT32_MAX;
}

}  // namespace

bool triton_moe_fits(const FusedMoeArgs &a, TritonTiles tiles, const GpuCall &call) {
  if (a.sort.block % kTileRows != 0 || a.sort.rows % kTileRows != 0) return false;
  if (!aligned16(a.w1) || !aligned16(a.w2) || !aligned16(a.inter_buf) || !aligned16(a.pair_out)) return false;
  if (a.tokens * a.topk >= INT32_MAX || a.sort.rows >= INT32_MAX) return false;
  return stage_fits(a, 1, find_stage(a, 1, tiles, call)) && stage_fits(a, 2, find_stage(a, 2, tiles, call));
}

int triton_moe_stage2_width(const FusedMoeArgs &a, TritonTiles tiles, const GpuCall &call) {
  return find_stage(a, 2, tiles, call).width;
}

aiter_status triton_moe_stage(const FusedMoeArgs &a, int stage, TritonTiles tiles, TritonCombine combine,
                              int splits, const GpuCall &call) {
  const StageKernel s = find_stage(a, stage, tiles, call);
  if (s.width == 0)
    return fail(AITER_ERR_NO_KERNEL, "%s: no Triton %s kernel for %s weights on this device", a.sort.op,
                stage_op(stage), dtype_tag(a.wdtype));
  const std::string variant = variant_name(a, s.width, s.step);
  const bool first = stage == 1;
  const int64_t n = stage_columns(a, stage), k = first ? a.hidden : a.inter;
  const bool sums = !first && combine == TritonCombine::fp32_sums;
  const int combine_code = sums ? (a.weights_on_input ? 2 : 1) : 0;  // moe.py's combine
  const int parts = first ? 1 : splits;
  void *out = first ? a.inter_buf : parts > 1 ? static_cast<void *>(a.partials) : a.pair_out;
  const NamedArg values[] = {
      NamedArg::pointer("a", stage_input(a, stage)), NamedArg::pointer("w", first ? a.w1 : a.w2),
      NamedArg::pointer("out", out), NamedArg::pointer("sorted_rows", a.sort.sorted),
      NamedArg::pointer("block_experts", a.sort.block_experts), NamedArg::pointer("block_runs", a.sort.block_runs),
      NamedArg::pointer("num_valid", a.sort.num_valid),
      NamedArg::pointer("a_scale", first ? a.x_scale : a.h_scale),
      NamedArg::pointer("w_scale", first ? a.w1_scale : a.w2_scale), NamedArg::number("rows", a.sort.rows),
      NamedArg::number("pairs", a.tokens * a.topk), NamedArg::number("topk", a.topk), NamedArg::number("n", n),
      NamedArg::number("k", k), NamedArg::number("lda", gathers_x(a, stage) ? a.x_stride : k),
      NamedArg::number("ldo", n), NamedArg::number("local_experts", a.local_experts),
      NamedArg::number("block", a.sort.block), NamedArg::number("gather", gathers_x(a, stage) ? 1 : 0),
      NamedArg::number("act", a.act), NamedArg::number("out_kind", a.dtype == DType::f16 ? 1 : 2),
      NamedArg::pointer("weights", a.weights), NamedArg::number("weights_stride", a.weights_stride),
      NamedArg::number("combine", combine_code), NamedArg::number("splits", parts),
  };
  const Dim3 grid{unsigned(grid_of(a, stage, s.width)), unsigned(parts), 1};
  if (grid.x == 0) return AITER_OK;
  return launch_triton(call, stage_op(stage), variant, grid, values, int(sizeof values / sizeof values[0]));
}

}  // namespace gpu
}  // namespace aiter
