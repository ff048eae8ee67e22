// fp8 products on Hopper summed in fp32 windows, for the GEMMs' PROMOTED and
// block-scaled variants (wgmma_ws.h) and the fused MoE's stages
// (kernels/moe/moe_wgmma.cu).
// Hopper's fp8 wgmma keeps about 14 bits of its running sum (DeepSeek-V3), so
// long K loses precision; the sum of a window of kPromotedWindow stages (512 K
// of fp8) is exact enough, and the windows add in fp32.  Products stay in
// flight within a window.  The windows are unrolled and the last one's length
// is a constant: with one loop deciding per stage whether a window ends, ptxas
// serialized every wgmma (C7518, a wait on a path it takes as divergent).
#pragma once

#include "wgmma_tile.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

constexpr int kPromotedWindow = 4;  // stages

// total += the products of the next N stages, summed apart first.
// issue(slot, parity, sums, accumulate) waits for the slot's stage and issues
// its products; release(slot) hands a slot back to the copier (once the
// products after it are in flight, or done).
template <int N, int R, class Cursor, class Issue, class Release>
__device__ __forceinline__ void promoted_window(Cursor &c, float (&sums)[R], float (&total)[R], const Issue &issue,
                                                const Release &release) {
  int previous = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    issue(c.slot, c.parity, sums, i > 0);
    if (i > 0) {
      wgmma_wait<1>();
      release(previous);
    }
    previous = c.slot;
    c.advance();
  }
  wgmma_wait<0>();
  release(previous);
#pragma unroll
  for (int i = 0; i < R; ++i) total[i] += sums[i];
}

// total = the products of k_stages stages, in windows of kPromotedWindow.
template <int R, class Cursor, class Issue, class Release>
__device__ __forceinline__ void promoted_sum(Cursor &c, int k_stages, float (&total)[R], const Issue &issue,
                                             const Release &release) {
  float sums[R];
#pragma unroll
  for (int i = 0; i < R; ++i) total[i] = 0.0f;
  int kt = 0;
  for (; kt + kPromotedWindow <= k_stages; kt += kPromotedWindow)
    promoted_window<kPromotedWindow>(c, sums, total, issue, release);
  static_assert(kPromotedWindow == 4, "the last window below has 1 to 3 stages");
  switch (k_stages - kt) {
    case 3: promoted_window<3>(c, sums, total, issue, release); break;
    case 2: promoted_window<2>(c, sums, total, issue, release); break;
    case 1: promoted_window<1>(c, sums, total, issue, release); break;
    default: break;
  }
}

// Block-scaled fp8 (one 128-wide K group a stage): total = the sum over the
// stages of each stage's sums times its scales; a stage's sums are complete
// before they are scaled.  Stages go in runs of kScaledRun with two sets of
// sums taking turns: each stage's products run while the stage before is
// scaled, so only a run's last stage is waited for alone.  (With the turns
// going on across loop iterations, ptxas serializes every wgmma: C7514, it
// does not follow products in flight around a loop.)  issue(slot, parity,
// sums) waits for the slot's stage and issues its products into `sums`;
// scales(slot) reads the stage's scales (before the slot goes back);
// promote(scales, sums, total) adds them in.
constexpr int kScaledRun = 4;  // stages

template <int G, int R, class Cursor, class Issue, class Scales, class Release, class Promote>
__device__ __forceinline__ void scaled_run(Cursor &c, float (&even)[R], float (&odd)[R], float (&total)[R],
                                           const Issue &issue, const Scales &scales, const Release &release,
                                           const Promote &promote) {
  int slots[G];
  decltype(scales(0)) read[G];
#pragma unroll
  for (int i = 0; i < G; ++i) {
    slots[i] = c.slot;
    issue(c.slot, c.parity, i % 2 == 0 ? even : odd);
    read[i] = scales(c.slot);
    c.advance();
    if (i > 0) {
      wgmma_wait<1>();
      release(slots[i - 1]);
      promote(read[i - 1], (i - 1) % 2 == 0 ? even : odd, total);
    }
  }
  wgmma_wait<0>();
  release(slots[G - 1]);
  promote(read[G - 1], (G - 1) % 2 == 0 ? even : odd, total);
}

template <int R, class Cursor, class Issue, class Scales, class Release, class Promote>
__device__ __forceinline__ void scaled_sum(Cursor &c, int k_stages, float (&total)[R], const Issue &issue,
                                           const Scales &scales, const Release &release, const Promote &promote) {
#pragma unroll
  for (int i = 0; i < R; ++i) total[i] = 0.0f;
  float even[R], odd[R];
  int kt = 0;
  for (; kt + kScaledRun <= k_stages; kt += kScaledRun)
    scaled_run<kScaledRun>(c, even, odd, total, issue, scales, release, promote);
  static_assert(kScaledRun == 4, "the rest below is at most a pair and a single stage");
  if (k_stages - kt >= 2) scaled_run<2>(c, even, odd, total, issue, scales, release, promote), kt += 2;
  if (kt < k_stages) scaled_run<1>(c, even, odd, total, issue, scales, release, promote);
}

#endif
