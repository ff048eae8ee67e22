// The argument of the Hopper prefill kernel (prefill_wgmma.cu): the prefill
// arguments and the TMA tensor maps of q, k and v that the launcher
// (libaiter/gpu/attention_prefill_wgmma.cpp) encodes: [heads][tokens][D] in boxes
// of 64 elements (128 bytes, the swizzle span) by a block's query rows (Q) or a tile's keys.
#pragma once

#include "../gemm/gemm_params.h"  // TensorMap
#include "attention_params.h"

struct PrefillTmaParams {
  TensorMap q_map, k_map, v_map;
  PrefillParams p;
};
