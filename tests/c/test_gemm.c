/* GEMM ops through the C API: correct calls (also on row-strided views), and
 * bad input of every kind returning the right status with no write to any buffer. */
#include "harness.h"

/* out[m][n] = sum_k a[m][k] w[n][k] + bias[n] in double, rows lda / ldw apart. */
static double dot_ref(const float *a, int64_t lda, const float *w, int64_t ldw, int m, int n, int k) {
  double s = 0;
  for (int i = 0; i < k; ++i) s += (double)a[m * lda + i] * w[n * ldw + i];
  return s;
}

static void test_a16w16_values(void) {
  enum { M = 3, N = 4, K = 5 };
  test_tensor a, w, bias, out;
  make_tensor(&a, F32, 2, (int64_t[]){M, K});
  make_tensor(&w, F32, 2, (int64_t[]){N, K});
  make_tensor(&bias, F32, 1, (int64_t[]){N});
  make_tensor(&out, F32, 2, (int64_t[]){M, N});
  fill_f32(&a, 1), fill_f32(&w, 2), fill_f32(&bias, 3);
  EXPECT_OK(aiter_gemm_a16w16(&out.t, &a.t, &w.t, &bias.t, NULL));
  const float *pa = a.t.data, *pw = w.t.data, *pb = bias.t.data, *po = out.t.data;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) CHECK(fabs(po[m * N + n] - (dot_ref(pa, K, pw, K, m, n, K) + pb[n])) < 1e-5);
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&bias), free_tensor(&out);
}

/* A [3, 5] inside a [3, 8] buffer, out [3, 4] inside a [3, 6] buffer. */
static void test_a16w16_strided_views(void) {
  enum { M = 3, N = 4, K = 5, LDA = 8, LDO = 6 };
  test_tensor a, w, out;
  make_tensor(&a, F32, 2, (int64_t[]){M, LDA});
  make_tensor(&w, F32, 2, (int64_t[]){N, K});
  make_tensor(&out, F32, 2, (int64_t[]){M, LDO});
  fill_f32(&a, 4), fill_f32(&w, 5);
  a.shape[1] = K, a.strides[0] = LDA, a.strides[1] = 1, a.t.strides = a.strides;
  out.shape[1] = N, out.strides[0] = LDO, out.strides[1] = 1, out.t.strides = out.strides;
  EXPECT_OK(aiter_gemm_a16w16(&out.t, &a.t, &w.t, NULL, NULL));
  const float *pa = a.t.data, *pw = w.t.data, *po = out.t.data;
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) CHECK(fabs(po[m * LDO + n] - dot_ref(pa, LDA, pw, K, m, n, K)) < 1e-5);
    CHECK(po[m * LDO + N] == 0.0f && po[m * LDO + N + 1] == 0.0f); /* the gap between rows is untouched */
  }
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&out);
}

static void test_a8w8_values(void) {
  enum { M = 2, N = 3, K = 4 };
  test_tensor a, w, a_scale, w_scale, bias, out;
  make_tensor(&a, I8, 2, (int64_t[]){M, K});
  make_tensor(&w, I8, 2, (int64_t[]){N, K});
  make_tensor(&a_scale, F32, 2, (int64_t[]){M, 1});
  make_tensor(&w_scale, F32, 1, (int64_t[]){1});
  make_tensor(&bias, F32, 1, (int64_t[]){N});
  make_tensor(&out, F32, 2, (int64_t[]){M, N});
  int8_t *pa = a.t.data, *pw = w.t.data;
  for (int i = 0; i < M * K; ++i) pa[i] = (int8_t)(i % 2 ? -128 : 127 - 9 * i);
  for (int i = 0; i < N * K; ++i) pw[i] = (int8_t)(5 * i - 30);
  float *pas = a_scale.t.data, *pws = w_scale.t.data, *pb = bias.t.data;
  pas[0] = 0.5f, pas[1] = 2.0f, pws[0] = 0.25f, pb[0] = 1.0f, pb[1] = -3.0f, pb[2] = 0.5f;
  EXPECT_OK(aiter_gemm_a8w8(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t, &bias.t, NULL));
  const float *po = out.t.data;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      long acc = 0;
      for (int k = 0; k < K; ++k) acc += (long)pa[m * K + k] * pw[n * K + k];
      CHECK(po[m * N + n] == (float)acc * pas[m] * pws[0] + pb[n]); /* exact: powers of two */
    }
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&a_scale), free_tensor(&w_scale), free_tensor(&bias),
      free_tensor(&out);
}

#define A16(out_, a_, w_, bias_) aiter_gemm_a16w16((out_), (a_), (w_), (bias_), NULL)

static void test_a16w16_bad_input(void) {
  test_tensor a, w, out, bias, w_k6, out_m2, out_n5, a_i8, w_bf16, out_i32, bias_n5, bias_f16, bias_2d;
  make_tensor(&a, F32, 2, (int64_t[]){3, 5});
  make_tensor(&w, F32, 2, (int64_t[]){4, 5});
  make_tensor(&out, F32, 2, (int64_t[]){3, 4});
  make_tensor(&bias, F32, 1, (int64_t[]){4});
  make_tensor(&w_k6, F32, 2, (int64_t[]){4, 6});
  make_tensor(&out_m2, F32, 2, (int64_t[]){2, 4});
  make_tensor(&out_n5, F32, 2, (int64_t[]){3, 5});
  make_tensor(&a_i8, I8, 2, (int64_t[]){3, 5});
  make_tensor(&w_bf16, BF16, 2, (int64_t[]){4, 5});
  make_tensor(&out_i32, I32, 2, (int64_t[]){3, 4});
  make_tensor(&bias_n5, F32, 1, (int64_t[]){5});
  make_tensor(&bias_f16, F16, 1, (int64_t[]){4});
  make_tensor(&bias_2d, F32, 2, (int64_t[]){1, 4});
  fill_f32(&a, 6), fill_f32(&w, 7);

  const aiter_status BAD = AITER_ERR_INVALID_ARGUMENT, DTYPE = AITER_ERR_UNSUPPORTED_DTYPE;
  EXPECT_STATUS(A16(NULL, &a.t, &w.t, NULL), BAD, "out: expected a tensor");
  EXPECT_STATUS(A16(&out.t, NULL, &w.t, NULL), BAD, "a: expected a tensor");
  EXPECT_STATUS(A16(&out.t, &a.t, NULL, NULL), BAD, "w: expected a tensor");
  EXPECT_STATUS(A16(&out.t, &a.t, &w_k6.t, NULL), BAD, "w: expected shape[1] == 5 (K");
  EXPECT_STATUS(A16(&out_m2.t, &a.t, &w.t, NULL), BAD, "out: expected shape[0] == 3 (M");
  EXPECT_STATUS(A16(&out_n5.t, &a.t, &w.t, NULL), BAD, "out: expected shape[1] == 4 (N");
  EXPECT_STATUS(A16(&out.t, &a_i8.t, &w.t, NULL), DTYPE, "a: expected dtype float32, float16, bfloat16, got int8");
  EXPECT_STATUS(A16(&out.t, &a.t, &w_bf16.t, NULL), DTYPE, "w: expected the dtype of a");
  EXPECT_STATUS(A16(&out_i32.t, &a.t, &w.t, NULL), DTYPE, "out: expected dtype");
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, &bias_n5.t), BAD, "bias: expected shape[0] == 4 (N");
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, &bias_f16.t), DTYPE, "bias: expected dtype float32, got float16");
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, &bias_2d.t), BAD, "bias: expected 1 dims");

  /* ndim, negative and overflowing extents. */
  a.t.ndim = 3;
  a.shape[2] = 1;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, NULL), BAD, "a: expected 2 dims, got 3");
  a.t.ndim = 2;
  w.shape[0] = -4;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, NULL), BAD, "negative extent");
  w.shape[0] = INT64_MAX / 2;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, NULL), BAD, "overflow");
  w.shape[0] = 4;

  /* Strides: a non-unit stride along K, overlapping output rows, a reversed view. */
  a.t.strides = a.strides;
  a.strides[0] = 10, a.strides[1] = 2;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, NULL), BAD, "a: expected unit stride");
  a.strides[0] = -5, a.strides[1] = 1;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, NULL), BAD, "negative stride");
  a.t.strides = NULL;
  out.t.strides = out.strides;
  out.strides[0] = 2, out.strides[1] = 1;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, NULL), BAD, "out: rows overlap");
  out.t.strides = NULL;

  /* Mixed devices; ROCm tensors, which need an AMD GPU. */
  w.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, NULL), BAD, "w: expected the device of a");
  bias.t.device.device_type = kDLCUDA;
  w.t.device.device_type = kDLCPU;
  EXPECT_STATUS(A16(&out.t, &a.t, &w.t, &bias.t), BAD, "bias: expected the device of a");
  a.t.device.device_type = w.t.device.device_type = out.t.device.device_type = bias.t.device.device_type = kDLROCM;
  EXPECT_NO_HIP_DEVICE(A16(&out.t, &a.t, &w.t, &bias.t));
  a.t.device.device_type = w.t.device.device_type = out.t.device.device_type = bias.t.device.device_type = kDLCPU;

  CHECK(untouched(&out) && guards_intact(&out));
  CHECK(untouched(&out_m2) && untouched(&out_n5) && untouched(&out_i32));
  EXPECT_OK(A16(&out.t, &a.t, &w.t, &bias.t)); /* the same tensors, repaired, work */
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&out), free_tensor(&bias), free_tensor(&w_k6),
      free_tensor(&out_m2), free_tensor(&out_n5), free_tensor(&a_i8), free_tensor(&w_bf16), free_tensor(&out_i32),
      free_tensor(&bias_n5), free_tensor(&bias_f16), free_tensor(&bias_2d);
}

#define A8(out_, a_, w_, as_, ws_) aiter_gemm_a8w8((out_), (a_), (w_), (as_), (ws_), NULL, NULL)

static void test_a8w8_bad_input(void) {
  test_tensor a, w, a_scale, w_scale, out, w_fp8, a_f32, as_1d, as_m4, ws_n1, as_f16, out_i8;
  make_tensor(&a, I8, 2, (int64_t[]){3, 8});
  make_tensor(&w, I8, 2, (int64_t[]){4, 8});
  make_tensor(&a_scale, F32, 2, (int64_t[]){3, 1});
  make_tensor(&w_scale, F32, 2, (int64_t[]){1, 4});
  make_tensor(&out, BF16, 2, (int64_t[]){3, 4});
  make_tensor(&w_fp8, E4M3, 2, (int64_t[]){4, 8});
  make_tensor(&a_f32, F32, 2, (int64_t[]){3, 8});
  make_tensor(&as_1d, F32, 1, (int64_t[]){3});
  make_tensor(&as_m4, F32, 2, (int64_t[]){4, 1});
  make_tensor(&ws_n1, F32, 2, (int64_t[]){4, 1});
  make_tensor(&as_f16, F16, 2, (int64_t[]){3, 1});
  make_tensor(&out_i8, I8, 2, (int64_t[]){3, 4});

  const aiter_status BAD = AITER_ERR_INVALID_ARGUMENT, DTYPE = AITER_ERR_UNSUPPORTED_DTYPE;
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, NULL, &w_scale.t), BAD, "a_scale: expected a tensor");
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, &a_scale.t, NULL), BAD, "w_scale: expected a tensor");
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, &as_1d.t, &w_scale.t), BAD, "a_scale: expected shape [M, 1] = [3, 1]");
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, &as_m4.t, &w_scale.t), BAD, "a_scale: expected shape [M, 1]");
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, &a_scale.t, &ws_n1.t), BAD, "w_scale: expected shape [1, N] = [1, 4]");
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, &as_f16.t, &w_scale.t), DTYPE, "a_scale: expected dtype float32");
  EXPECT_STATUS(A8(&out.t, &a.t, &w_fp8.t, &a_scale.t, &w_scale.t), DTYPE, "w: expected the dtype of a (int8)");
  EXPECT_STATUS(A8(&out.t, &a_f32.t, &w.t, &a_scale.t, &w_scale.t), DTYPE, "a: expected dtype int8, float8_e4m3fn");
  EXPECT_STATUS(A8(&out_i8.t, &a.t, &w.t, &a_scale.t, &w_scale.t), DTYPE, "out: expected dtype");

  a_scale.t.strides = a_scale.strides;
  a_scale.strides[0] = 2, a_scale.strides[1] = 1;
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t), BAD, "a_scale: expected a compact");
  a_scale.t.strides = NULL;
  w_scale.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(A8(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t), BAD, "w_scale: expected the device of a");
  w_scale.t.device.device_type = kDLCPU;

  CHECK(untouched(&out) && guards_intact(&out) && untouched(&out_i8));
  EXPECT_OK(A8(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t));
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&a_scale), free_tensor(&w_scale), free_tensor(&out),
      free_tensor(&w_fp8), free_tensor(&a_f32), free_tensor(&as_1d), free_tensor(&as_m4), free_tensor(&ws_n1),
      free_tensor(&as_f16), free_tensor(&out_i8);
}

/* ---- gemm_a8w8_blockscale ------------------------------------------------------ */
#define E4M3FNUZ dt(kDLFloat8_e4m3fnuz, 8)
#define E5M2 dt(kDLFloat8_e5m2, 8)

/* e4m3fn encodings of small exact values: 1, 2, 0.5, -1. */
static const uint8_t kFp8Bits[4] = {0x38, 0x40, 0x30, 0xB8};
static const double kFp8Values[4] = {1.0, 2.0, 0.5, -1.0};

/* K = 130: two K groups, the second 2 wide; N = 130: two blocks of W rows.
 * Scales are powers of two, so the fp32 result is exact. */
static void test_blockscale_values(void) {
  enum { M = 2, N = 130, K = 130, G = 2, NB = 2 };
  test_tensor a, w, a_scale, w_scale, out;
  make_tensor(&a, E4M3, 2, (int64_t[]){M, K});
  make_tensor(&w, E4M3, 2, (int64_t[]){N, K});
  make_tensor(&a_scale, F32, 2, (int64_t[]){M, G});
  make_tensor(&w_scale, F32, 2, (int64_t[]){NB, G});
  make_tensor(&out, F32, 2, (int64_t[]){M, N});
  uint8_t *pa = a.t.data, *pw = w.t.data;
  for (int i = 0; i < M * K; ++i) pa[i] = kFp8Bits[i % 4];
  for (int i = 0; i < N * K; ++i) pw[i] = kFp8Bits[(i / 3) % 4];
  float *pas = a_scale.t.data, *pws = w_scale.t.data;
  pas[0] = 0.5f, pas[1] = 4.0f, pas[2] = 0.25f, pas[3] = 8.0f;
  pws[0] = 2.0f, pws[1] = 0.125f, pws[2] = 16.0f, pws[3] = 1.0f;
  EXPECT_OK(aiter_gemm_a8w8_blockscale(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t, NULL));
  const float *po = out.t.data;
  int exact = 1;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int g = 0; g < G; ++g) {
        double partial = 0;
        for (int k = g * 128; k < K && k < (g + 1) * 128; ++k)
          partial += kFp8Values[(m * K + k) % 4] * kFp8Values[((n * K + k) / 3) % 4];
        ref += partial * pas[m * G + g] * pws[(n / 128) * G + g];
      }
      exact &= po[m * N + n] == (float)ref;
    }
  CHECK(exact);
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&a_scale), free_tensor(&w_scale), free_tensor(&out);
}

#define BS(out_, a_, w_, as_, ws_) aiter_gemm_a8w8_blockscale((out_), (a_), (w_), (as_), (ws_), NULL)

static void test_blockscale_bad_input(void) {
  enum { M = 3, N = 130, K = 300 }; /* 3 K groups, 2 blocks of W rows */
  test_tensor a, w, a_scale, w_scale, out, a_e5m2, w_e5m2, w_fnuz, a_i8, w_i8, as_short, as_tensor, ws_rows, ws_f16,
      out_i8;
  make_tensor(&a, E4M3, 2, (int64_t[]){M, K});
  make_tensor(&w, E4M3, 2, (int64_t[]){N, K});
  make_tensor(&a_scale, F32, 2, (int64_t[]){M, 3});
  make_tensor(&w_scale, F32, 2, (int64_t[]){2, 3});
  make_tensor(&out, BF16, 2, (int64_t[]){M, N});
  make_tensor(&a_e5m2, E5M2, 2, (int64_t[]){M, K});
  make_tensor(&w_e5m2, E5M2, 2, (int64_t[]){N, K});
  make_tensor(&w_fnuz, E4M3FNUZ, 2, (int64_t[]){N, K});
  make_tensor(&a_i8, I8, 2, (int64_t[]){M, K});
  make_tensor(&w_i8, I8, 2, (int64_t[]){N, K});
  make_tensor(&as_short, F32, 2, (int64_t[]){M, 2});
  make_tensor(&as_tensor, F32, 1, (int64_t[]){1});
  make_tensor(&ws_rows, F32, 2, (int64_t[]){N, 3});
  make_tensor(&ws_f16, F16, 2, (int64_t[]){2, 3});
  make_tensor(&out_i8, I8, 2, (int64_t[]){M, N});

  const aiter_status BAD = AITER_ERR_INVALID_ARGUMENT, DTYPE = AITER_ERR_UNSUPPORTED_DTYPE;
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, NULL, &w_scale.t), BAD, "a_scale: expected a tensor");
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, &a_scale.t, NULL), BAD, "w_scale: expected a tensor");
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, &as_short.t, &w_scale.t), BAD,
                "a_scale: expected shape [M, ceil(K / 128)] = [3, 3] (per token and 128-wide K group), got [3, 2]");
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, &as_tensor.t, &w_scale.t), BAD, "a_scale: expected shape [M, ceil(K / 128)]");
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, &a_scale.t, &ws_rows.t), BAD,
                "w_scale: expected shape [ceil(N / 128), ceil(K / 128)] = [2, 3] (per 128 x 128 block of w), got "
                "[130, 3]");
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, &a_scale.t, &ws_f16.t), DTYPE, "w_scale: expected dtype float32, got float16");
  EXPECT_STATUS(BS(&out.t, &a_e5m2.t, &w_e5m2.t, &a_scale.t, &w_scale.t), DTYPE,
                "a: expected dtype float8_e4m3fn, float8_e4m3fnuz, got float8_e5m2");
  EXPECT_STATUS(BS(&out.t, &a_i8.t, &w_i8.t, &a_scale.t, &w_scale.t), DTYPE, "a: expected dtype float8_e4m3fn");
  EXPECT_STATUS(BS(&out.t, &a.t, &w_fnuz.t, &a_scale.t, &w_scale.t), DTYPE, "w: expected the dtype of a");
  EXPECT_STATUS(BS(&out_i8.t, &a.t, &w.t, &a_scale.t, &w_scale.t), DTYPE, "out: expected dtype");
  a_scale.t.strides = a_scale.strides;
  a_scale.strides[0] = 1, a_scale.strides[1] = M + 1; /* column-major with padded columns: refused */
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t), BAD,
                "a_scale: expected strides (3, 1) (row-major) or (1, 3) (column-major), got (1, 4)");
  a_scale.t.strides = NULL;
  w_scale.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(BS(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t), BAD, "w_scale: expected the device of a");
  w_scale.t.device.device_type = kDLCPU;

  CHECK(untouched(&out) && guards_intact(&out) && untouched(&out_i8));
  EXPECT_OK(BS(&out.t, &a.t, &w.t, &a_scale.t, &w_scale.t));
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&a_scale), free_tensor(&w_scale), free_tensor(&out),
      free_tensor(&a_e5m2), free_tensor(&w_e5m2), free_tensor(&w_fnuz), free_tensor(&a_i8), free_tensor(&w_i8),
      free_tensor(&as_short), free_tensor(&as_tensor), free_tensor(&ws_rows), free_tensor(&ws_f16),
      free_tensor(&out_i8);
}

/* ---- batched ------------------------------------------------------------------- */

/* B = 3 products sharing one W (batch stride 0), out[b] rows interleaved with
 * the other matrices' (an [M, B, N] buffer seen as [B, M, N]). */
static void test_batched_values(void) {
  enum { B = 3, M = 2, N = 4, K = 5 };
  test_tensor a, w, bias, out;
  make_tensor(&a, F32, 3, (int64_t[]){B, M, K});
  make_tensor(&w, F32, 3, (int64_t[]){1, N, K});
  make_tensor(&bias, F32, 1, (int64_t[]){N});
  make_tensor(&out, F32, 3, (int64_t[]){M, B, N});
  fill_f32(&a, 8), fill_f32(&w, 9), fill_f32(&bias, 10);
  w.shape[0] = B, w.strides[0] = 0, w.strides[1] = K, w.strides[2] = 1, w.t.strides = w.strides;
  out.shape[0] = B, out.shape[1] = M;
  out.strides[0] = N, out.strides[1] = B * N, out.strides[2] = 1, out.t.strides = out.strides;
  EXPECT_OK(aiter_batched_gemm_a16w16(&out.t, &a.t, &w.t, &bias.t, NULL));
  const float *pa = a.t.data, *pw = w.t.data, *pb = bias.t.data, *po = out.t.data;
  for (int b = 0; b < B; ++b)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n)
        CHECK(fabs(po[m * B * N + b * N + n] - (dot_ref(pa + b * M * K, K, pw, K, m, n, K) + pb[n])) < 1e-5);
  CHECK(guards_intact(&out));
  free_tensor(&a), free_tensor(&w), free_tensor(&bias), free_tensor(&out);
}

#define BA16(out_, a_, w_) aiter_batched_gemm_a16w16((out_), (a_), (w_), NULL, NULL)
#define BA8(out_, a_, w_, as_, ws_) aiter_batched_gemm_a8w8((out_), (a_), (w_), (as_), (ws_), NULL, NULL)

static void test_batched_bad_input(void) {
  enum { B = 2, M = 3, N = 4, K = 8 };
  test_tensor a, w, out, a2d, w_b3, out_b3, a8, w8, a_scale, w_scale, as_2d, ws_nb, out_bf16;
  make_tensor(&a, F32, 3, (int64_t[]){B, M, K});
  make_tensor(&w, F32, 3, (int64_t[]){B, N, K});
  make_tensor(&out, F32, 3, (int64_t[]){B, M, N});
  make_tensor(&a2d, F32, 2, (int64_t[]){M, K});
  make_tensor(&w_b3, F32, 3, (int64_t[]){3, N, K});
  make_tensor(&out_b3, F32, 3, (int64_t[]){3, M, N});
  make_tensor(&a8, I8, 3, (int64_t[]){B, M, K});
  make_tensor(&w8, I8, 3, (int64_t[]){B, N, K});
  make_tensor(&a_scale, F32, 3, (int64_t[]){B, M, 1});
  make_tensor(&w_scale, F32, 3, (int64_t[]){B, 1, N});
  make_tensor(&as_2d, F32, 2, (int64_t[]){M, 1});
  make_tensor(&ws_nb, F32, 3, (int64_t[]){B, N, 1});
  make_tensor(&out_bf16, BF16, 3, (int64_t[]){B, M, N});

  const aiter_status BAD = AITER_ERR_INVALID_ARGUMENT, DTYPE = AITER_ERR_UNSUPPORTED_DTYPE;
  EXPECT_STATUS(BA16(&out.t, &a2d.t, &w.t), BAD, "a: expected 3 dims, got 2");
  EXPECT_STATUS(BA16(&out.t, &a.t, &w_b3.t), BAD, "w: expected shape[0] == 2 (B, the batch of a)");
  EXPECT_STATUS(BA16(&out_b3.t, &a.t, &w.t), BAD, "out: expected shape[0] == 2 (B, the batch of a)");
  EXPECT_STATUS(BA16(&out.t, &a8.t, &w8.t), DTYPE, "a: expected dtype float32, float16, bfloat16, got int8");
  /* Output matrices on top of each other. */
  out.t.strides = out.strides;
  out.strides[0] = 0, out.strides[1] = N, out.strides[2] = 1;
  EXPECT_STATUS(BA16(&out.t, &a.t, &w.t), BAD, "out: matrices overlap (batch stride 0, row stride 4");
  out.strides[0] = M * N, out.strides[1] = 2;
  EXPECT_STATUS(BA16(&out.t, &a.t, &w.t), BAD, "out: rows overlap (row stride 2 < row length 4)");
  out.t.strides = NULL;

  EXPECT_STATUS(BA8(&out_bf16.t, &a8.t, &w8.t, NULL, &w_scale.t), BAD, "a_scale: expected a tensor");
  EXPECT_STATUS(BA8(&out_bf16.t, &a8.t, &w8.t, &as_2d.t, &w_scale.t), BAD,
                "a_scale: expected shape [B, M, 1] = [2, 3, 1] (per token) or [1] / [1, 1] (per tensor), got [3, 1]");
  EXPECT_STATUS(BA8(&out_bf16.t, &a8.t, &w8.t, &a_scale.t, &ws_nb.t), BAD,
                "w_scale: expected shape [B, 1, N] = [2, 1, 4] (per channel)");
  EXPECT_STATUS(BA8(&out_bf16.t, &a8.t, &w.t, &a_scale.t, &w_scale.t), DTYPE, "w: expected the dtype of a (int8)");

  CHECK(untouched(&out) && guards_intact(&out) && untouched(&out_b3) && untouched(&out_bf16));
  EXPECT_OK(BA16(&out.t, &a.t, &w.t));
  EXPECT_OK(BA8(&out_bf16.t, &a8.t, &w8.t, &a_scale.t, &w_scale.t));
  CHECK(guards_intact(&out) && guards_intact(&out_bf16));
  free_tensor(&a), free_tensor(&w), free_tensor(&out), free_tensor(&a2d), free_tensor(&w_b3), free_tensor(&out_b3),
      free_tensor(&a8), free_tensor(&w8), free_tensor(&a_scale), free_tensor(&w_scale), free_tensor(&as_2d),
      free_tensor(&ws_nb), free_tensor(&out_bf16);
}

int main(void) {
  test_a16w16_values();
  test_a16w16_strided_views();
  test_a8w8_values();
  test_a16w16_bad_input();
  test_a8w8_bad_input();
  test_blockscale_values();
  test_blockscale_bad_input();
  test_batched_values();
  test_batched_bad_input();
  return report();
}
