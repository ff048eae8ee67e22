// The argument of the Hopper prefill kernel (prefill_wgmma.cu): the prefill
// arguments and the TMA tensor maps of q, k, v and out that the launcher
// (libaiter/gpu/attention_prefill_wgmma.cpp) encodes: [heads][tokens][D] in boxes
// of 64 elements (128 bytes, the swizzle span) by a block's query rows (Q) or a tile's keys.
#pragma once

#include "../gemm/gemm_params.h"  // TensorMap
#include "attention_params.h"

// A variant's tile shape, for the kernel's Dims and for the launcher, which
// sizes the grid, the block and the TMA boxes from it (boxes of other than
// the kernel's keys would leave its barriers waiting for bytes that never come).
// Consumer warpgroups of 64 query rows: three at head dim 64 without a soft-cap, else two.
constexpr int prefill_wgmma_consumers(int head_dim, bool softcap) { return head_dim == 64 && !softcap ? 3 : 2; }
// Keys a tile: 80 where v's head dim is 256, else 128 (Dims says why).
constexpr int prefill_wgmma_tile_keys(int v_head_dim) { return v_head_dim > 128 ? 80 : 128; }

// o_map (boxes of 64 columns by 64 rows: one consumer's) is encoded where out's
// base and strides suit TMA (o_by_tma 1); else the kernel stores out directly.
struct PrefillTmaParams {
  TensorMap q_map, k_map, v_map, o_map;
  PrefillParams p;
  int o_by_tma;
};
