/* Attention ops through the C API: correct calls checked against a double
 * reference, and bad input of every kind (including out-of-range index values)
 * returning the right status with nothing written. */
#include "harness.h"

enum { D = 64, HQ = 4, HKV = 2, GROUP = HQ / HKV };

/* Softmax-weighted sum of `n` value rows for one query, in double. */
static void ref_attend(double *out, const float *q, const float *const *keys, const float *const *values, int n,
                       double scale) {
  double scores[64], max = -INFINITY, sum = 0;
  for (int j = 0; j < n; ++j) {
    double s = 0;
    for (int i = 0; i < D; ++i) s += (double)q[i] * keys[j][i];
    scores[j] = s * scale;
    if (scores[j] > max) max = scores[j];
  }
  for (int i = 0; i < D; ++i) out[i] = 0;
  for (int j = 0; j < n; ++j) {
    const double p = exp(scores[j] - max);
    sum += p;
    for (int i = 0; i < D; ++i) out[i] += p * values[j][i];
  }
  for (int i = 0; i < D; ++i) out[i] = n ? out[i] / sum : 0.0;
}

static int close_to(const float *got, const double *want) {
  for (int i = 0; i < D; ++i)
    if (fabs(got[i] - want[i]) > 1e-5 + 1e-5 * fabs(want[i])) return 0;
  return 1;
}

/* ---- prefill ----------------------------------------------------------------- */

/* Two sequences (2 and 3 tokens), causal, GQA 4:2, D 64. */
typedef struct {
  test_tensor q, k, v, out, cu_q, cu_k;
} prefill_case;

static void make_prefill(prefill_case *c) {
  make_tensor(&c->q, F32, 3, (int64_t[]){5, HQ, D});
  make_tensor(&c->k, F32, 3, (int64_t[]){5, HKV, D});
  make_tensor(&c->v, F32, 3, (int64_t[]){5, HKV, D});
  make_tensor(&c->out, F32, 3, (int64_t[]){5, HQ, D});
  make_tensor(&c->cu_q, I32, 1, (int64_t[]){3});
  make_tensor(&c->cu_k, I32, 1, (int64_t[]){3});
  fill_f32(&c->q, 1), fill_f32(&c->k, 2), fill_f32(&c->v, 3);
  const int32_t cu[3] = {0, 2, 5};
  memcpy(c->cu_q.t.data, cu, sizeof cu);
  memcpy(c->cu_k.t.data, cu, sizeof cu);
}

static void free_prefill(prefill_case *c) {
  free_tensor(&c->q), free_tensor(&c->k), free_tensor(&c->v), free_tensor(&c->out), free_tensor(&c->cu_q),
      free_tensor(&c->cu_k);
}

static aiter_status run_prefill(prefill_case *c, const aiter_attention_params *p) {
  return aiter_prefill_attention(&c->out.t, &c->q.t, &c->k.t, &c->v.t, &c->cu_q.t, &c->cu_k.t, p, NULL);
}

static int prefill_matches_causal(const prefill_case *c) {
  const float *q = c->q.t.data, *k = c->k.t.data, *v = c->v.t.data, *out = c->out.t.data;
  const int32_t *cu = c->cu_q.t.data;
  int ok = 1;
  for (int b = 0; b < 2; ++b)
    for (int i = cu[b]; i < cu[b + 1]; ++i)
      for (int h = 0; h < HQ; ++h) {
        const float *keys[8], *values[8];
        int n = 0;
        for (int j = cu[b]; j <= i; ++j, ++n) {
          keys[n] = k + (j * HKV + h / GROUP) * D;
          values[n] = v + (j * HKV + h / GROUP) * D;
        }
        double want[D];
        ref_attend(want, q + (i * HQ + h) * D, keys, values, n, 1.0 / sqrt(D));
        ok &= close_to(out + (i * HQ + h) * D, want);
      }
  return ok;
}

static void test_prefill_values(void) {
  prefill_case c;
  make_prefill(&c);
  EXPECT_OK(run_prefill(&c, NULL));
  CHECK(prefill_matches_causal(&c));
  CHECK(guards_intact(&c.out));

  /* A caller built against a shorter struct (only softmax_scale) gets the other defaults. */
  aiter_attention_params p;
  aiter_attention_params_init(&p);
  CHECK(p.struct_size == sizeof p && p.causal == 1 && p.window_left == -1 && p.k_scale == 1.0f);
  p.struct_size = offsetof(aiter_attention_params, causal);
  p.causal = 0, p.window_left = 0; /* beyond struct_size: must be ignored */
  memset(c.out.t.data, 0, c.out.bytes);
  EXPECT_OK(run_prefill(&c, &p));
  CHECK(prefill_matches_causal(&c));
  free_prefill(&c);
}

static void test_prefill_bad_input(void) {
  prefill_case c;
  make_prefill(&c);
  test_tensor k3, k_d96, q_d96, out_d96, k_f16, cu_i64, cu_short;
  make_tensor(&k3, F32, 3, (int64_t[]){5, 3, D});
  make_tensor(&k_d96, F32, 3, (int64_t[]){5, HKV, 96});
  make_tensor(&q_d96, F32, 3, (int64_t[]){5, HQ, 96});
  make_tensor(&out_d96, F32, 3, (int64_t[]){5, HQ, 96});
  make_tensor(&k_f16, F16, 3, (int64_t[]){5, HKV, D});
  make_tensor(&cu_i64, I64, 1, (int64_t[]){3});
  make_tensor(&cu_short, I32, 1, (int64_t[]){2});
  const DLTensor *q = &c.q.t, *k = &c.k.t, *v = &c.v.t, *cq = &c.cu_q.t, *ck = &c.cu_k.t;
  DLTensor *out = &c.out.t;
  const int E = AITER_ERR_INVALID_ARGUMENT;

  EXPECT_STATUS(aiter_prefill_attention(NULL, q, k, v, cq, ck, NULL, NULL), E, "out: expected a tensor");
  EXPECT_STATUS(aiter_prefill_attention(out, NULL, k, v, cq, ck, NULL, NULL), E, "q: expected a tensor");
  EXPECT_STATUS(aiter_prefill_attention(out, q, k, v, NULL, ck, NULL, NULL), E, "cu_seqlens_q: expected a tensor");
  EXPECT_STATUS(aiter_prefill_attention(out, q, k, v, cq, NULL, NULL, NULL), E, "cu_seqlens_k: expected a tensor");
  EXPECT_STATUS(aiter_prefill_attention(out, q, &k3.t, &k3.t, cq, ck, NULL, NULL), E, "multiple of the 3 kv heads");
  EXPECT_STATUS(aiter_prefill_attention(out, q, &k_d96.t, &k_d96.t, cq, ck, NULL, NULL),
                E, "k: expected shape[2] == 64");
  EXPECT_STATUS(aiter_prefill_attention(&out_d96.t, &q_d96.t, &k_d96.t, &k_d96.t, cq, ck, NULL, NULL),
                AITER_ERR_UNSUPPORTED_SHAPE, "head dim 96");
  EXPECT_STATUS(aiter_prefill_attention(out, q, &k_f16.t, &k_f16.t, cq, ck, NULL, NULL), AITER_ERR_UNSUPPORTED_DTYPE,
                "k: expected the dtype of q");
  EXPECT_STATUS(aiter_prefill_attention(out, q, k, v, &cu_i64.t, ck, NULL, NULL), AITER_ERR_UNSUPPORTED_DTYPE,
                "cu_seqlens_q: expected dtype int32");
  EXPECT_STATUS(aiter_prefill_attention(out, q, k, v, cq, &cu_short.t, NULL, NULL),
                E, "cu_seqlens_k: expected shape[0] == 3");

  /* Wrong ndim, negative extent, non-unit D stride, mixed devices. */
  c.q.t.ndim = 2;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "q: expected 3 dims");
  c.q.t.ndim = 3;
  c.k.shape[0] = -5;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "negative extent");
  c.k.shape[0] = 5;
  c.v.t.strides = c.v.strides;
  c.v.strides[0] = HKV * D * 2, c.v.strides[1] = D * 2, c.v.strides[2] = 2;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "v: expected unit stride");
  c.v.t.strides = NULL;
  c.k.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "k: expected the device of q");
  c.k.t.device.device_type = kDLCPU;

  /* cu_seqlens values: they index memory, so each kind of bad value is rejected. */
  int32_t *cu = c.cu_k.t.data;
  cu[0] = 1;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "cu_seqlens_k[0] == 0, got 1");
  cu[0] = 0, cu[1] = 6;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "non-decreasing");
  cu[1] = -2;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "non-decreasing");
  cu[1] = 2, cu[2] = 7;
  EXPECT_STATUS(run_prefill(&c, NULL), E, "last value == 5 (k.shape[0]), got 7");
  cu[2] = 5;

  /* params: size 0, bad scales. */
  aiter_attention_params p;
  aiter_attention_params_init(&p);
  p.struct_size = 0;
  EXPECT_STATUS(run_prefill(&c, &p), E, "struct_size 0 is too small");
  aiter_attention_params_init(&p);
  p.softmax_scale = -1.0f;
  EXPECT_STATUS(run_prefill(&c, &p), E, "softmax_scale");
  p.softmax_scale = INFINITY;
  EXPECT_STATUS(run_prefill(&c, &p), E, "softmax_scale");

  CHECK(untouched(&c.out) && guards_intact(&c.out) && untouched(&out_d96));
  EXPECT_OK(run_prefill(&c, NULL));
  CHECK(prefill_matches_causal(&c));
  free_prefill(&c);
  free_tensor(&k3), free_tensor(&k_d96), free_tensor(&q_d96), free_tensor(&out_d96), free_tensor(&k_f16),
      free_tensor(&cu_i64), free_tensor(&cu_short);
}

/* ---- paged decode ---------------------------------------------------------------- */

enum { B = 3, NB = 4, PS = 3, MAXB = 2 };

typedef struct {
  test_tensor q, out, kc, vc, table, lens;
} decode_case;

static void make_decode(decode_case *c) {
  make_tensor(&c->q, F32, 3, (int64_t[]){B, HQ, D});
  make_tensor(&c->out, F32, 3, (int64_t[]){B, HQ, D});
  make_tensor(&c->kc, F32, 4, (int64_t[]){NB, PS, HKV, D});
  make_tensor(&c->vc, F32, 4, (int64_t[]){NB, PS, HKV, D});
  make_tensor(&c->table, I32, 2, (int64_t[]){B, MAXB});
  make_tensor(&c->lens, I32, 1, (int64_t[]){B});
  fill_f32(&c->q, 4), fill_f32(&c->kc, 5), fill_f32(&c->vc, 6);
  /* Sequence 2 uses one block: its unused entry holds garbage that is never read. */
  const int32_t table[B * MAXB] = {3, 0, 1, 2, 2, 999}, lens[B] = {5, 0, 2};
  memcpy(c->table.t.data, table, sizeof table);
  memcpy(c->lens.t.data, lens, sizeof lens);
}

static void free_decode(decode_case *c) {
  free_tensor(&c->q), free_tensor(&c->out), free_tensor(&c->kc), free_tensor(&c->vc), free_tensor(&c->table),
      free_tensor(&c->lens);
}

static aiter_status run_decode(decode_case *c, const aiter_attention_params *p) {
  return aiter_paged_decode_attention(&c->out.t, &c->q.t, &c->kc.t, &c->vc.t, &c->table.t, &c->lens.t, p, NULL);
}

static int decode_matches(const decode_case *c) {
  const float *q = c->q.t.data, *kc = c->kc.t.data, *vc = c->vc.t.data, *out = c->out.t.data;
  const int32_t *table = c->table.t.data, *lens = c->lens.t.data;
  int ok = 1;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < HQ; ++h) {
      const float *keys[8], *values[8];
      for (int j = 0; j < lens[b]; ++j) {
        const int slot = table[b * MAXB + j / PS] * PS + j % PS;
        keys[j] = kc + (slot * HKV + h / GROUP) * D;
        values[j] = vc + (slot * HKV + h / GROUP) * D;
      }
      double want[D];
      ref_attend(want, q + (b * HQ + h) * D, keys, values, lens[b], 1.0 / sqrt(D));
      ok &= close_to(out + (b * HQ + h) * D, want);
    }
  return ok;
}

static void test_decode_values(void) {
  decode_case c;
  make_decode(&c);
  EXPECT_OK(run_decode(&c, NULL));
  CHECK(decode_matches(&c));
  CHECK(guards_intact(&c.out));
  free_decode(&c);
}

static void test_decode_bad_input(void) {
  decode_case c;
  make_decode(&c);
  test_tensor q_f16, kc_e4m3, vc_e4m3, kc_page0, table_i64, lens_short;
  make_tensor(&q_f16, F16, 3, (int64_t[]){B, HQ, D});
  make_tensor(&kc_e4m3, E4M3, 4, (int64_t[]){NB, PS, HKV, D});
  make_tensor(&vc_e4m3, E4M3, 4, (int64_t[]){NB, PS, HKV, D});
  make_tensor(&kc_page0, F32, 4, (int64_t[]){NB, 0, HKV, D});
  make_tensor(&table_i64, I64, 2, (int64_t[]){B, MAXB});
  make_tensor(&lens_short, I32, 1, (int64_t[]){B - 1});
  DLTensor *out = &c.out.t;
  const DLTensor *q = &c.q.t, *kc = &c.kc.t, *vc = &c.vc.t, *table = &c.table.t, *lens = &c.lens.t;
  const int E = AITER_ERR_INVALID_ARGUMENT;

  EXPECT_STATUS(aiter_paged_decode_attention(out, q, NULL, vc, table, lens, NULL, NULL),
                E, "k_cache: expected a tensor");
  EXPECT_STATUS(aiter_paged_decode_attention(out, q, kc, vc, NULL, lens, NULL, NULL),
                E, "block_table: expected a tensor");
  EXPECT_STATUS(aiter_paged_decode_attention(out, &q_f16.t, kc, vc, table, lens, NULL, NULL),
                AITER_ERR_UNSUPPORTED_DTYPE, "out: expected the dtype of q");
  EXPECT_STATUS(aiter_paged_decode_attention(out, q, &kc_e4m3.t, vc, table, lens, NULL, NULL),
                AITER_ERR_UNSUPPORTED_DTYPE, "v_cache: expected the dtype of k_cache");
  EXPECT_STATUS(aiter_paged_decode_attention(out, q, &kc_page0.t, &kc_page0.t, table, lens, NULL, NULL), E,
                "page_size (shape[1]) >= 1");
  EXPECT_STATUS(aiter_paged_decode_attention(out, q, kc, vc, &table_i64.t, lens, NULL, NULL),
                AITER_ERR_UNSUPPORTED_DTYPE, "block_table: expected dtype int32");
  EXPECT_STATUS(aiter_paged_decode_attention(out, q, kc, vc, table, &lens_short.t, NULL, NULL), E,
                "context_lens: expected shape[0] == 3");
  aiter_attention_params p;
  aiter_attention_params_init(&p);
  p.k_scale = 0.0f;
  EXPECT_STATUS(aiter_paged_decode_attention(out, q, &kc_e4m3.t, &vc_e4m3.t, table, lens, &p, NULL),
                E, "params.k_scale");
  p.k_scale = 1.0f, p.v_scale = NAN;
  EXPECT_STATUS(aiter_paged_decode_attention(out, q, &kc_e4m3.t, &vc_e4m3.t, table, lens, &p, NULL),
                E, "params.v_scale");
  c.vc.t.device.device_type = kDLCUDA;
  EXPECT_STATUS(run_decode(&c, NULL), E, "v_cache: expected the device of q");
  c.vc.t.device.device_type = kDLCPU;
  c.kc.t.strides = c.kc.strides; /* a cache with a padded block stride is not compact */
  c.kc.strides[0] = PS * HKV * D + 1, c.kc.strides[1] = HKV * D, c.kc.strides[2] = D, c.kc.strides[3] = 1;
  EXPECT_STATUS(run_decode(&c, NULL), E, "k_cache: expected a compact");
  c.kc.t.strides = NULL;

  /* Index values: context lengths and the block ids they use. */
  int32_t *tab = c.table.t.data, *len = c.lens.t.data;
  len[1] = MAXB * PS + 1;
  EXPECT_STATUS(run_decode(&c, NULL), E, "context_lens[1] = 7 is out of range");
  len[1] = -1;
  EXPECT_STATUS(run_decode(&c, NULL), E, "context_lens[1] = -1 is out of range");
  len[1] = 0;
  tab[1] = NB;
  EXPECT_STATUS(run_decode(&c, NULL), E, "block_table[0, 1] = 4 is out of range");
  tab[1] = -3;
  EXPECT_STATUS(run_decode(&c, NULL), E, "block_table[0, 1] = -3 is out of range");
  tab[1] = 0;

  /* GPU tensors: index values live in device memory, so the host must not read
   * them (the bad id stays unread).  A GPU no machine has (host memory behind it,
   * so the call must fail before any launch): AITER_ERR_NO_DEVICE without a
   * driver, AITER_ERR_DEVICE from the driver for the device id. */
  tab[1] = NB;
  test_tensor *all[] = {&c.q, &c.out, &c.kc, &c.vc, &c.table, &c.lens};
  for (int i = 0; i < 6; ++i) all[i]->t.device = (DLDevice){kDLCUDA, 4096};
  const aiter_status on_missing_gpu = run_decode(&c, NULL);
  CHECK(on_missing_gpu == AITER_ERR_NO_DEVICE || on_missing_gpu == AITER_ERR_DEVICE);
  for (int i = 0; i < 6; ++i) all[i]->t.device = (DLDevice){kDLCPU, 0};
  tab[1] = 0;

  CHECK(untouched(&c.out) && guards_intact(&c.out));
  EXPECT_OK(run_decode(&c, NULL));
  CHECK(decode_matches(&c));
  free_decode(&c);
  free_tensor(&q_f16), free_tensor(&kc_e4m3), free_tensor(&vc_e4m3), free_tensor(&kc_page0), free_tensor(&table_i64),
      free_tensor(&lens_short);
}

/* ---- reshape_and_cache ------------------------------------------------------------ */

static void test_reshape_and_cache(void) {
  test_tensor key, value, kc, vc, slots, slots64, slots_f32, key_h3, kc8, vc8;
  make_tensor(&key, F32, 3, (int64_t[]){3, HKV, D});
  make_tensor(&value, F32, 3, (int64_t[]){3, HKV, D});
  make_tensor(&kc, F32, 4, (int64_t[]){2, 2, HKV, D});
  make_tensor(&vc, F32, 4, (int64_t[]){2, 2, HKV, D});
  make_tensor(&slots, I32, 1, (int64_t[]){3});
  make_tensor(&slots64, I64, 1, (int64_t[]){3});
  make_tensor(&slots_f32, F32, 1, (int64_t[]){3});
  make_tensor(&key_h3, F32, 3, (int64_t[]){3, 3, D});
  make_tensor(&kc8, E4M3, 4, (int64_t[]){2, 2, HKV, D});
  make_tensor(&vc8, E4M3, 4, (int64_t[]){2, 2, HKV, D});
  fill_f32(&key, 7), fill_f32(&value, 8);
  int32_t *s = slots.t.data;
  int64_t *s64 = slots64.t.data;
  const int E = AITER_ERR_INVALID_ARGUMENT;

  s[0] = 0, s[1] = 4, s[2] = 3; /* 4 == num_blocks * page_size: one past the end */
  EXPECT_STATUS(aiter_reshape_and_cache(&kc.t, &vc.t, &key.t, &value.t, &slots.t, 1, 1, NULL), E,
                "slot_mapping[1] = 4 is out of range");
  s64[0] = 0, s64[1] = -1, s64[2] = (int64_t)1 << 40;
  EXPECT_STATUS(aiter_reshape_and_cache(&kc.t, &vc.t, &key.t, &value.t, &slots64.t, 1, 1, NULL), E,
                "slot_mapping[2] = 1099511627776 is out of range");
  EXPECT_STATUS(aiter_reshape_and_cache(&kc.t, &vc.t, &key.t, &value.t, &slots_f32.t, 1, 1, NULL),
                AITER_ERR_UNSUPPORTED_DTYPE, "slot_mapping: expected dtype int32, int64");
  EXPECT_STATUS(aiter_reshape_and_cache(&kc.t, &vc.t, &key_h3.t, &key_h3.t, &slots.t, 1, 1, NULL), E,
                "k_cache: expected shape[2] == 3 (the kv heads of key)");
  EXPECT_STATUS(aiter_reshape_and_cache(&kc.t, &vc.t, &key.t, &key_h3.t, &slots.t, 1, 1, NULL), E,
                "value: expected the shape of key");
  EXPECT_STATUS(aiter_reshape_and_cache(&kc.t, NULL, &key.t, &value.t, &slots.t, 1, 1, NULL), E, "v_cache");
  /* GPU tensors: slots live in device memory, which the host must not read (the
   * kernel skips an out-of-range slot).  ROCm tensors find no AMD GPU on a test
   * machine, so the bad slot 4 goes unreported; not CUDA: these are host pointers. */
  s[1] = 4;
  test_tensor *cache_call[] = {&kc, &vc, &key, &value, &slots};
  for (int i = 0; i < 5; ++i) cache_call[i]->t.device.device_type = kDLROCM;
  EXPECT_NO_HIP_DEVICE(aiter_reshape_and_cache(&kc.t, &vc.t, &key.t, &value.t, &slots.t, 1, 1, NULL));
  for (int i = 0; i < 5; ++i) cache_call[i]->t.device.device_type = kDLCPU;
  s[1] = -1;
  EXPECT_STATUS(aiter_reshape_and_cache(&kc8.t, &vc8.t, &key.t, &value.t, &slots.t, -1, 1, NULL), E, "k_scale");
  EXPECT_STATUS(aiter_reshape_and_cache(&kc8.t, &vc8.t, &key.t, &value.t, &slots.t, 1, INFINITY, NULL), E, "v_scale");
  CHECK(untouched(&kc) && untouched(&vc) && untouched(&kc8) && untouched(&vc8));

  /* Tokens 0 and 2 land in slots 0 and 3; token 1 (slot -1) is skipped. */
  EXPECT_OK(aiter_reshape_and_cache(&kc.t, &vc.t, &key.t, &value.t, &slots.t, 1, 1, NULL));
  const size_t row = HKV * D * sizeof(float);
  const char *kb = kc.t.data, *vb = vc.t.data, *keyb = key.t.data, *valb = value.t.data;
  CHECK(memcmp(kb, keyb, row) == 0 && memcmp(kb + 3 * row, keyb + 2 * row, row) == 0);
  CHECK(memcmp(vb, valb, row) == 0 && memcmp(vb + 3 * row, valb + 2 * row, row) == 0);
  int rest_zero = 1;
  for (size_t i = row; i < 3 * row; ++i) rest_zero &= kb[i] == 0 && vb[i] == 0;
  CHECK(rest_zero);
  CHECK(guards_intact(&kc) && guards_intact(&vc));

  free_tensor(&key), free_tensor(&value), free_tensor(&kc), free_tensor(&vc), free_tensor(&slots),
      free_tensor(&slots64), free_tensor(&slots_f32), free_tensor(&key_h3), free_tensor(&kc8), free_tensor(&vc8);
}

int main(void) {
  test_prefill_values();
  test_prefill_bad_input();
  test_decode_values();
  test_decode_bad_input();
  test_reshape_and_cache();
  return report();
}
