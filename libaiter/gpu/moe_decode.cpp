// Launcher of the fused MoE for few pairs (kernels/moe/moe_decode.cu).
#include "gpu/moe_decode.hpp"

#include <algorithm>
#include <cstdint>

#include "gpu/launch.hpp"
#include "gpu/moe_launch.hpp"

namespace aiter {
namespace gpu {
namespace {

// Stage 2 split along K into 2, 4 or 8 parts (fp32 partial rows, which the
// workspace holds for few pairs) while its items, 16 rows of w2 of each
// expert in use (at most min(experts, pairs) of them), give fewer than two a
// warp of the grid and each part keeps at least kMinSplitSteps 64-byte steps.
constexpr int64_t kMinSplitSteps = 16;
int stage2_splits(const FusedMoeArgs &a, int64_t warps) {
  if (a.partials == nullptr) return 1;
  const int64_t used = std::min(a.local_experts, a.tokens * a.topk), items = used * (a.hidden / 16);
  const int64_t steps = a.inter * (a.wdtype == a.dtype ? 2 : 1) / 64;
  return moe_k_splits(items, 2 * warps, steps, kMinSplitSteps);
}

}  // namespace

bool decode_moe_fits(const FusedMoeArgs &a, const GpuCall &call) {
  const bool fp8 = a.wdtype == DType::e4m3fn && a.group == 0;
  return call.device.device_type == kDLCUDA && (a.wdtype == a.dtype || fp8) && !a.weights_on_input &&
         a.tokens * a.topk <= kMoeDecodeMaxPairs && a.sort.experts <= kMoeMaxExperts &&
         a.local_experts <= kMoeMaxExperts && a.hidden % 64 == 0 && a.inter % 64 == 0 && moe_aligned16(a.x) &&
         a.x_stride % 8 == 0 && moe_aligned16(a.w1) && moe_aligned16(a.w2);
}

aiter_status decode_moe(const FusedMoeArgs &a, const GpuCall &call) {
  int sms = 0;
  aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK || a.tokens == 0) return s;
  const int64_t blocks = int64_t(sms) * kMoeDecodeBlocksPerSm;
  FusedMoeParams p = fused_moe_params(a);
  p.partials = a.partials;
  p.splits = stage2_splits(a, blocks * (kMoeDecodeThreads / 32));
  const std::string variant = a.wdtype == a.dtype ? std::string(dtype_tag(a.dtype))
                                                  : std::string("e4m3fn.") + dtype_tag(a.dtype);
  return launch_cooperative(call, "moe_decode", variant, Dim3{unsigned(blocks), 1, 1}, unsigned(kMoeDecodeThreads),
                            0u, p);
}

}  // namespace gpu
}  // namespace aiter
