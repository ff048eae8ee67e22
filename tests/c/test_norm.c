/* Norm ops through the C API: a correct call, and bad input of every kind
 * returning the right status with no write to any buffer. */
#include "harness.h"

static void test_rmsnorm_values(void) {
  test_tensor x, w, out;
  make_tensor(&x, F32, 2, (int64_t[]){3, 8});
  make_tensor(&w, F32, 1, (int64_t[]){8});
  make_tensor(&out, F32, 2, (int64_t[]){3, 8});
  fill_f32(&x, 1);
  fill_f32(&w, 2);
  EXPECT_OK(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL));
  const float *px = x.t.data, *pw = w.t.data, *po = out.t.data;
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int i = 0; i < 8; ++i) ss += (double)px[r * 8 + i] * px[r * 8 + i];
    const double inv = 1.0 / sqrt(ss / 8 + 1e-6);
    for (int i = 0; i < 8; ++i) CHECK(fabs(po[r * 8 + i] - px[r * 8 + i] * inv * pw[i]) < 1e-5);
  }
  CHECK(guards_intact(&out));
  free_tensor(&x), free_tensor(&w), free_tensor(&out);
}

static void test_rmsnorm_bad_input(void) {
  test_tensor x, w, out, w_short, out_f16, x_i32;
  make_tensor(&x, F32, 2, (int64_t[]){4, 16});
  make_tensor(&w, F32, 1, (int64_t[]){16});
  make_tensor(&out, F32, 2, (int64_t[]){4, 16});
  make_tensor(&w_short, F32, 1, (int64_t[]){15});
  make_tensor(&out_f16, F16, 2, (int64_t[]){4, 16});
  make_tensor(&x_i32, I32, 2, (int64_t[]){4, 16});

  EXPECT_STATUS(aiter_rmsnorm(NULL, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "out: expected a tensor");
  EXPECT_STATUS(aiter_rmsnorm(&out.t, NULL, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "x: expected a tensor");
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, NULL, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "weight");
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w_short.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "weight: expected shape[0] == 16");
  EXPECT_STATUS(aiter_rmsnorm(&out_f16.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "out: expected the dtype of x");
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x_i32.t, &w.t, 1e-6f, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "x: expected dtype");
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, -1.0f, NULL), AITER_ERR_INVALID_ARGUMENT, "epsilon");
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, NAN, NULL), AITER_ERR_INVALID_ARGUMENT, "epsilon");

  /* ndim out of range, negative and overflowing sizes, null data, bad dtype lanes. */
  x.t.ndim = 9;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "ndim 9");
  x.t.ndim = -1;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "ndim -1");
  x.t.ndim = 2;
  x.shape[0] = -4;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "negative extent");
  x.shape[0] = INT64_MAX / 2;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "overflow");
  x.shape[0] = 4;
  void *saved = x.t.data;
  x.t.data = NULL;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "data is NULL");
  x.t.data = saved;
  x.t.dtype.lanes = 4;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "lanes 4");
  x.t.dtype.lanes = 1;

  /* A stride that does not fold into rows, and a negative stride. */
  x.t.strides = x.strides;
  x.strides[0] = 1, x.strides[1] = 4;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "unit stride");
  x.strides[0] = -16, x.strides[1] = 1;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "negative stride");
  x.t.strides = NULL;

  /* Mixed devices, and GPU tensors in a CPU-only library. */
  w.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "weight: expected the device of x");
  w.t.device.device_type = kDLCPU;
  x.t.device.device_type = kDLOpenCL;
  EXPECT_STATUS(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "device type 4");
  x.t.device.device_type = kDLCPU;

  CHECK(untouched(&out) && guards_intact(&out));
  EXPECT_OK(aiter_rmsnorm(&out.t, &x.t, &w.t, 1e-6f, NULL)); /* the same tensors, repaired, work */
  free_tensor(&x), free_tensor(&w), free_tensor(&out), free_tensor(&w_short), free_tensor(&out_f16),
      free_tensor(&x_i32);
}

static void test_add_rmsnorm_bad_input(void) {
  test_tensor x, r, w, out, r_out, r_bad;
  make_tensor(&x, BF16, 2, (int64_t[]){2, 32});
  make_tensor(&r, BF16, 2, (int64_t[]){2, 32});
  make_tensor(&w, BF16, 1, (int64_t[]){32});
  make_tensor(&out, BF16, 2, (int64_t[]){2, 32});
  make_tensor(&r_out, BF16, 2, (int64_t[]){2, 32});
  make_tensor(&r_bad, BF16, 2, (int64_t[]){2, 31});
  EXPECT_OK(aiter_add_rmsnorm(&out.t, &r_out.t, &x.t, &r.t, &w.t, 1e-6f, NULL));
  EXPECT_STATUS(aiter_add_rmsnorm(&out.t, NULL, &x.t, &r.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT, "residual_out");
  EXPECT_STATUS(aiter_add_rmsnorm(&out.t, &r_out.t, &x.t, &r_bad.t, &w.t, 1e-6f, NULL), AITER_ERR_INVALID_ARGUMENT,
                "residual: expected the shape of x");
  CHECK(guards_intact(&out) && guards_intact(&r_out));
  free_tensor(&x), free_tensor(&r), free_tensor(&w), free_tensor(&out), free_tensor(&r_out), free_tensor(&r_bad);
}

int main(void) {
  test_rmsnorm_values();
  test_rmsnorm_bad_input();
  test_add_rmsnorm_bad_input();
  return report();
}
