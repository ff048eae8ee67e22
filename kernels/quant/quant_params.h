// Arguments of the quantization kernels, shared by the kernel source and the
// host launcher (libaiter/gpu/quant.cpp): plain data, passed by value.
#pragma once

struct QuantParams {
  const void *x;
  void *out;               // 8-bit values
  float *scale;            // per token: one per row, written; per tensor: the amax slot, then the scale
  const float *scale_in;   // the quantizing pass of the per-tensor ops: the static scale, or the amax slot
  long long rows, cols;    // per-tensor ops fold contiguous rows into one long row
  long long x_stride;      // elements between rows of x
  long long out_stride;    // elements (bytes) between rows of out
  unsigned grid_cols;      // per-tensor kernels: blocks along a row (grid.x) ...
  unsigned grid_rows;      // ... and across rows (grid.y), for the grid-stride loops
  int quant;               // QuantKind
  int scale_is_amax;       // scale_in holds amax, the scale is dynamic_scale(amax)
  // The resident per-tensor kernel (quant_resident.cu): x's 16-byte pieces, those
  // each block owns (grid_cols blocks), and how many steps of blockDim pieces of
  // a block's stretch stay in shared memory.
  long long pieces, block_pieces;
  int held_steps;
};
