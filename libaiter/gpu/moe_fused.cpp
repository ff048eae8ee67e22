// GPU launcher of the fused MoE: sorting into the workspace, the scaled-input
// gather (weights_on_input), stage 1, stage 2 and the combine, all on the
// caller's stream with grids sized by the rows' upper bound (no host sync).
// Stages run on tensor cores (kernels/moe/fused_moe_mma.cu) on NVIDIA where the
// shapes allow, else the portable kernels (kernels/moe/fused_moe.cu).
#include <algorithm>
#include <cstdint>
#include <string>

#include "gpu/launch.hpp"
#include "kernels/moe/moe_params.h"
#include "ops/moe.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int64_t kMmaRows = 64, kMmaCols1 = 64, kMmaCols2 = 128, kMmaThreads = 128;
constexpr int64_t kTile = 32, kPortableThreads = 256, kCombineThreads = 256;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The tensor-core stages read 16-byte chunks of every row.
bool mma_fits(const FusedMoeArgs &a, const GpuCall &call) {
  const bool x_ok = a.weights_on_input || (aligned16(a.x) && a.x_stride % 8 == 0);
  return call.device.device_type == kDLCUDA && a.sort.block % kMmaRows == 0 && a.hidden % 8 == 0 &&
         a.inter % 8 == 0 && x_ok && aligned16(a.w1) && aligned16(a.w2);
}

FusedMoeParams params_of(const FusedMoeArgs &a) {
  FusedMoeParams p{};
  p.x = a.x, p.w1 = a.w1, p.w2 = a.w2, p.out = a.out;
  p.weights = a.weights, p.ids = a.sort.ids, p.mask = a.sort.mask;
  p.sorted = a.sort.sorted, p.block_experts = a.sort.block_experts, p.num_valid = a.sort.num_valid;
  p.x_sorted = a.x_sorted, p.inter_buf = a.inter_buf, p.pair_out = a.pair_out;
  p.tokens = a.tokens, p.x_stride = a.x_stride, p.out_stride = a.out_stride;
  p.weights_stride = a.weights_stride, p.ids_stride = a.sort.ids_rows.row_stride;
  p.rows = a.sort.rows, p.blocks = a.sort.blocks;
  p.topk = int(a.topk), p.hidden = int(a.hidden), p.inter = int(a.inter);
  p.local_experts = int(a.local_experts), p.experts = a.sort.experts, p.block = a.sort.block;
  p.mask_bytes = a.sort.mask_bytes, p.act = a.act, p.weights_on_input = a.weights_on_input;
  return p;
}

aiter_status run_stages(const FusedMoeArgs &a, const FusedMoeParams &p, bool mma, const GpuCall &call) {
  const std::string dt = dtype_tag(a.dtype);
  aiter_status s;
  if (mma) {
    int sms = 0;
    s = multiprocessors(call, &sms);
    if (s != AITER_OK) return s;
    // One block a tile, in the kernel's grouped order (a 1-D grid).  Where the
    // tiles in use (at most one per pair block plus one per expert) give too
    // few blocks of 128 weight rows to keep two on every SM, tiles of 64 rows.
    const int64_t tiles = a.sort.rows / kMmaRows;
    const int64_t used = std::min(tiles, ceil_div(a.tokens * a.topk, kMmaRows) + std::min(a.local_experts, a.tokens * a.topk));
    const bool narrow = used * ceil_div(a.inter, kMmaCols1) < 2 * int64_t(sms);
    const int64_t cols1 = narrow ? kMmaCols1 / 2 : kMmaCols1, cols2 = narrow ? kMmaCols2 / 2 : kMmaCols2;
    const int64_t grid1 = tiles * ceil_div(a.inter, cols1), grid2 = tiles * ceil_div(a.hidden, cols2);
    if (grid1 > INT32_MAX || grid2 > INT32_MAX)
      return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_fused_moe: too many tiles for the GPU grid");
    const std::string variant = dt + (narrow ? ".mma.n64" : ".mma");
    s = launch(call, "moe_stage1", variant, Dim3{unsigned(grid1), 1, 1}, unsigned(kMmaThreads), p);
    if (s == AITER_OK) s = launch(call, "moe_stage2", variant, Dim3{unsigned(grid2), 1, 1}, unsigned(kMmaThreads), p);
    return s;
  }
  const unsigned tiles = unsigned(a.sort.rows / kTile);
  s = launch(call, "moe_stage1", dt + ".portable", Dim3{unsigned(ceil_div(a.inter, kTile)), tiles, 1},
             unsigned(kPortableThreads), p);
  if (s == AITER_OK)
    s = launch(call, "moe_stage2", dt + ".portable", Dim3{unsigned(ceil_div(a.hidden, kTile)), tiles, 1},
               unsigned(kPortableThreads), p);
  return s;
}

}  // namespace

aiter_status fused_moe(const FusedMoeArgs &a, const GpuCall &call) {
  const bool mma = a.variant != 1 && mma_fits(a, call);
  if (a.variant == 2 && !mma)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "aiter_fused_moe: params.variant 2 (tensor cores) needs an NVIDIA GPU, block_size 64 or 128, hidden "
                "and inter multiples of 8 and 16-byte aligned rows");
  if (a.sort.rows / kTile > 65535)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_fused_moe: %lld rows of pairs exceed the GPU grid",
                (long long)a.sort.rows);
  aiter_status s = moe_sorting(a.sort, call);
  if (s != AITER_OK || a.tokens == 0) return s;
  const FusedMoeParams p = params_of(a);
  const std::string dt = dtype_tag(a.dtype);
  if (a.weights_on_input) {
    s = launch(call, "moe_gather", dt, Dim3{unsigned(a.sort.rows), 1, 1}, unsigned(kCombineThreads), p);
    if (s != AITER_OK) return s;
  }
  s = run_stages(a, p, mma, call);
  if (s != AITER_OK) return s;
  if (a.tokens > INT32_MAX) return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_fused_moe: too many tokens");
  return launch(call, "moe_combine", dt, Dim3{unsigned(a.tokens), unsigned(ceil_div(a.hidden, kCombineThreads)), 1},
                unsigned(kCombineThreads), p);
}

}  // namespace gpu
}  // namespace aiter
