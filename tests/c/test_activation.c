/* Gated activations through the C API: correct calls checked against double
 * math, and bad input of every kind returning the right status with no write. */
#include "harness.h"

#define E5M2 dt(kDLFloat8_e5m2, 8)

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

  /* Mixed devices, and a device libaiter cannot run. */
  out.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_silu_and_mul(&out.t, &x.t, NULL), INVALID, "out: expected the device of x");
  x.t.device.device_type = kDLOpenCL, out.t.device.device_type = kDLOpenCL;
  EXPECT_STATUS(aiter_gelu_and_mul(&out.t, &x.t, AITER_GELU_TANH, NULL), INVALID, "device type 4");
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

/* silu_and_mul_quant to int8: x [3, 2*D], one all-zero row (scale 1, values 0);
 * y = silu(gate) * up in double, scale = amax / 127, q = rint(y / scale). */
static void test_quant_int8_values(void) {
  enum { M = 3, D = 1030 };
  test_tensor x, out, scale;
  make_tensor(&x, F32, 2, (int64_t[]){M, 2 * D});
  make_tensor(&out, I8, 2, (int64_t[]){M, D});
  make_tensor(&scale, F32, 2, (int64_t[]){M, 1});
  fill_f32(&x, 17);
  float *px = x.t.data;
  for (int i = 0; i < 2 * D; ++i) px[2 * D + i] = 0.0f, px[4 * D + i] *= 6.0f;
  EXPECT_OK(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL));
  const float *ps = scale.t.data;
  const signed char *q = out.t.data;
  CHECK(ps[1] == 1.0f);
  int bad = 0;
  for (int r = 0; r < M; ++r) {
    double y[D], amax = 0.0;
    for (int i = 0; i < D; ++i) {
      y[i] = silu(px[r * 2 * D + i]) * px[r * 2 * D + D + i];
      amax = fmax(amax, fabs(y[i]));
    }
    if (r != 1) CHECK(fabs(ps[r] - amax / 127.0) <= 1e-6 * ps[r]);
    /* Half a step, and a little more where fp32 and double products straddle a tie. */
    for (int i = 0; i < D; ++i) bad += fabs(q[r * D + i] - y[i] / ps[r]) > 0.5 + 1e-4 || q[r * D + i] == -128;
  }
  CHECK(bad == 0);
  CHECK(guards_intact(&out) && guards_intact(&scale));
  free_tensor(&x), free_tensor(&out), free_tensor(&scale);
}

static void test_quant_bad_input(void) {
  test_tensor x, out, scale, x_odd, x_i32, out_f32, out_wide, s_f16, s_rows, s_two, s_1d, s_3d;
  make_tensor(&x, F16, 2, (int64_t[]){4, 16});
  make_tensor(&out, E5M2, 2, (int64_t[]){4, 8});
  make_tensor(&scale, F32, 2, (int64_t[]){4, 1});
  make_tensor(&x_odd, F16, 2, (int64_t[]){4, 15});
  make_tensor(&x_i32, I32, 2, (int64_t[]){4, 16});
  make_tensor(&out_f32, F32, 2, (int64_t[]){4, 8});
  make_tensor(&out_wide, E5M2, 2, (int64_t[]){4, 16});
  make_tensor(&s_f16, F16, 2, (int64_t[]){4, 1});
  make_tensor(&s_rows, F32, 2, (int64_t[]){3, 1});
  make_tensor(&s_two, F32, 2, (int64_t[]){4, 2});
  make_tensor(&s_1d, F32, 1, (int64_t[]){4});
  make_tensor(&s_3d, F32, 3, (int64_t[]){4, 1, 1});
  const aiter_status INVALID = AITER_ERR_INVALID_ARGUMENT, DTYPE = AITER_ERR_UNSUPPORTED_DTYPE;

  EXPECT_STATUS(aiter_silu_and_mul_quant(NULL, &scale.t, &x.t, NULL), INVALID, "out: expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, NULL, &x.t, NULL), INVALID, "scale: expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, NULL, NULL), INVALID, "x: expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x_i32.t, NULL), DTYPE, "x: expected dtype");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out_f32.t, &scale.t, &x.t, NULL), DTYPE,
                "out: expected dtype int8, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, got float32");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x_odd.t, NULL), INVALID, "x: expected an even last dim");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out_wide.t, &scale.t, &x.t, NULL), INVALID, "half the last dim of x");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &s_f16.t, &x.t, NULL), DTYPE, "scale: expected dtype float32");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &s_rows.t, &x.t, NULL), INVALID, "scale: expected shape[0] == 4");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &s_two.t, &x.t, NULL), INVALID, "one scale per row of x");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &s_1d.t, &x.t, NULL), INVALID, "scale: expected 2 dims");
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &s_3d.t, &x.t, NULL), INVALID, "scale: expected 2 dims");

  /* A scale that is not compact: row r's scale would not be scale[r]. */
  s_two.t.strides = s_two.strides, s_two.t.shape[1] = 1;
  s_two.strides[0] = 2, s_two.strides[1] = 1;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &s_two.t, &x.t, NULL), INVALID, "scale: expected a compact");

  /* Negative and overflowing sizes, too many dims. */
  x.shape[0] = -4;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL), INVALID, "negative extent");
  x.shape[0] = INT64_MAX / 8;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL), INVALID, "overflow");
  x.shape[0] = 4;
  scale.t.ndim = 9;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL), INVALID, "ndim 9");
  scale.t.ndim = 2;

  /* Strided out: a transposed view, and rows that overlap. */
  out.t.strides = out.strides;
  out.strides[0] = 1, out.strides[1] = 4;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL), INVALID, "out: expected unit stride");
  out.strides[0] = 4, out.strides[1] = 1;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL), INVALID, "rows overlap");
  out.t.strides = NULL;

  /* Mixed devices. */
  scale.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL), INVALID, "scale: expected the device of x");
  scale.t.device.device_type = kDLCPU, out.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL), INVALID, "out: expected the device of x");
  out.t.device.device_type = kDLCPU;

  CHECK(untouched(&out) && guards_intact(&out) && untouched(&scale) && guards_intact(&scale));
  CHECK(untouched(&out_f32) && untouched(&out_wide) && untouched(&s_f16) && untouched(&s_rows));
  CHECK(untouched(&s_two) && untouched(&s_1d) && untouched(&s_3d));
  fill_f32(&x, 9); /* fills 16-bit halves with float bits: finite, some large; enough to see writes */
  EXPECT_OK(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL)); /* the same tensors, repaired, work */
  CHECK(!untouched(&scale) && guards_intact(&out) && guards_intact(&scale));
  free_tensor(&x), free_tensor(&out), free_tensor(&scale), free_tensor(&x_odd), free_tensor(&x_i32),
      free_tensor(&out_f32), free_tensor(&out_wide), free_tensor(&s_f16), free_tensor(&s_rows),
      free_tensor(&s_two), free_tensor(&s_1d), free_tensor(&s_3d);
}

/* Rows of nothing still get their scale, 1; no rows at all write nothing. */
static void test_quant_empty(void) {
  test_tensor x, out, scale;
  make_tensor(&x, BF16, 3, (int64_t[]){2, 3, 0});
  make_tensor(&out, I8, 3, (int64_t[]){2, 3, 0});
  make_tensor(&scale, F32, 3, (int64_t[]){2, 3, 1});
  EXPECT_OK(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL));
  const float *ps = scale.t.data;
  int ones = 0;
  for (int i = 0; i < 6; ++i) ones += ps[i] == 1.0f;
  CHECK(ones == 6 && guards_intact(&scale) && guards_intact(&out));
  free_tensor(&x), free_tensor(&out), free_tensor(&scale);
  make_tensor(&x, F32, 2, (int64_t[]){0, 8});
  make_tensor(&out, E4M3, 2, (int64_t[]){0, 4});
  make_tensor(&scale, F32, 2, (int64_t[]){0, 1});
  EXPECT_OK(aiter_silu_and_mul_quant(&out.t, &scale.t, &x.t, NULL));
  CHECK(guards_intact(&scale) && guards_intact(&out));
  free_tensor(&x), free_tensor(&out), free_tensor(&scale);
}

int main(void) {
  check_values(0, silu);
  check_values(1, gelu_exact);
  check_values(2, gelu_tanh);
  test_bad_input();
  test_empty();
  test_quant_int8_values();
  test_quant_bad_input();
  test_quant_empty();
  return report();
}
