/* The MoE ops through the C API: aiter_topk_softmax against a float64
 * softmax, grouped_topk (DeepSeek-V3 style, with a correction bias),
 * moe_sorting and fused_moe (bf16) against float64 references, and bad input
 * returning the right status with nothing written. */
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

/* 8 experts in 4 groups of 2; bias lifts experts 6 and 7.  Token 0: sigmoid of
 * logits e / 8, so choice = sigmoid + bias ranks 7, 6 (group 3) then 5, 4 (group 2). */
static void test_grouped_topk_values(void) {
  test_tensor g, bias, w, ids;
  make_tensor(&g, F32, 2, (int64_t[]){1, 8});
  make_tensor(&bias, F32, 1, (int64_t[]){8});
  make_tensor(&w, F32, 2, (int64_t[]){1, 3});
  make_tensor(&ids, I32, 2, (int64_t[]){1, 3});
  float *logit = (float *)g.t.data, *b = (float *)bias.t.data;
  for (int e = 0; e < 8; ++e) logit[e] = e / 8.0f, b[e] = e >= 6 ? 0.5f : 0.0f;
  EXPECT_OK(aiter_grouped_topk(&w.t, &ids.t, &g.t, &bias.t, 4, 2, AITER_MOE_SCORE_SIGMOID, 1, 2.0f, NULL));
  const int32_t *id = (const int32_t *)ids.t.data;
  CHECK(id[0] == 7 && id[1] == 6 && id[2] == 5);
  double s[3], total = 0;
  for (int j = 0; j < 3; ++j) total += s[j] = 1.0 / (1.0 + exp(-id[j] / 8.0));
  for (int j = 0; j < 3; ++j) CHECK(fabs(((const float *)w.t.data)[j] - 2.0 * s[j] / total) < 1e-6);
  /* k larger than the kept groups hold, and a bias with softmax scoring */
  free_tensor(&w), free_tensor(&ids);
  make_tensor(&w, F32, 2, (int64_t[]){1, 5});
  make_tensor(&ids, I32, 2, (int64_t[]){1, 5});
  EXPECT_STATUS(aiter_grouped_topk(&w.t, &ids.t, &g.t, &bias.t, 4, 2, 1, 1, 1.0f, NULL), AITER_ERR_INVALID_ARGUMENT,
                "topk_group * experts per group (4)");
  EXPECT_STATUS(aiter_grouped_topk(&w.t, &ids.t, &g.t, &bias.t, 4, 4, 0, 1, 1.0f, NULL), AITER_ERR_INVALID_ARGUMENT,
                "correction_bias: expected sigmoid scoring");
  CHECK(untouched(&w) && untouched(&ids));
  free_tensor(&g), free_tensor(&bias), free_tensor(&w), free_tensor(&ids);
}

/* 3 tokens x 2 pairs over 4 experts, blocks of 2: expert 1 gets 3 pairs (2 blocks). */
static void test_moe_sorting_values(void) {
  const int64_t rows = aiter_moe_sorting_max_rows(3, 2, 4, 2);
  CHECK(rows == (6 + 4 * 1) / 2 * 2);
  test_tensor ids, sorted, blocks, valid;
  make_tensor(&ids, I32, 2, (int64_t[]){3, 2});
  make_tensor(&sorted, I32, 1, (int64_t[]){rows});
  make_tensor(&blocks, I32, 1, (int64_t[]){rows / 2});
  make_tensor(&valid, I32, 1, (int64_t[]){1});
  int32_t *pid = (int32_t *)ids.t.data;
  const int32_t routed[6] = {1, 3, 1, 0, 3, 1};
  for (int i = 0; i < 6; ++i) pid[i] = routed[i];
  EXPECT_OK(aiter_moe_sorting(&sorted.t, &blocks.t, &valid.t, &ids.t, NULL, 4, 2, NULL));
  const int32_t want_rows[] = {3, 6, 0, 2, 5, 6, 1, 4}, want_blocks[] = {0, 1, 1, 3};
  const int32_t *got = (const int32_t *)sorted.t.data, *gb = (const int32_t *)blocks.t.data;
  CHECK(((const int32_t *)valid.t.data)[0] == 8);
  for (int i = 0; i < 8; ++i) CHECK(got[i] == want_rows[i]);
  for (int i = 8; i < rows; ++i) CHECK(got[i] == 6);
  for (int b = 0; b < 4; ++b) CHECK(gb[b] == want_blocks[b]);
  for (int b = 4; b < rows / 2; ++b) CHECK(gb[b] == -1);
  pid[5] = 4; /* out of range */
  test_tensor fresh;
  make_tensor(&fresh, I32, 1, (int64_t[]){rows});
  EXPECT_STATUS(aiter_moe_sorting(&fresh.t, &blocks.t, &valid.t, &ids.t, NULL, 4, 2, NULL), AITER_ERR_INVALID_ARGUMENT,
                "topk_ids[2, 1] = 4 is outside [0, 4)");
  CHECK(untouched(&fresh));
  free_tensor(&ids), free_tensor(&sorted), free_tensor(&blocks), free_tensor(&valid), free_tensor(&fresh);
}

static uint16_t bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static double bf16_value(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* T 2, E 3, k 2, H 8, I 4 in bf16 against a float64 layer of the same bf16 inputs. */
static void test_fused_moe_values(void) {
  enum { MT = 2, ME = 3, MK = 2, MH = 8, MI = 4 };
  test_tensor x, w1, w2, tw, ids, out, ws;
  make_tensor(&x, BF16, 2, (int64_t[]){MT, MH});
  make_tensor(&w1, BF16, 3, (int64_t[]){ME, 2 * MI, MH});
  make_tensor(&w2, BF16, 3, (int64_t[]){ME, MH, MI});
  make_tensor(&tw, F32, 2, (int64_t[]){MT, MK});
  make_tensor(&ids, I32, 2, (int64_t[]){MT, MK});
  make_tensor(&out, BF16, 2, (int64_t[]){MT, MH});
  const size_t bytes = aiter_fused_moe_workspace_size(MT, MK, ME, MH, MI, 2, NULL);
  CHECK(bytes > 0);
  make_tensor(&ws, dt(kDLUInt, 8), 1, (int64_t[]){(int64_t)bytes});
  uint16_t *px = (uint16_t *)x.t.data, *p1 = (uint16_t *)w1.t.data, *p2 = (uint16_t *)w2.t.data;
  for (int i = 0; i < MT * MH; ++i) px[i] = bf16_bits((float)sin(i * 0.7));
  for (int i = 0; i < ME * 2 * MI * MH; ++i) p1[i] = bf16_bits((float)cos(i * 0.3) * 0.4f);
  for (int i = 0; i < ME * MH * MI; ++i) p2[i] = bf16_bits((float)sin(i * 0.9) * 0.5f);
  const float weights[MT * MK] = {0.75f, 0.25f, 0.5f, 0.5f};
  const int32_t experts[MT * MK] = {2, 0, 1, 2};
  memcpy(tw.t.data, weights, sizeof weights);
  memcpy(ids.t.data, experts, sizeof experts);
  aiter_fused_moe_params params;
  aiter_fused_moe_params_init(&params);
  EXPECT_OK(aiter_fused_moe(&out.t, &ws.t, &x.t, &w1.t, &w2.t, &tw.t, &ids.t, NULL, &params, NULL));
  for (int t = 0; t < MT; ++t)
    for (int n = 0; n < MH; ++n) {
      double ref = 0;
      for (int j = 0; j < MK; ++j) {
        const int e = experts[t * MK + j];
        double y = 0;
        for (int i = 0; i < MI; ++i) {
          double g = 0, u = 0;
          for (int h = 0; h < MH; ++h) {
            g += bf16_value(p1[(e * 2 * MI + i) * MH + h]) * bf16_value(px[t * MH + h]);
            u += bf16_value(p1[(e * 2 * MI + MI + i) * MH + h]) * bf16_value(px[t * MH + h]);
          }
          y += bf16_value(p2[(e * MH + n) * MI + i]) * g / (1 + exp(-g)) * u;
        }
        ref += weights[t * MK + j] * y;
      }
      CHECK(fabs(bf16_value(((uint16_t *)out.t.data)[t * MH + n]) - ref) < 0.02 * (fabs(ref) + 0.1));
    }
  /* bad input: a workspace too small, an out-of-range id, f32 weights */
  test_tensor small, out2, w32;
  make_tensor(&small, dt(kDLUInt, 8), 1, (int64_t[]){16});
  make_tensor(&out2, BF16, 2, (int64_t[]){MT, MH});
  make_tensor(&w32, F32, 3, (int64_t[]){ME, 2 * MI, MH});
  EXPECT_STATUS(aiter_fused_moe(&out2.t, &small.t, &x.t, &w1.t, &w2.t, &tw.t, &ids.t, NULL, NULL, NULL),
                AITER_ERR_INVALID_ARGUMENT, "workspace: expected at least");
  EXPECT_STATUS(aiter_fused_moe(&out2.t, &ws.t, &x.t, &w32.t, &w2.t, &tw.t, &ids.t, NULL, NULL, NULL),
                AITER_ERR_UNSUPPORTED_DTYPE, "w1: expected the dtype of x");
  ((int32_t *)ids.t.data)[1] = 3;
  EXPECT_STATUS(aiter_fused_moe(&out2.t, &ws.t, &x.t, &w1.t, &w2.t, &tw.t, &ids.t, NULL, NULL, NULL),
                AITER_ERR_INVALID_ARGUMENT, "topk_ids[0, 1] = 3 is outside [0, 3)");
  CHECK(untouched(&out2) && guards_intact(&out2) && guards_intact(&ws) && guards_intact(&out));
  free_tensor(&x), free_tensor(&w1), free_tensor(&w2), free_tensor(&tw), free_tensor(&ids), free_tensor(&out);
  free_tensor(&ws), free_tensor(&small), free_tensor(&out2), free_tensor(&w32);
}

int main(void) {
  test_topk_softmax_values();
  test_topk_softmax_bad_input();
  test_grouped_topk_values();
  test_moe_sorting_values();
  test_fused_moe_values();
  return report();
}
