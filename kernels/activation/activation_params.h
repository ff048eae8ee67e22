// Arguments of the activation kernels, shared by the kernel source and the host
// launcher (libaiter/gpu/activation.cpp): plain data, passed by value.
#pragma once

enum ActKind { kActSilu = 0, kActGeluExact = 1, kActGeluTanh = 2 };

struct ActivationParams {
  const void *x;        // rows of 2 * cols: the gate, then the up projection
  void *out;            // rows of cols: x's dtype, or 8-bit when quant != kQuantNone
  float *scale_out;     // quantizing: one scale per row, compact
  long long rows, cols;
  long long x_stride, out_stride;  // elements
  long long row_step;   // rows are walked from the block's row in steps of the grid's row extent
  int act;              // ActKind (the gated kernels)
  int quant;            // QuantKind (the quantizing kernels)
};
