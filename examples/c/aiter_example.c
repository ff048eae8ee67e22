/*
 * libaiter from C: RMSNorm and a GEMM on host memory, checked against plain C
 * loops, plus one call with a wrong argument to show how errors come back.
 * Every status is checked; the program exits non-zero on any mismatch.
 *
 *   cc aiter_example.c $(pkg-config --cflags --libs aiter) -lm -o aiter_example
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <aiter/aiter.h>

enum { ROWS = 3, HIDDEN = 40, OUT_FEATURES = 24 };

/* A compact row-major float32 CPU tensor over caller-owned memory. */
static DLTensor host_tensor(float *data, int ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* Prints the failure of `call` and returns 1 unless it returned `expected`. */
static int check_status(const char *call, aiter_status got, aiter_status expected) {
  if (got == expected) return 0;
  fprintf(stderr, "%s: expected status %d (%s), got %d (%s): %s\n", call, (int)expected,
          aiter_status_string(expected), (int)got, aiter_status_string(got), aiter_last_error());
  return 1;
}

/* Largest |got - want| relative to 1 + |want| over n values. */
static double max_error(const float *got, const double *want, int n) {
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const double err = fabs(got[i] - want[i]) / (1.0 + fabs(want[i]));
    if (!(err <= worst)) worst = err; /* also catches NaN */
  }
  return worst;
}

static void fill(float *v, int n, int seed) {
  for (int i = 0; i < n; ++i) v[i] = (float)sin(0.37 * i + seed) * (1.0f + 0.01f * (float)(i % 7));
}

static int print_library(void) {
  aiter_library_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (check_status("aiter_get_library_info", aiter_get_library_info(&info), AITER_OK)) return 1;
  printf("libaiter %s (header %d.%d.%d)\n", aiter_version_string(), info.version_major, info.version_minor,
         info.version_patch);
  printf("gpu targets: %s\n", info.gpu_targets[0] ? info.gpu_targets : "none");
  printf("code objects: %s\n", info.kernel_dir[0] ? info.kernel_dir : "none found");
  return 0;
}

static int rmsnorm_example(void) {
  float x[ROWS * HIDDEN], weight[HIDDEN], out[ROWS * HIDDEN];
  double want[ROWS * HIDDEN];
  fill(x, ROWS * HIDDEN, 1);
  fill(weight, HIDDEN, 2);
  const float eps = 1e-6f;
  for (int r = 0; r < ROWS; ++r) {
    double sum = 0;
    for (int h = 0; h < HIDDEN; ++h) sum += (double)x[r * HIDDEN + h] * x[r * HIDDEN + h];
    const double inv = 1.0 / sqrt(sum / HIDDEN + eps);
    for (int h = 0; h < HIDDEN; ++h) want[r * HIDDEN + h] = x[r * HIDDEN + h] * inv * weight[h];
  }
  int64_t x_shape[2] = {ROWS, HIDDEN}, w_shape[1] = {HIDDEN};
  DLTensor tx = host_tensor(x, 2, x_shape), tw = host_tensor(weight, 1, w_shape),
           tout = host_tensor(out, 2, x_shape);
  if (check_status("aiter_rmsnorm", aiter_rmsnorm(&tout, &tx, &tw, eps, NULL), AITER_OK)) return 1;
  const double err = max_error(out, want, ROWS * HIDDEN);
  printf("rmsnorm %dx%d: max relative error %.2e\n", ROWS, HIDDEN, err);
  return err > 1e-5;
}

static int gemm_example(void) {
  float a[ROWS * HIDDEN], w[OUT_FEATURES * HIDDEN], bias[OUT_FEATURES], out[ROWS * OUT_FEATURES];
  double want[ROWS * OUT_FEATURES];
  fill(a, ROWS * HIDDEN, 3);
  fill(w, OUT_FEATURES * HIDDEN, 4);
  fill(bias, OUT_FEATURES, 5);
  for (int m = 0; m < ROWS; ++m)
    for (int n = 0; n < OUT_FEATURES; ++n) {
      double acc = bias[n];
      for (int k = 0; k < HIDDEN; ++k) acc += (double)a[m * HIDDEN + k] * w[n * HIDDEN + k];
      want[m * OUT_FEATURES + n] = acc;
    }
  int64_t a_shape[2] = {ROWS, HIDDEN}, w_shape[2] = {OUT_FEATURES, HIDDEN}, b_shape[1] = {OUT_FEATURES},
          o_shape[2] = {ROWS, OUT_FEATURES};
  DLTensor ta = host_tensor(a, 2, a_shape), tw = host_tensor(w, 2, w_shape), tb = host_tensor(bias, 1, b_shape),
           tout = host_tensor(out, 2, o_shape);
  if (check_status("aiter_gemm_a16w16", aiter_gemm_a16w16(&tout, &ta, &tw, &tb, NULL), AITER_OK)) return 1;
  const double err = max_error(out, want, ROWS * OUT_FEATURES);
  printf("gemm %dx%d . %dx%d^T + bias: max relative error %.2e\n", ROWS, HIDDEN, OUT_FEATURES, HIDDEN, err);
  return err > 1e-5;
}

/* A weight one element short: the call must fail, name the argument, and leave out alone. */
static int error_example(void) {
  float x[HIDDEN], weight[HIDDEN], out[HIDDEN];
  fill(x, HIDDEN, 6);
  fill(weight, HIDDEN, 7);
  for (int i = 0; i < HIDDEN; ++i) out[i] = -42.0f;
  int64_t x_shape[1] = {HIDDEN}, short_shape[1] = {HIDDEN - 1};
  DLTensor tx = host_tensor(x, 1, x_shape), tw = host_tensor(weight, 1, short_shape),
           tout = host_tensor(out, 1, x_shape);
  if (check_status("aiter_rmsnorm (short weight)", aiter_rmsnorm(&tout, &tx, &tw, 1e-6f, NULL),
                   AITER_ERR_INVALID_ARGUMENT))
    return 1;
  const char *message = aiter_last_error();
  printf("a short weight is refused: %s\n", message);
  if (strstr(message, "weight") == NULL) {
    fprintf(stderr, "the message does not name the weight\n");
    return 1;
  }
  for (int i = 0; i < HIDDEN; ++i)
    if (out[i] != -42.0f) {
      fprintf(stderr, "out[%d] was written by a call that failed its checks\n", i);
      return 1;
    }
  return 0;
}

int main(void) {
  const int failures = print_library() + rmsnorm_example() + gemm_example() + error_example();
  printf("%s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
