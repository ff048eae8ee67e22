/* Gated activations through the C API: correct calls checked against double
 * math, and bad input of every kind returning the right status with no write. */
#include "harness.h"

static double silu(double g) { return g / (1.0 + exp(-g)); }
static double gelu_exact(double g) { return 0.5 * g * (1.0 + erf(g / sqrt(2.0))); }
static double gelu_tanh(double g) {
  return 0.5 * g * (1.0 + tanh(0.79788456080286536 /* sqrt(2 / pi) */ * (g + 0.044715 * g * g * g)));
}

/* x [3, 2*d] in [-4, 4), out [3, d]: every element against act(gate) * up. */
static void check_values(int which, double (*act)(double)) {
  enum { M = 3, D = 1030 }; /* D > one 1024-column tile */
  test_tensor x, out;
  make_tensor(&x, F32, 2, (int64_t[]){M, 2 * D});
  make_tensor(&out, F32, 2, (int64_t[]){M, D});
  fill_f32(&x, 7u + (unsigned)which);
  float *px = x.t.data;
  for (int i = 0; i < M * 2 * D; ++i) px[i] *= 4.0f;
  if (which == 0) EXPECT_OK(aiter_silu_and_mul(&out.t, &x.t, NULL));
  else EXPECT_OK(aiter_gelu_and_mul(&out.t, &x.t, which == 1 ? AITER_GELU_EXACT : AITER_GELU_TANH, NULL));
  const float *po = out.t.data;
  int bad = 0;
  for (int r = 0; r < M; ++r)
    for (int i = 0; i < D; ++i) {
      const double ref = act(px[r * 2 * D + i]) * px[r * 2 * D + D + i];
      bad += !(fabs(po[r * D + i] - ref) <= 1e-5 * (1.0 + fabs(ref)));
    }
  CHECK(bad == 0);
  CHECK(guards_intact(&out));
  free_tensor(&x), free_tensor(&out);
}

static void test_bad_input(void) {
  test_tensor x, out, x_odd, out_odd, out_wide, out_rows, out_3d, out_f16, x_i32, x_0d;
  make_tensor(&x, F32, 2, (int64_t[]){4, 16});
  make_tensor(&out, F32, 2, (int64_t[]){4, 8});
  make_tensor(&x_odd, F32, 2, (int64_t[]){4, 15});
  make_tensor(&out_odd, F32, 2, (int64_t[]){4, 7});
  make_tensor(&out_wide, F32, 2, (int64_t[]){4, 16});
  make_tensor(&out_rows, F32, 2, (int64_t[]){5, 8});
  make_tensor(&out_3d, F32, 3, (int64_t[]){1, 4, 8});
  make_tensor(&out_f16, F16, 2, (int64_t[]){4, 8});
  make_tensor(&x_i32, I32, 2, (int64_t[]){4, 16});
  make_tensor(&x_0d, F32, 0, NULL);
  fill_f32(&x, 3);
  const aiter_status INVALID = AITER_ERR_INVALID_ARGUMENT;

  EXPECT_STATUS(aiter_silu_and_mul(NULL, &x.t, NULL), INVALID, "out: expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, NULL, NULL), INVALID, "x: expected a tensor");
  EXPECT_STATUS(aiter_gelu_and_mul(NULL, &x.t, AITER_GELU_EXACT, NULL), INVALID, "out: expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul(&out_odd.t, &x_odd.t, NULL), INVALID, "x: expected an even last dim");
  EXPECT_STATUS(aiter_silu_and_mul(&out_wide.t, &x.t, NULL), INVALID, "half the last dim of x");
  EXPECT_STATUS(aiter_silu_and_mul(&out_rows.t, &x.t, NULL), INVALID, "out: expected shape[0] == 4");
  EXPECT_STATUS(aiter_silu_and_mul(&out_3d.t, &x.t, NULL), INVALID, "out: expected 2 dims");
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x_0d.t, NULL), INVALID, "x: expected at least 1 dims");
  EXPECT_STATUS(aiter_silu_and_mul(&out_f16.t, &x.t, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "out: expected the dtype of x");
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x_i32.t, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "x: expected dtype");
  EXPECT_STATUS(aiter_gelu_and_mul(&out.t, &x.t, (aiter_gelu_approx)7, NULL), INVALID, "approx: expected");
  EXPECT_STATUS(aiter_gelu_and_mul(&out.t, &x.t, (aiter_gelu_approx)-1, NULL), INVALID, "got -1");

  /* Negative and overflowing sizes. */
  x.shape[0] = -4;
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x.t, NULL), INVALID, "negative extent");
  x.shape[0] = INT64_MAX / 8;
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x.t, NULL), INVALID, "overflow");
  x.shape[0] = 4;
  out.t.ndim = 9;
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x.t, NULL), INVALID, "ndim 9");
  out.t.ndim = 2;

  /* Strides: a transposed out, and rows that overlap. */
  out.t.strides = out.strides;
  out.strides[0] = 1, out.strides[1] = 4;
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x.t, NULL), INVALID, "out: expected unit stride");
  out.strides[0] = 4, out.strides[1] = 1;
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x.t, NULL), INVALID, "rows overlap");
  out.t.strides = NULL;

  /* Mixed devices, and GPU tensors in a CPU-only library. */
  out.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x.t, NULL), INVALID, "out: expected the device of x");
  x.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_gelu_and_mul(&out.t, &x.t, AITER_GELU_TANH, NULL), AITER_ERR_NO_DEVICE, "aiter_gelu_and_mul");
  x.t.device.device_type = kDLCPU, out.t.device.device_type = kDLCPU;

  CHECK(untouched(&out) && guards_intact(&out));
  CHECK(untouched(&out_wide) && untouched(&out_rows) && untouched(&out_f16) && untouched(&out_odd));
  EXPECT_OK(aiter_silu_and_mul(&out.t, &x.t, NULL)); /* the same tensors, repaired, work */
  CHECK(!untouched(&out) && guards_intact(&out));
  free_tensor(&x), free_tensor(&out), free_tensor(&x_odd), free_tensor(&out_odd), free_tensor(&out_wide),
      free_tensor(&out_rows), free_tensor(&out_3d), free_tensor(&out_f16), free_tensor(&x_i32), free_tensor(&x_0d);
}

/* Empty tensors, whatever their strides: rows of nothing and no rows at all are valid and write nothing. */
static void test_empty(void) {
  test_tensor x, out;
  make_tensor(&x, BF16, 2, (int64_t[]){0, 64});
  make_tensor(&out, BF16, 2, (int64_t[]){0, 32});
  EXPECT_OK(aiter_silu_and_mul(&out.t, &x.t, NULL));
  x.t.strides = x.strides; /* NumPy describes its empty arrays with zero strides */
  EXPECT_OK(aiter_silu_and_mul(&out.t, &x.t, NULL));
  free_tensor(&x), free_tensor(&out);
  make_tensor(&x, F16, 2, (int64_t[]){3, 0});
  make_tensor(&out, F16, 2, (int64_t[]){3, 0});
  EXPECT_OK(aiter_gelu_and_mul(&out.t, &x.t, AITER_GELU_EXACT, NULL));
  CHECK(guards_intact(&out));
  free_tensor(&x), free_tensor(&out);
}

int main(void) {
  check_values(0, silu);
  check_values(1, gelu_exact);
  check_values(2, gelu_tanh);
  test_bad_input();
  test_empty();
  return report();
}
