/* aiter_rope through the C API: correct rotations of both styles with partial
 * rotary, and bad input of every kind returning the right status with q and k
 * left exactly as they were. */
#include "harness.h"

enum { T = 3, HQ = 2, HK = 1, D = 8, R = 6, MAX_POS = 5 };

/* cache[p] = cos(p * f_i) for i < R/2, then sin(p * f_i); f_i = 10000^(-2i/R). */
static void fill_cache(test_tensor *cache) {
  float *c = (float *)cache->t.data;
  for (int p = 0; p < MAX_POS; ++p)
    for (int i = 0; i < R / 2; ++i) {
      const double angle = p * pow(10000.0, -2.0 * i / R);
      c[p * R + i] = (float)cos(angle);
      c[p * R + R / 2 + i] = (float)sin(angle);
    }
}

typedef struct {
  test_tensor q, k, pos, cache;
} rope_inputs;

static void make_inputs(rope_inputs *in) {
  make_tensor(&in->q, F32, 3, (int64_t[]){T, HQ, D});
  make_tensor(&in->k, F32, 3, (int64_t[]){T, HK, D});
  make_tensor(&in->pos, I32, 1, (int64_t[]){T});
  make_tensor(&in->cache, F32, 2, (int64_t[]){MAX_POS, R});
  fill_f32(&in->q, 3);
  fill_f32(&in->k, 4);
  int32_t *p = (int32_t *)in->pos.t.data;
  p[0] = 4, p[1] = 0, p[2] = 2;
  fill_cache(&in->cache);
}

static void free_inputs(rope_inputs *in) {
  free_tensor(&in->q), free_tensor(&in->k), free_tensor(&in->pos), free_tensor(&in->cache);
}

/* Checks one tensor [T, H, D] against a float64 rotation of its saved copy. */
static void check_rotated(const test_tensor *x, const float *before, int heads, const rope_inputs *in, int gptj) {
  const float *after = (const float *)x->t.data, *cache = (const float *)in->cache.t.data;
  const int32_t *pos = (const int32_t *)in->pos.t.data;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < heads; ++h) {
      const float *b = before + (t * heads + h) * D, *a = after + (t * heads + h) * D;
      for (int i = 0; i < R / 2; ++i) {
        const int i1 = gptj ? 2 * i : i, i2 = gptj ? 2 * i + 1 : i + R / 2;
        const double c = cache[pos[t] * R + i], s = cache[pos[t] * R + R / 2 + i];
        CHECK(fabs(a[i1] - (b[i1] * c - b[i2] * s)) < 1e-5);
        CHECK(fabs(a[i2] - (b[i2] * c + b[i1] * s)) < 1e-5);
      }
      for (int i = R; i < D; ++i) CHECK(a[i] == b[i]); /* past the rotary dim: untouched */
    }
  CHECK(guards_intact(x));
}

static void test_rope_values(void) {
  for (int gptj = 0; gptj <= 1; ++gptj) {
    rope_inputs in;
    make_inputs(&in);
    float q0[T * HQ * D], k0[T * HK * D];
    memcpy(q0, in.q.t.data, sizeof q0);
    memcpy(k0, in.k.t.data, sizeof k0);
    EXPECT_OK(aiter_rope(&in.q.t, &in.k.t, &in.pos.t, &in.cache.t, gptj ? AITER_ROPE_GPTJ : AITER_ROPE_NEOX, NULL));
    check_rotated(&in.q, q0, HQ, &in, gptj);
    check_rotated(&in.k, k0, HK, &in, gptj);
    free_inputs(&in);
  }
}

/* The bytes of q and k are what they were before the failing calls. */
static int unchanged(const rope_inputs *in, const float *q0, const float *k0) {
  return memcmp(in->q.t.data, q0, in->q.bytes) == 0 && memcmp(in->k.t.data, k0, in->k.bytes) == 0 &&
         guards_intact(&in->q) && guards_intact(&in->k);
}

#define ROPE(q, k, pos, cache, style) aiter_rope((q), (k), (pos), (cache), (style), NULL)

static void test_rope_bad_input(void) {
  rope_inputs in;
  make_inputs(&in);
  DLTensor *q = &in.q.t, *k = &in.k.t, *pos = &in.pos.t, *cache = &in.cache.t;
  float q0[T * HQ * D], k0[T * HK * D];
  memcpy(q0, q->data, sizeof q0);
  memcpy(k0, k->data, sizeof k0);
  test_tensor q2d, k_short, pos_f32, pos_2d, pos_long, cache_f16, cache_odd, cache_wide, k_f16, k_d4;
  make_tensor(&q2d, F32, 2, (int64_t[]){T, HQ * D});
  make_tensor(&k_short, F32, 3, (int64_t[]){T - 1, HK, D});
  make_tensor(&pos_f32, F32, 1, (int64_t[]){T});
  make_tensor(&pos_2d, I32, 2, (int64_t[]){T, 1});
  make_tensor(&pos_long, I64, 1, (int64_t[]){T + 1});
  make_tensor(&cache_f16, F16, 2, (int64_t[]){MAX_POS, R});
  make_tensor(&cache_odd, F32, 2, (int64_t[]){MAX_POS, 5});
  make_tensor(&cache_wide, F32, 2, (int64_t[]){MAX_POS, D + 2});
  make_tensor(&k_f16, F16, 3, (int64_t[]){T, HK, D});
  make_tensor(&k_d4, F32, 3, (int64_t[]){T, HK, 4});

  EXPECT_STATUS(ROPE(NULL, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "q: expected a tensor");
  EXPECT_STATUS(ROPE(q, k, NULL, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "positions: expected a tensor");
  EXPECT_STATUS(ROPE(q, k, pos, NULL, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "cos_sin_cache: expected a tensor");
  EXPECT_STATUS(ROPE(&q2d.t, NULL, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "q: expected 3 dims");
  EXPECT_STATUS(ROPE(q, &k_short.t, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "k: expected shape[0] == 3");
  EXPECT_STATUS(ROPE(q, &k_d4.t, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "head dim of q");
  EXPECT_STATUS(ROPE(q, &k_f16.t, pos, cache, AITER_ROPE_NEOX), AITER_ERR_UNSUPPORTED_DTYPE, "k: expected the dtype of q");
  EXPECT_STATUS(ROPE(q, k, &pos_f32.t, cache, AITER_ROPE_NEOX), AITER_ERR_UNSUPPORTED_DTYPE, "positions: expected dtype int32, int64");
  EXPECT_STATUS(ROPE(q, k, &pos_2d.t, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "positions: expected 1 dims");
  EXPECT_STATUS(ROPE(q, k, &pos_long.t, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "positions: expected shape[0] == 3");
  EXPECT_STATUS(ROPE(q, k, pos, &cache_f16.t, AITER_ROPE_NEOX), AITER_ERR_UNSUPPORTED_DTYPE, "cos_sin_cache: expected dtype");
  EXPECT_STATUS(ROPE(q, k, pos, &cache_odd.t, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "even rotary dim");
  EXPECT_STATUS(ROPE(q, k, pos, &cache_wide.t, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "exceeds the head dim 8");
  EXPECT_STATUS(ROPE(q, k, pos, cache, (aiter_rope_style)7), AITER_ERR_INVALID_ARGUMENT, "style");

  /* Strides: non-unit along D, heads sharing memory, a negative stride, a cache view. */
  q->strides = in.q.strides;
  in.q.strides[0] = HQ * D, in.q.strides[1] = 1, in.q.strides[2] = HQ;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "q: expected unit stride");
  in.q.strides[1] = 0, in.q.strides[2] = 1;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "q: rows overlap");
  in.q.strides[1] = D / 2;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "q: rows overlap");
  in.q.strides[0] = -HQ * D, in.q.strides[1] = D;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "negative stride");
  q->strides = NULL;
  cache->strides = in.cache.strides;
  in.cache.strides[0] = R + 1, in.cache.strides[1] = 1;
  in.cache.shape[0] = MAX_POS - 1; /* stays inside the buffer */
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "cos_sin_cache: expected a compact");
  cache->strides = NULL, in.cache.shape[0] = MAX_POS;

  /* Sizes: negative and overflowing extents. */
  in.q.shape[1] = -1;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "negative extent");
  in.q.shape[1] = INT64_MAX / 4;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "overflow");
  in.q.shape[1] = HQ;

  /* Mixed devices. */
  k->device.device_type = kDLCUDA;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "k: expected the device of q");
  k->device.device_type = kDLCPU;
  pos->device.device_type = kDLCUDA;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "positions: expected the device of q");
  pos->device.device_type = kDLCPU;
  /* GPU tensors: positions live in device memory, which the host must not read
   * (the kernel bounds-checks them).  ROCm tensors find no AMD GPU on a test
   * machine, so nothing runs and the bad position goes unreported; CUDA is not
   * used here because these are host pointers, which a real GPU would reject. */
  ((int32_t *)pos->data)[2] = MAX_POS;
  q->device.device_type = k->device.device_type = pos->device.device_type = cache->device.device_type = kDLROCM;
  EXPECT_NO_HIP_DEVICE(ROPE(q, k, pos, cache, AITER_ROPE_NEOX));
  q->device.device_type = k->device.device_type = pos->device.device_type = cache->device.device_type = kDLCPU;
  ((int32_t *)pos->data)[2] = 2;

  /* Out-of-range positions, found before token 0 or 1 is rotated. */
  int32_t *p = (int32_t *)pos->data;
  p[2] = MAX_POS;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "value 5 at index 2");
  p[2] = -1;
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_GPTJ), AITER_ERR_INVALID_ARGUMENT, "value -1 at index 2");
  p[2] = 2;
  in.cache.shape[0] = 0; /* an empty cache admits no position at all */
  EXPECT_STATUS(ROPE(q, k, pos, cache, AITER_ROPE_NEOX), AITER_ERR_INVALID_ARGUMENT, "value 4 at index 0");
  in.cache.shape[0] = MAX_POS;

  CHECK(unchanged(&in, q0, k0));
  EXPECT_OK(ROPE(q, NULL, pos, cache, AITER_ROPE_NEOX)); /* repaired: q alone rotates, k stays */
  CHECK(memcmp(q->data, q0, sizeof q0) != 0 && memcmp(k->data, k0, sizeof k0) == 0);
  free_inputs(&in);
  free_tensor(&q2d), free_tensor(&k_short), free_tensor(&pos_f32), free_tensor(&pos_2d), free_tensor(&pos_long),
      free_tensor(&cache_f16), free_tensor(&cache_odd), free_tensor(&cache_wide), free_tensor(&k_f16),
      free_tensor(&k_d4);
}

/* int64 positions read with a stride (every other element of a [2T] buffer). */
static void test_rope_strided_int64_positions(void) {
  rope_inputs in;
  make_inputs(&in);
  float q0[T * HQ * D];
  memcpy(q0, in.q.t.data, sizeof q0);
  test_tensor pos64;
  make_tensor(&pos64, I64, 1, (int64_t[]){2 * T});
  int64_t *p = (int64_t *)pos64.t.data;
  const int32_t *p32 = (const int32_t *)in.pos.t.data;
  for (int t = 0; t < T; ++t) p[2 * t] = p32[t], p[2 * t + 1] = 1000; /* out of range, never read */
  pos64.shape[0] = T;
  pos64.t.strides = pos64.strides;
  pos64.strides[0] = 2;
  EXPECT_OK(aiter_rope(&in.q.t, NULL, &pos64.t, &in.cache.t, AITER_ROPE_NEOX, NULL));
  check_rotated(&in.q, q0, HQ, &in, 0);
  free_inputs(&in);
  free_tensor(&pos64);
}

int main(void) {
  test_rope_values();
  test_rope_bad_input();
  test_rope_strided_int64_positions();
  return report();
}
