// The argument of the Hopper MLA decode (mla_wgmma.cu): the decode arguments and
// the TMA tensor maps of q and the latent cache that the launcher
// (libaiter/gpu/mla_decode.cpp) encodes, both in boxes of 64 elements (128 bytes,
// the swizzle span): q as [batch][rows][576] by 64 rows (a sequence's rows past
// its last read as zeros), the cache as [rows][576] by
// `box_rows` rows (64 where pages hold whole 64-key tiles, else 16: page sizes
// are multiples of 16, so no box crosses a page), or, where `box_blocks` is 3,
// as [9 column blocks][rows][64] by 64 rows x 3 blocks: a third of a tile a copy.
#pragma once

#include "../gemm/gemm_params.h"  // TensorMap
#include "mla_params.h"

struct MlaWgmmaParams {
  TensorMap q_map, kv_map;
  MlaDecodeParams p;
  int box_rows;
  int box_blocks;  // 64-column blocks a copy brings: 1, or 3 (box_rows 64, one block a cluster)
};
