// Launcher of the fused MoE for few pairs (kernels/moe/moe_decode.cu).
#include "gpu/moe_decode.hpp"

#include <algorithm>
#include <cstdint>

#include "gpu/launch.hpp"
#include "gpu/moe_launch.hpp"

namespace aiter {
namespace gpu {
namespace {

// A stage's items go to teams of 1, 2, 4 or 8 warps of a block, each warp a
// part of the item's K (kernels/moe/moe_decode.cu); parts keep at least
// kMinPartSteps 64-byte K steps (shorter ones measured slower, their fixed
// costs unshared).  `items` counts the experts the pairs could use (the host
// does not read topk_ids).  Team sizes measured on an H200 against 1 and
// against each other (docs/performance_moe.md, run 45).
constexpr int kTeamWarps = kMoeDecodeThreads / 32;
constexpr int64_t kMinPartSteps = 16;

// Stage 1: the size that gives the busiest warp the fewest batches of loads
// (the rounds of items over the grid's teams times a part's batches), a
// larger team only for 10% fewer: where the items fill the grid anyway the
// memory is busy and the team's sums only cost.
int stage1_team(int64_t items, int64_t blocks, int64_t steps) {
  int best = 1;
  int64_t fewest = INT64_MAX;
  for (int parts = 1; parts <= kTeamWarps && steps / parts >= kMinPartSteps; parts *= 2) {
    const int64_t teams = blocks * (kTeamWarps / parts), rounds = (items + teams - 1) / teams;
    const int64_t batches = rounds * (((steps + parts - 1) / parts + kMoeDecodeSteps - 1) / kMoeDecodeSteps);
    if (batches * 10 < fewest * 9) best = parts, fewest = batches;
  }
  return best;
}

// Stage 2: doubled while the items times the parts stay under two a warp of
// the grid (the rule of the chain's stage-2 split; stage 1's rule above chose
// no split at Mixtral's T 4 and 16, where this one's was 1-2% faster).  Then,
// where the parts still fit one a warp, doubled on down to parts of
// kMinSpareSteps: at Qwen3-30B's T 1 (1024 items of 12 or 24 steps, 2112
// warps) half the warps had nothing to do.  Parts that short for every shape
// measured 2-7% slower at T 2-4 (docs/performance_moe.md, run 47).
constexpr int64_t kMinSpareSteps = 6;

int stage2_team(int64_t items, int64_t blocks, int64_t steps) {
  const int64_t warps = blocks * kTeamWarps;
  int parts = moe_k_splits(items, 2 * warps, steps, kMinPartSteps);
  while (parts < kTeamWarps && items * parts * 2 <= warps && steps / (2 * parts) >= kMinSpareSteps) parts *= 2;
  return std::min(kTeamWarps, parts);
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
  const int64_t used = std::min(a.local_experts, a.tokens * a.topk), elem = a.wdtype == a.dtype ? 2 : 1;
  p.team1 = stage1_team(used * (a.inter / 8), blocks, a.hidden * elem / 64);
  p.team2 = stage2_team(used * (a.hidden / 16), blocks, a.inter * elem / 64);
  const std::string variant = a.wdtype == a.dtype ? std::string(dtype_tag(a.dtype))
                                                  : std::string("e4m3fn.") + dtype_tag(a.dtype);
  return launch_cooperative(call, "moe_decode", variant, Dim3{unsigned(blocks), 1, 1}, unsigned(kMoeDecodeThreads),
                            0u, p);
}

}  // namespace gpu
}  // namespace aiter
