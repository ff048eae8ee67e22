/* C API tests of MLA: aiter_mla_decode (bf16, two new tokens a sequence, a
 * shuffled block table, lse) against a double-precision reference, the
 * workspace query, concat_and_cache_mla, and clear errors for bad input. */
#include "harness.h"

enum { B = 2, S = 2, HQ = 3, D = 576, DV = 512, NB = 4, PS = 4, MAXB = 2 };

static uint16_t bf16_bits(float x) { /* truncation: the test's values are bf16 already */
  uint32_t u;
  memcpy(&u, &x, 4);
  return (uint16_t)(u >> 16);
}
static float bf16_value(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float x;
  memcpy(&x, &u, 4);
  return x;
}
static void fill_bf16(test_tensor *tt, unsigned seed) {
  uint16_t *p = tt->t.data;
  for (size_t i = 0; i < tt->bytes / 2; ++i) {
    seed = seed * 1103515245u + 12345u;
    p[i] = bf16_bits((float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f);
  }
}

typedef struct {
  test_tensor q, out, cache, table, lens, lse;
} mla_case;

static const int32_t kTable[B * MAXB] = {2, 0, 3, 77}, kLens[B] = {6, 1};

static void make_case(mla_case *c) {
  make_tensor(&c->q, BF16, 4, (int64_t[]){B, S, HQ, D});
  make_tensor(&c->out, BF16, 4, (int64_t[]){B, S, HQ, DV});
  make_tensor(&c->cache, BF16, 3, (int64_t[]){NB, PS, D});
  make_tensor(&c->table, I32, 2, (int64_t[]){B, MAXB});
  make_tensor(&c->lens, I32, 1, (int64_t[]){B});
  make_tensor(&c->lse, F32, 3, (int64_t[]){B, S, HQ});
  fill_bf16(&c->q, 11), fill_bf16(&c->cache, 12);
  memcpy(c->table.t.data, kTable, sizeof kTable);
  memcpy(c->lens.t.data, kLens, sizeof kLens);
}

static void free_case(mla_case *c) {
  free_tensor(&c->q), free_tensor(&c->out), free_tensor(&c->cache), free_tensor(&c->table), free_tensor(&c->lens);
  free_tensor(&c->lse);
}

/* Row (b, i, h) attends over positions [0, lens[b] - S + i] of its sequence. */
static int matches(const mla_case *c, double scale) {
  const uint16_t *q = c->q.t.data, *cache = c->cache.t.data, *out = c->out.t.data;
  const float *lse = c->lse.t.data;
  int ok = 1;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < S; ++i)
      for (int h = 0; h < HQ; ++h) {
        const int row = (b * S + i) * HQ + h, seen = kLens[b] - S + i + 1 > 0 ? kLens[b] - S + i + 1 : 0;
        double logits[8], top = -INFINITY, total = 0.0, want[DV] = {0};
        for (int j = 0; j < seen; ++j) {
          const uint16_t *k = cache + (kTable[b * MAXB + j / PS] * PS + j % PS) * D;
          double dot = 0.0;
          for (int d = 0; d < D; ++d) dot += (double)bf16_value(q[row * D + d]) * bf16_value(k[d]);
          logits[j] = dot * scale;
          top = logits[j] > top ? logits[j] : top;
        }
        for (int j = 0; j < seen; ++j) {
          const uint16_t *v = cache + (kTable[b * MAXB + j / PS] * PS + j % PS) * D;
          const double p = exp(logits[j] - top);
          total += p;
          for (int d = 0; d < DV; ++d) want[d] += p * bf16_value(v[d]);
        }
        for (int d = 0; d < DV; ++d) {
          const double w = seen ? want[d] / total : 0.0, got = bf16_value(out[row * DV + d]);
          ok &= fabs(got - w) <= 2e-2 + 2e-2 * fabs(w);
        }
        ok &= seen ? fabs(lse[row] - (top + log(total))) <= 1e-4 * (1 + fabs(top)) : isinf(lse[row]) && lse[row] < 0;
      }
  return ok;
}

static void test_decode_values(void) {
  mla_case c;
  make_case(&c);
  aiter_mla_params p;
  aiter_mla_params_init(&p);
  p.softmax_scale = 0.07f;
  p.lse = &c.lse.t;
  EXPECT_OK(aiter_mla_decode(&c.out.t, &c.q.t, &c.cache.t, &c.table.t, &c.lens.t, NULL, &p, NULL));
  CHECK(matches(&c, 0.07f));
  CHECK(guards_intact(&c.out) && guards_intact(&c.lse));
  size_t bytes = 1;
  EXPECT_OK(aiter_mla_decode_workspace_size(&bytes, &c.q.t, &c.cache.t, &c.table.t, 0));
  CHECK(bytes == 0); /* 8 positions: one split */
  EXPECT_OK(aiter_mla_decode_workspace_size(&bytes, &c.q.t, &c.cache.t, &c.table.t, 3));
  CHECK(bytes == (size_t)B * S * HQ * 3 * (DV + 1) * 4);
  free_case(&c);
}

static void test_decode_bad_input(void) {
  mla_case c;
  make_case(&c);
  test_tensor q_wide, small_ws;
  make_tensor(&q_wide, BF16, 4, (int64_t[]){B, S, HQ, 512});
  make_tensor(&small_ws, F32, 1, (int64_t[]){16});
  aiter_mla_params p;
  aiter_mla_params_init(&p);
  DLTensor *out = &c.out.t;
  const DLTensor *q = &c.q.t, *cache = &c.cache.t, *table = &c.table.t, *lens = &c.lens.t;
  const int E = AITER_ERR_INVALID_ARGUMENT;

  EXPECT_STATUS(aiter_mla_decode(out, q, cache, table, lens, NULL, NULL, NULL), E, "params: expected a pointer");
  EXPECT_STATUS(aiter_mla_decode(out, q, cache, table, lens, NULL, &p, NULL), E, "params.softmax_scale");
  p.softmax_scale = 0.1f;
  EXPECT_STATUS(aiter_mla_decode(out, &q_wide.t, cache, table, lens, NULL, &p, NULL), AITER_ERR_UNSUPPORTED_SHAPE,
                "q: head dim 512 is not supported (expected 576");
  ((int32_t *)c.table.t.data)[1] = NB; /* sequence 0 uses block 1 of its row */
  EXPECT_STATUS(aiter_mla_decode(out, q, cache, table, lens, NULL, &p, NULL), E, "block_table[0, 1] = 4");
  ((int32_t *)c.table.t.data)[1] = 0;
  p.num_splits = 3;
  EXPECT_STATUS(aiter_mla_decode(out, q, cache, table, lens, NULL, &p, NULL), E, "workspace: expected at least");
  EXPECT_STATUS(aiter_mla_decode(out, q, cache, table, lens, &small_ws.t, &p, NULL), E,
                "workspace: 64 bytes are too few");
  p.num_splits = 129;
  EXPECT_STATUS(aiter_mla_decode(out, q, cache, table, lens, NULL, &p, NULL), E, "params.num_splits");
  CHECK(untouched(&c.out));
  free_tensor(&q_wide), free_tensor(&small_ws);
  free_case(&c);
}

static void test_concat_and_cache(void) {
  enum { T = 3 };
  test_tensor kv_c, k_pe, cache, slots;
  make_tensor(&kv_c, BF16, 2, (int64_t[]){T, DV});
  make_tensor(&k_pe, BF16, 2, (int64_t[]){T, D - DV});
  make_tensor(&cache, BF16, 3, (int64_t[]){NB, PS, D});
  make_tensor(&slots, I64, 1, (int64_t[]){T});
  fill_bf16(&kv_c, 21), fill_bf16(&k_pe, 22);
  int64_t *s = slots.t.data;
  s[0] = 13, s[1] = -1, s[2] = 0;
  EXPECT_OK(aiter_concat_and_cache_mla(&cache.t, &kv_c.t, &k_pe.t, &slots.t, 1.0f, NULL));
  const uint16_t *row13 = (const uint16_t *)cache.t.data + 13 * D, *row0 = (const uint16_t *)cache.t.data;
  const uint16_t *c0 = kv_c.t.data, *p0 = k_pe.t.data;
  CHECK(memcmp(row13, c0, DV * 2) == 0 && memcmp(row13 + DV, p0, (D - DV) * 2) == 0);
  CHECK(memcmp(row0, c0 + 2 * DV, DV * 2) == 0 && memcmp(row0 + DV, p0 + 2 * (D - DV), (D - DV) * 2) == 0);
  CHECK(guards_intact(&cache));
  s[2] = NB * PS;
  EXPECT_STATUS(aiter_concat_and_cache_mla(&cache.t, &kv_c.t, &k_pe.t, &slots.t, 1.0f, NULL),
                AITER_ERR_INVALID_ARGUMENT, "slot_mapping[2] = 16 is out of range");
  EXPECT_STATUS(aiter_concat_and_cache_mla(&cache.t, &k_pe.t, &kv_c.t, &slots.t, 1.0f, NULL),
                AITER_ERR_UNSUPPORTED_SHAPE, "kv_c: dim 64 is not supported (expected 512)");
  free_tensor(&kv_c), free_tensor(&k_pe), free_tensor(&cache), free_tensor(&slots);
}

int main(void) {
  test_decode_values();
  test_decode_bad_input();
  test_concat_and_cache();
  return report();
}
