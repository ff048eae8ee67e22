// Arguments of the GEMM kernels, shared by the kernel sources and the host
// launcher (libaiter/gpu/gemm.cpp): plain data, passed by value.
// out[b][m, n] = (sum_k a[b][m, k] * w[b][n, k]) * a_scale * w_scale + bias[n].
#pragma once

enum GemmOutKind { kGemmOutF32 = 0, kGemmOutF16 = 1, kGemmOutBf16 = 2 };

struct GemmParams {
  const void *a;             // [batch][m, k], rows lda elements apart
  const void *w;             // [batch][n, k], rows ldw elements apart
  void *out;                 // [batch][m, n], rows ldo elements apart
  const void *bias;          // null or [n], fp32 when bias_f32 else out's dtype
  const float *a_scale;      // null (no scaling), [m] per token, [1] per tensor, or [m, kgroups] block-scaled
  const float *w_scale;      // null, [n] per channel, [1] per tensor, or [ceil(n/128), kgroups] block-scaled
  long long m, n, k;
  long long lda, ldw, ldo;
  long long a_batch, w_batch, out_batch;              // elements between batch matrices (0: shared)
  long long a_scale_batch, w_scale_batch;             // fp32 elements between batch scale vectors
  int out_kind;              // GemmOutKind
  int bias_f32;              // bias is fp32 (else out's dtype)
  int a_scale_step;          // 1 per token, 0 per tensor
  int w_scale_step;          // 1 per channel, 0 per tensor
  int block_scaled;          // scales per 128-wide K group (and 128 rows of w)
  int kgroups;               // ceil(k / 128) when block_scaled
  // Block-scaled a_scale[m, g] lies at m * a_scale_row + g * a_scale_group:
  // (kgroups, 1) row-major, (1, m) column-major.  The wgmma kernels read the
  // row-major layout only (the launcher declines them for the other).
  long long a_scale_row, a_scale_group;
};

// A TMA tensor map (the driver's CUtensorMap): 128 opaque bytes the host
// encodes (cuTensorMapEncodeTiled) and the kernel's copies read.
struct alignas(128) TensorMap {
  unsigned long long opaque[16];
};

// Arguments of the TMA kernels (gemm_wgmma_ws.cu): 3-D maps of A [batch][m][k]
// and W [batch][n][k] that copy 128-byte rows of K in the 128-byte swizzle.
struct GemmTmaParams {
  TensorMap a_map, w_map;
  GemmParams p;
  int batch;                 // matrices in the batch
  int a_batched, w_batched;  // 0: every batch reads matrix 0 (a map's batch stride cannot be 0)
};
