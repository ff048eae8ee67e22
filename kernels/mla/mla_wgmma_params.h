// The argument of the Hopper MLA decode (mla_wgmma.cu): the decode arguments and
// the TMA tensor maps of q and the latent cache that the launcher
// (libaiter/gpu/mla_decode.cpp) encodes, both in boxes of 64 elements (128 bytes,
// the swizzle span): q as [batch][rows][576] by 64 rows (a sequence's rows past
// its last read as zeros), the cache as [rows][576] by
// `box_rows` rows (64 where pages hold whole 64-key tiles, else 16: page sizes
// are multiples of 16, so no box crosses a page).
#pragma once

#include "../gemm/gemm_params.h"  // TensorMap
#include "mla_params.h"

struct MlaWgmmaParams {
  TensorMap q_map, kv_map;
  MlaDecodeParams p;
  int box_rows;
};
