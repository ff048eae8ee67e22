// Arguments of the norm kernels, shared by the kernel source and the host
// launcher (libaiter/gpu/norm.cpp): plain data, passed by value.
#pragma once

enum NormKind { kNormRms = 0, kNormAddRms = 1, kNormLayer = 2 };

struct NormParams {
  const void *x;
  const void *residual;   // kNormAddRms
  void *residual_out;     // kNormAddRms
  const void *weight;
  const void *bias;       // kNormLayer, may be null
  void *out;              // x's dtype, or 8-bit when quant != kQuantNone
  float *scale_out;       // per-row scales when quantizing
  long long rows, cols;
  long long x_stride, residual_stride, residual_out_stride, out_stride, scale_stride;  // elements
  float eps;
  float inv_cols;         // 1 / cols, computed once by the host
  int kind;               // NormKind
  int params_f32;         // weight/bias stored as fp32 (else as x's dtype)
  int quant;              // QuantKind
};
