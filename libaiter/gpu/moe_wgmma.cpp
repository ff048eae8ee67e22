// Launching the fused MoE's Hopper stages (kernels/moe/moe_wgmma.cu): the TMA
// maps of the stage input (the sorted rows' fp8 codes) and of the expert
// weights, then a persistent grid of at most one block a multiprocessor.
#include "gpu/moe_wgmma.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "gpu/launch.hpp"
#include "kernels/moe/moe_wgmma_params.h"

namespace aiter {
namespace gpu {
namespace {

constexpr int64_t kMaxCoordinate = int64_t(1) << 31;  // the copies' coordinates are int32

bool aligned(const void *p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

std::string variant_of(const FusedMoeArgs &a) {
  return std::string("e4m3fn.") + dtype_tag(a.dtype) + (a.group != 0 ? ".wgmma.bs" : ".wgmma");
}
const char *stage_op(int stage) { return stage == 1 ? "moe_stage1" : "moe_stage2"; }

// `rows` rows of `k` fp8 codes, `count` such matrices one after another, copied
// in boxes of 128 codes by kMoeWgmmaBoxRows rows.
aiter_status encode(Driver *driver, const void *base, int64_t count, int64_t rows, int64_t k, TensorMap *map) {
  TensorMapSpec spec{};
  spec.base = base;
  spec.element_bytes = 1;
  spec.dims[0] = uint64_t(k), spec.dims[1] = uint64_t(rows), spec.dims[2] = uint64_t(count);
  spec.byte_strides[0] = uint64_t(k), spec.byte_strides[1] = uint64_t(rows * k);
  spec.box[0] = 128, spec.box[1] = uint32_t(kMoeWgmmaBoxRows), spec.box[2] = 1;
  return driver->encode_tensor_map(spec, map);
}

// Columns a tile: stage 1's 128 weight rows are 64 gate and 64 up rows.
int64_t tile_columns(int stage) { return stage == 1 ? kMoeWgmmaWRows / 2 : kMoeWgmmaWRows; }

// Whether the manifest has both stages for the device, the output dtype and
// the scales' kind, asked once per device.
bool built_for(const FusedMoeArgs &a, const GpuCall &call) {
  static std::atomic<int> known[kDeviceSlots][2][2] = {};  // 0 unknown, 1 built, -1 not
  const int slot = device_slot(call.device);
  std::atomic<int> *entry = slot >= 0 ? &known[slot][a.dtype == DType::f16][a.group != 0] : nullptr;
  const int seen = entry ? entry->load(std::memory_order_relaxed) : 0;
  if (seen != 0) return seen > 0;
  DeviceScope scope(call.device);
  const bool built = scope.status() == AITER_OK &&
                     has_kernel(scope.driver(), call.device.device_id, "moe_stage1", variant_of(a)) &&
                     has_kernel(scope.driver(), call.device.device_id, "moe_stage2", variant_of(a));
  if (!built) clear_error();  // no sm_90a code object here (another GPU, or a build without it)
  if (entry) entry->store(built ? 1 : -1, std::memory_order_relaxed);
  return built;
}

}  // namespace

bool wgmma_moe_fits(const FusedMoeArgs &a, const GpuCall &call) {
  if (call.device.device_type != kDLCUDA || a.wdtype != DType::e4m3fn) return false;
  // Block-scaled: a K group a stage, a tile's weight rows inside one 128-row block.
  if (a.group != 0 && (a.group != 128 || a.hidden % 128 != 0 || a.inter % 128 != 0)) return false;
  if (a.dtype != DType::bf16 && a.dtype != DType::f16) return false;
  if (a.sort.block % kMoeWgmmaUnit != 0 || a.sort.rows % kMoeWgmmaUnit != 0) return false;
  if (a.sort.rows / kMoeWgmmaUnit > kMoeWgmmaMaxTiles) return false;  // the kernel's tile list
  // Every box inside its tensor (K at least one 128-byte box wide, 64 weight rows).
  if (a.hidden % 16 != 0 || a.inter % 16 != 0 || a.hidden < 128 || a.inter < 128) return false;
  if (!aligned(a.xq, 16) || !aligned(a.hq, 16) || !aligned(a.w1, 16) || !aligned(a.w2, 16)) return false;
  if (!aligned(a.inter_buf, 4) || !aligned(a.pair_out, 4)) return false;
  if (a.sort.rows >= kMaxCoordinate || 2 * a.inter >= kMaxCoordinate || a.local_experts >= kMaxCoordinate ||
      a.tokens * a.topk >= INT32_MAX)
    return false;
  return built_for(a, call);
}

aiter_status wgmma_moe_stage(const FusedMoeArgs &a, int stage, const GpuCall &call) {
  const bool first = stage == 1;
  MoeWgmmaParams p{};
  p.sorted = a.sort.sorted, p.block_experts = a.sort.block_experts, p.num_valid = a.sort.num_valid;
  p.a_scale = first ? a.x_scale : a.h_scale;
  p.w_scale = first ? a.w1_scale : a.w2_scale;
  p.out = first ? a.inter_buf : a.pair_out;
  p.rows = a.sort.rows;
  p.n = int(first ? a.inter : a.hidden);
  p.k = int(first ? a.hidden : a.inter);
  p.w_rows = int(first ? 2 * a.inter : a.hidden);
  p.local_experts = int(a.local_experts), p.block = a.sort.block, p.pairs = int(a.tokens * a.topk);
  p.act = a.act;
  Driver *driver = nullptr;
  int sms = 0;
  aiter_status s = driver_for(call.device.device_type, &driver);
  if (s == AITER_OK) s = multiprocessors(call, &sms);
  if (s == AITER_OK) s = encode(driver, first ? a.xq : a.hq, 1, a.sort.rows, p.k, &p.a_map);
  if (s == AITER_OK) s = encode(driver, first ? a.w1 : a.w2, a.local_experts, p.w_rows, p.k, &p.w_map);
  if (s != AITER_OK) return s;
  // Persistent: one block a multiprocessor (one fits), or fewer where the rows'
  // bound has fewer tiles (a tile a 64-row unit at most).
  const int64_t tiles = a.sort.rows / kMoeWgmmaUnit * ((p.n + tile_columns(stage) - 1) / tile_columns(stage));
  const int64_t blocks = std::min<int64_t>(tiles, sms);
  return launch(call, stage_op(stage), variant_of(a), Dim3{unsigned(blocks), 1, 1}, unsigned(kMoeWgmmaThreads), p);
}

}  // namespace gpu
}  // namespace aiter
