// Arguments of the fused MoE's Hopper stage kernels (kernels/moe/moe_wgmma.cu),
// shared with their launcher (libaiter/gpu/moe_wgmma.cpp): plain data, by value.
#pragma once

#include "../gemm/gemm_params.h"

// A tile: up to kMoeWgmmaRows sorted rows of one expert (two 64-row units of
// its sorting blocks; a run of an odd number of units ends in a tile of one)
// against kMoeWgmmaWRows rows of its weights: each multiplying warpgroup takes
// 64 rows.  Stage 1 takes 64 columns of inter (their gate and up rows), stage
// 2 128 columns of hidden.  The kernel lists a call's tiles in shared memory,
// at most kMoeWgmmaMaxTiles (the launcher checks the rows' bound).
constexpr int kMoeWgmmaUnit = 64, kMoeWgmmaRows = 128, kMoeWgmmaWRows = 128, kMoeWgmmaThreads = 384;
constexpr int kMoeWgmmaBoxRows = 64;  // rows of a TMA box
constexpr int kMoeWgmmaMaxTiles = 4096;

// Stage 1: out[m, c] = act(g) * u, g = (a_m . w[e, c]) sa_m sw[e, c],
// u = (a_m . w[e, n + c]) sa_m sw[e, n + c], out = inter_buf [rows, n];
// stage 2: out[sorted[m], c] = (a_m . w[e, c]) sa_m sw[e, c], out = pair_out
// [pairs, n].  a_m: row m of a_map ([rows, k] fp8 codes); w: w_map ([experts]
// [w_rows][k] fp8 codes); sa / sw: the per-row / per-channel scales.
struct MoeWgmmaParams {
  TensorMap a_map, w_map;
  const int *sorted, *block_experts, *num_valid;
  const float *a_scale, *w_scale;
  void *out;
  long long rows;  // the sorted rows' upper bound, a multiple of kMoeWgmmaUnit
  int n, k, w_rows, local_experts, block, pairs, act;
};
