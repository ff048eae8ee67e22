/* aiter_topk_softmax through the C API: a correct call checked against a
 * float64 softmax, and bad input returning the right status with nothing written. */
#include "harness.h"

enum { T = 4, E = 8, K = 3 };

/* The top K of a float64 softmax of row r, by repeated selection (ties: lower id). */
static void reference_row(const float *logits, int renormalize, double *weights, int *ids) {
  double max = logits[0], sum = 0, prob[E], picked = 0;
  int taken[E] = {0};
  for (int e = 1; e < E; ++e) max = logits[e] > max ? logits[e] : max;
  for (int e = 0; e < E; ++e) sum += prob[e] = exp((double)logits[e] - max);
  for (int j = 0; j < K; ++j) {
    int best = -1;
    for (int e = 0; e < E; ++e)
      if (!taken[e] && (best < 0 || prob[e] > prob[best])) best = e;
    taken[best] = 1;
    ids[j] = best;
    weights[j] = prob[best] / sum;
    picked += weights[j];
  }
  for (int j = 0; renormalize && j < K; ++j) weights[j] /= picked;
}

static void test_topk_softmax_values(void) {
  for (int renormalize = 0; renormalize <= 1; ++renormalize) {
    test_tensor g, w, ids;
    make_tensor(&g, F32, 2, (int64_t[]){T, E});
    make_tensor(&w, F32, 2, (int64_t[]){T, K});
    make_tensor(&ids, I32, 2, (int64_t[]){T, K});
    fill_f32(&g, 5);
    float *logits = (float *)g.t.data;
    logits[E + 2] = logits[E + 5] = 3.0f; /* row 1: a tie for first place */
    EXPECT_OK(aiter_topk_softmax(&w.t, &ids.t, &g.t, renormalize, NULL));
    const float *pw = (const float *)w.t.data;
    const int32_t *pid = (const int32_t *)ids.t.data;
    for (int r = 0; r < T; ++r) {
      double ref_w[K];
      int ref_id[K];
      reference_row(logits + r * E, renormalize, ref_w, ref_id);
      for (int j = 0; j < K; ++j) CHECK(pid[r * K + j] == ref_id[j] && fabs(pw[r * K + j] - ref_w[j]) < 1e-6);
    }
    CHECK(pid[K] == 2 && pid[K + 1] == 5);
    CHECK(guards_intact(&w) && guards_intact(&ids));
    free_tensor(&g), free_tensor(&w), free_tensor(&ids);
  }
}

#define TOPK(w, ids, g) aiter_topk_softmax((w), (ids), (g), 0, NULL)

static void test_topk_softmax_bad_input(void) {
  test_tensor g, w, ids, g3d, g_i32, w_f16, ids_i64, ids_short, w_rows, w_wide, w_empty, ids_empty;
  make_tensor(&g, F32, 2, (int64_t[]){T, E});
  make_tensor(&w, F32, 2, (int64_t[]){T, K});
  make_tensor(&ids, I32, 2, (int64_t[]){T, K});
  make_tensor(&g3d, F32, 3, (int64_t[]){1, T, E});
  make_tensor(&g_i32, I32, 2, (int64_t[]){T, E});
  make_tensor(&w_f16, F16, 2, (int64_t[]){T, K});
  make_tensor(&ids_i64, I64, 2, (int64_t[]){T, K});
  make_tensor(&ids_short, I32, 2, (int64_t[]){T, K - 1});
  make_tensor(&w_rows, F32, 2, (int64_t[]){T + 1, K});
  make_tensor(&w_wide, F32, 2, (int64_t[]){T, E + 1});
  make_tensor(&w_empty, F32, 2, (int64_t[]){T, 0});
  make_tensor(&ids_empty, I32, 2, (int64_t[]){T, 0});
  fill_f32(&g, 6);

  EXPECT_STATUS(TOPK(NULL, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "topk_weights: expected a tensor");
  EXPECT_STATUS(TOPK(&w.t, NULL, &g.t), AITER_ERR_INVALID_ARGUMENT, "topk_ids: expected a tensor");
  EXPECT_STATUS(TOPK(&w.t, &ids.t, NULL), AITER_ERR_INVALID_ARGUMENT, "gating: expected a tensor");
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g3d.t), AITER_ERR_INVALID_ARGUMENT, "gating: expected 2 dims");
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g_i32.t), AITER_ERR_UNSUPPORTED_DTYPE, "gating: expected dtype float32, float16");
  EXPECT_STATUS(TOPK(&w_f16.t, &ids.t, &g.t), AITER_ERR_UNSUPPORTED_DTYPE, "topk_weights: expected dtype float32");
  EXPECT_STATUS(TOPK(&w.t, &ids_i64.t, &g.t), AITER_ERR_UNSUPPORTED_DTYPE, "topk_ids: expected dtype int32");
  EXPECT_STATUS(TOPK(&w.t, &ids_short.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "topk_ids: expected the shape of topk_weights");
  EXPECT_STATUS(TOPK(&w_rows.t, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "topk_weights: expected shape[0] == 4");
  EXPECT_STATUS(TOPK(&w_wide.t, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "(k) in [1, 8]");
  EXPECT_STATUS(TOPK(&w_empty.t, &ids_empty.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "(k) in [1, 8]");

  /* Strides: gating with a non-unit last stride, outputs whose rows overlap. */
  g.t.strides = g.strides;
  g.strides[0] = 1, g.strides[1] = T;
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "gating: expected unit stride");
  g.t.strides = NULL;
  w.t.strides = w.strides;
  w.strides[0] = 1, w.strides[1] = 1;
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "topk_weights: rows overlap");
  w.t.strides = NULL;

  /* Sizes: negative, overflowing, and more experts than int32 ids can name. */
  g.shape[0] = -1;
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "negative extent");
  g.shape[0] = INT64_MAX / 2;
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "overflow");
  g.shape[0] = T;
  g.shape[1] = (int64_t)INT32_MAX + 2; /* never read: the check comes first */
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g.t), AITER_ERR_UNSUPPORTED_SHAPE, "do not fit the int32 topk_ids");
  g.shape[1] = E;

  /* Mixed devices. */
  ids.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g.t), AITER_ERR_INVALID_ARGUMENT, "topk_ids: expected the device of gating");
  ids.t.device.device_type = kDLCPU;
  g.t.device.device_type = kDLCUDA, w.t.device.device_type = kDLCUDA, ids.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(TOPK(&w.t, &ids.t, &g.t), AITER_ERR_NO_DEVICE, NULL);
  g.t.device.device_type = kDLCPU, w.t.device.device_type = kDLCPU, ids.t.device.device_type = kDLCPU;

  CHECK(untouched(&w) && guards_intact(&w) && untouched(&ids) && guards_intact(&ids));
  EXPECT_OK(TOPK(&w.t, &ids.t, &g.t)); /* the same tensors, repaired, work */
  CHECK(!untouched(&w));
  free_tensor(&g), free_tensor(&w), free_tensor(&ids), free_tensor(&g3d), free_tensor(&g_i32), free_tensor(&w_f16),
      free_tensor(&ids_i64), free_tensor(&ids_short), free_tensor(&w_rows), free_tensor(&w_wide),
      free_tensor(&w_empty), free_tensor(&ids_empty);
}

int main(void) {
  test_topk_softmax_values();
  test_topk_softmax_bad_input();
  return report();
}
