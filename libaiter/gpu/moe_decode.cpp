// Launcher of the fused MoE for few pairs (kernels/moe/moe_decode.cu).
#include "gpu/moe_decode.hpp"

#include <algorithm>
#include <cstdint>

#include "gpu/launch.hpp"
#include "kernels/common/quant_kind.h"
#include "kernels/moe/moe_params.h"

namespace aiter {
namespace gpu {
namespace {

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Stage 2 split along K into 2, 4 or 8 parts (fp32 partial rows, which the
// workspace holds for few pairs) while its items, 16 rows of w2 of each
// expert in use (at most min(experts, pairs) of them), give fewer than two a
// warp of the grid and each part keeps at least kMinSplitSteps 64-byte steps.
constexpr int64_t kMinSplitSteps = 16;
int stage2_splits(const FusedMoeArgs &a, int64_t warps) {
  if (a.partials == nullptr) return 1;
  const int64_t used = std::min(a.local_experts, a.tokens * a.topk), items = used * (a.hidden / 16);
  const int64_t steps = a.inter * (a.wdtype == a.dtype ? 2 : 1) / 64;
  int splits = 1;
  while (splits < kMoeMaxSplits && items * splits < 2 * warps && steps / (2 * splits) >= kMinSplitSteps) splits *= 2;
  return splits;
}

}  // namespace

bool decode_moe_fits(const FusedMoeArgs &a, const GpuCall &call) {
  const bool fp8 = a.wdtype == DType::e4m3fn && a.group == 0;
  return call.device.device_type == kDLCUDA && (a.wdtype == a.dtype || fp8) && !a.weights_on_input &&
         a.tokens * a.topk <= kMoeDecodeMaxPairs && a.sort.experts <= kMoeMaxExperts && a.local_experts <= kMoeMaxExperts && a.hidden % 64 == 0 &&
         a.inter % 64 == 0 && aligned16(a.x) && a.x_stride % 8 == 0 && aligned16(a.w1) && aligned16(a.w2);
}

aiter_status decode_moe(const FusedMoeArgs &a, const GpuCall &call) {
  int sms = 0;
  aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK || a.tokens == 0) return s;
  const int64_t blocks = int64_t(sms) * kMoeDecodeBlocksPerSm;
  FusedMoeParams p{};
  p.x = a.x, p.w1 = a.w1, p.w2 = a.w2, p.out = a.out;
  p.weights = a.weights, p.ids = a.sort.ids, p.mask = a.sort.mask;
  p.inter_buf = a.inter_buf, p.pair_out = a.pair_out;
  p.w1_scale = a.w1_scale, p.w2_scale = a.w2_scale, p.xq = a.xq, p.x_scale = a.x_scale, p.hq = a.hq;
  p.h_scale = a.h_scale;
  p.tokens = a.tokens, p.x_stride = a.x_stride, p.out_stride = a.out_stride;
  p.weights_stride = a.weights_stride, p.ids_stride = a.sort.ids_rows.row_stride;
  p.topk = int(a.topk), p.hidden = int(a.hidden), p.inter = int(a.inter);
  p.local_experts = int(a.local_experts), p.experts = a.sort.experts;
  p.mask_bytes = a.sort.mask_bytes, p.act = a.act;
  p.quant = a.wdtype == DType::e4m3fn ? kQuantE4m3fn : kQuantNone;
  p.partials = a.partials;
  p.splits = stage2_splits(a, blocks * (kMoeDecodeThreads / 32));
  const std::string variant = a.wdtype == a.dtype ? std::string(dtype_tag(a.dtype))
                                                  : std::string("e4m3fn.") + dtype_tag(a.dtype);
  return launch_cooperative(call, "moe_decode", variant, Dim3{unsigned(blocks), 1, 1}, unsigned(kMoeDecodeThreads),
                            0u, p);
}

}  // namespace gpu
}  // namespace aiter
