/* Quantization through the C API: correct calls checked against double math,
 * and bad input of every kind returning the right status with no write. */
#include "harness.h"

#define E4M3FNUZ dt(kDLFloat8_e4m3fnuz, 8)
static const aiter_status INVALID = AITER_ERR_INVALID_ARGUMENT;

static float max_abs(const float *p, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i) m = fabsf(p[i]) > m ? fabsf(p[i]) : m;
  return m;
}

/* e4m3fn bits -> value (finite codes only: the saturating quantizer makes no NaN). */
static double e4m3fn_value(unsigned char b) {
  const int e = (b >> 3) & 15, m = b & 7;
  const double mag = e == 0 ? ldexp(m, -9) : ldexp(1.0 + m / 8.0, e - 7);
  return (b & 0x80) ? -mag : mag;
}

/* int8, one scale: every value is rint(x / scale), the scale amax / 127. */
static void test_per_tensor_int8_values(void) {
  enum { N = 4 * 300 };
  test_tensor x, out, scale;
  make_tensor(&x, F32, 2, (int64_t[]){4, 300});
  make_tensor(&out, I8, 2, (int64_t[]){4, 300});
  make_tensor(&scale, F32, 1, (int64_t[]){1});
  fill_f32(&x, 11);
  EXPECT_OK(aiter_quant_per_tensor_dynamic(&out.t, &scale.t, &x.t, NULL));
  const float *px = x.t.data, s = *(float *)scale.t.data;
  const signed char *q = out.t.data;
  CHECK(fabs(s - max_abs(px, N) / 127.0) <= 1e-7 * s);
  int bad = 0;
  for (int i = 0; i < N; ++i) bad += fabs(q[i] - px[i] / s) > 0.5 + 1e-4 || q[i] == -128;
  CHECK(bad == 0);
  CHECK(guards_intact(&out) && guards_intact(&scale));
  free_tensor(&x), free_tensor(&out), free_tensor(&scale);
}

/* e4m3fn, one scale per row (one row all zero: scale 1, values 0). */
static void test_per_token_fp8_values(void) {
  enum { M = 3, H = 1100 };
  test_tensor x, out, scale;
  make_tensor(&x, F32, 2, (int64_t[]){M, H});
  make_tensor(&out, E4M3, 2, (int64_t[]){M, H});
  make_tensor(&scale, F32, 2, (int64_t[]){M, 1});
  fill_f32(&x, 5);
  float *px = x.t.data;
  for (int i = 0; i < H; ++i) px[H + i] = 0.0f, px[2 * H + i] *= 1000.0f;
  EXPECT_OK(aiter_quant_per_token_dynamic(&out.t, &scale.t, &x.t, NULL));
  const float *ps = scale.t.data;
  const unsigned char *q = out.t.data;
  CHECK(ps[1] == 1.0f);
  int bad = 0;
  for (int r = 0; r < M; ++r) {
    const double s = ps[r];
    if (r != 1) CHECK(fabs(s - max_abs(px + r * H, H) / 448.0) <= 1e-7 * s);
    for (int i = 0; i < H; ++i) {
      /* Half a unit in the last place: 2^-4 relative, or 2^-10 * scale among subnormals. */
      const double x_i = px[r * H + i], err = fabs(e4m3fn_value(q[r * H + i]) * s - x_i);
      bad += !(err <= fabs(x_i) / 16.0 + ldexp(s, -10));
    }
  }
  CHECK(bad == 0);
  CHECK(guards_intact(&out) && guards_intact(&scale));
  free_tensor(&x), free_tensor(&out), free_tensor(&scale);
}

/* A static scale is read, and values past qmax saturate. */
static void test_static_values(void) {
  test_tensor x, out, scale;
  make_tensor(&x, F32, 1, (int64_t[]){4});
  make_tensor(&out, I8, 1, (int64_t[]){4});
  make_tensor(&scale, F32, 2, (int64_t[]){1, 1});
  const float in[4] = {2.5f, -3.5f, 1000.0f, -1000.0f};
  memcpy(x.t.data, in, sizeof in);
  *(float *)scale.t.data = 0.5f;
  EXPECT_OK(aiter_quant_per_tensor_static(&out.t, &x.t, &scale.t, NULL));
  const signed char *q = out.t.data;
  CHECK(q[0] == 5 && q[1] == -7 && q[2] == 127 && q[3] == -127);
  free_tensor(&x), free_tensor(&out), free_tensor(&scale);
}

static void test_bad_input(void) {
  test_tensor x, out, s1, s_tok, s_two, s_f16, s_tok_short, s_tok_wide, out_f32, out_shape, x_i8;
  make_tensor(&x, BF16, 2, (int64_t[]){4, 32});
  make_tensor(&out, E4M3FNUZ, 2, (int64_t[]){4, 32});
  make_tensor(&s1, F32, 1, (int64_t[]){1});
  make_tensor(&s_tok, F32, 2, (int64_t[]){4, 1});
  make_tensor(&s_two, F32, 1, (int64_t[]){2});
  make_tensor(&s_f16, F16, 1, (int64_t[]){1});
  make_tensor(&s_tok_short, F32, 2, (int64_t[]){3, 1});
  make_tensor(&s_tok_wide, F32, 2, (int64_t[]){4, 2});
  make_tensor(&out_f32, F32, 2, (int64_t[]){4, 32});
  make_tensor(&out_shape, E4M3FNUZ, 2, (int64_t[]){4, 31});
  make_tensor(&x_i8, I8, 2, (int64_t[]){4, 32});

  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(NULL, &s1.t, &x.t, NULL), INVALID, "out: expected a tensor");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, NULL, &x.t, NULL), INVALID, "scale: expected a tensor");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, &s1.t, NULL, NULL), INVALID, "x: expected a tensor");
  EXPECT_STATUS(aiter_quant_per_tensor_static(&out.t, &x.t, NULL, NULL), INVALID, "scale: expected a tensor");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, &s_two.t, &x.t, NULL), INVALID, "scale: expected shape [1] or [1, 1]");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, &s_tok.t, &x.t, NULL), INVALID, "got [4, 1]");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, &s_f16.t, &x.t, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "scale: expected dtype float32");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out_f32.t, &s1.t, &x.t, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "out: expected dtype int8");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, &s1.t, &x_i8.t, NULL), AITER_ERR_UNSUPPORTED_DTYPE, "x: expected dtype");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out_shape.t, &s1.t, &x.t, NULL), INVALID, "out: expected the shape of x");
  EXPECT_STATUS(aiter_quant_per_token_dynamic(&out.t, &s1.t, &x.t, NULL), INVALID, "scale: expected 2 dims");
  EXPECT_STATUS(aiter_quant_per_token_dynamic(&out.t, &s_tok_short.t, &x.t, NULL), INVALID, "scale: expected shape[0] == 4");
  EXPECT_STATUS(aiter_quant_per_token_dynamic(&out.t, &s_tok_wide.t, &x.t, NULL), INVALID, "one scale per row");
  s_tok.t.strides = s_tok.strides;
  s_tok.strides[0] = 2, s_tok.strides[1] = 1;
  EXPECT_STATUS(aiter_quant_per_token_dynamic(&out.t, &s_tok.t, &x.t, NULL), INVALID, "scale: expected a compact");
  s_tok.t.strides = NULL;

  /* Static scales that are not normal positive numbers. */
  const float bad_scales[] = {0.0f, -1.0f, NAN, INFINITY, 1e-40f};
  for (int i = 0; i < 5; ++i) {
    *(float *)s1.t.data = bad_scales[i];
    EXPECT_STATUS(aiter_quant_per_tensor_static(&out.t, &x.t, &s1.t, NULL), INVALID, "scale: expected a finite value");
  }
  *(float *)s1.t.data = 0.0f;

  /* Sizes: negative, overflowing, a 0-d x. */
  x.shape[1] = -32;
  EXPECT_STATUS(aiter_quant_per_token_dynamic(&out.t, &s_tok.t, &x.t, NULL), INVALID, "negative extent");
  x.shape[1] = INT64_MAX / 2;
  EXPECT_STATUS(aiter_quant_per_token_dynamic(&out.t, &s_tok.t, &x.t, NULL), INVALID, "overflow");
  x.shape[1] = 32;
  x.t.ndim = 0;
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, &s1.t, &x.t, NULL), INVALID, "x: expected at least 1 dims");
  x.t.ndim = 2;

  /* Mixed devices, and a GPU no machine has (host memory behind it, so the call must
   * fail before any launch): AITER_ERR_NO_DEVICE without a driver, AITER_ERR_DEVICE
   * from the driver for the device id. */
  s1.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(&out.t, &s1.t, &x.t, NULL), INVALID, "scale: expected the device of x");
  out.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(aiter_quant_per_token_dynamic(&out.t, &s_tok.t, &x.t, NULL), INVALID, "out: expected the device of x");
  x.t.device = out.t.device = s1.t.device = (DLDevice){kDLCUDA, 4096};
  const aiter_status on_missing_gpu = aiter_quant_per_tensor_static(&out.t, &x.t, &s1.t, NULL);
  CHECK(on_missing_gpu == AITER_ERR_NO_DEVICE || on_missing_gpu == AITER_ERR_DEVICE);
  x.t.device = out.t.device = s1.t.device = (DLDevice){kDLCPU, 0};

  CHECK(untouched(&out) && guards_intact(&out) && untouched(&out_shape));
  CHECK(untouched(&s1) && untouched(&s_tok) && untouched(&s_two) && untouched(&s_tok_short) && untouched(&s_tok_wide));
  EXPECT_OK(aiter_quant_per_token_dynamic(&out.t, &s_tok.t, &x.t, NULL)); /* repaired, they work */
  CHECK(guards_intact(&out) && guards_intact(&s_tok) && ((float *)s_tok.t.data)[0] == 1.0f); /* x is all zero */
  free_tensor(&x), free_tensor(&out), free_tensor(&s1), free_tensor(&s_tok), free_tensor(&s_two), free_tensor(&s_f16),
      free_tensor(&s_tok_short), free_tensor(&s_tok_wide), free_tensor(&out_f32), free_tensor(&out_shape),
      free_tensor(&x_i8);
}

/* Rows of nothing, and an empty tensor, still get their scale of 1. */
static void test_empty_rows(void) {
  test_tensor x, out, scale;
  make_tensor(&x, F16, 2, (int64_t[]){3, 0});
  make_tensor(&out, I8, 2, (int64_t[]){3, 0});
  make_tensor(&scale, F32, 2, (int64_t[]){3, 1});
  EXPECT_OK(aiter_quant_per_token_dynamic(&out.t, &scale.t, &x.t, NULL));
  const float *ps = scale.t.data;
  CHECK(ps[0] == 1.0f && ps[1] == 1.0f && ps[2] == 1.0f && guards_intact(&scale));
  test_tensor one;
  make_tensor(&one, F32, 1, (int64_t[]){1});
  EXPECT_OK(aiter_quant_per_tensor_dynamic(&out.t, &one.t, &x.t, NULL));
  CHECK(*(float *)one.t.data == 1.0f && guards_intact(&one));
  free_tensor(&x), free_tensor(&out), free_tensor(&scale), free_tensor(&one);
}

int main(void) {
  test_per_tensor_int8_values();
  test_per_token_fp8_values();
  test_static_values();
  test_bad_input();
  test_empty_rows();
  return report();
}
