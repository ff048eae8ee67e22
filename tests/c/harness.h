/* A small harness for the C API tests: tensors in host memory with guard bytes
 * around them, status checks that print the library's message, and a tally.
 * Each test file includes this once and ends main() with `return report();`. */
#ifndef AITER_TEST_HARNESS_H
#define AITER_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aiter/aiter.h"

static int checks_run, checks_failed;

#define GUARD_BYTES 64
#define GUARD_VALUE 0xA5

/* A compact tensor of up to 4 dims whose buffer has GUARD_BYTES of GUARD_VALUE
 * before and after it, so writes out of bounds are caught by guards_intact(). */
typedef struct {
  DLTensor t;
  int64_t shape[8];
  int64_t strides[8];
  unsigned char *block; /* guard | data | guard */
  size_t bytes;
} test_tensor;

static inline int dtype_bytes(DLDataType d) { return d.bits / 8; }

static inline DLDataType dt(uint8_t code, uint8_t bits) {
  DLDataType d = {code, bits, 1};
  return d;
}
#define F32 dt(kDLFloat, 32)
#define F16 dt(kDLFloat, 16)
#define BF16 dt(kDLBfloat, 16)
#define I8 dt(kDLInt, 8)
#define I32 dt(kDLInt, 32)
#define I64 dt(kDLInt, 64)
#define E4M3 dt(kDLFloat8_e4m3fn, 8)

/* make_tensor(&tt, F32, 2, (int64_t[]){4, 64}) */
static inline DLTensor *make_tensor(test_tensor *tt, DLDataType dtype, int ndim, const int64_t *shape) {
  memset(tt, 0, sizeof *tt);
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) {
    tt->shape[i] = shape[i];
    n *= (size_t)shape[i];
  }
  tt->bytes = n * (size_t)dtype_bytes(dtype);
  tt->block = (unsigned char *)malloc(tt->bytes + 2 * GUARD_BYTES);
  memset(tt->block, GUARD_VALUE, tt->bytes + 2 * GUARD_BYTES);
  memset(tt->block + GUARD_BYTES, 0, tt->bytes);
  tt->t.data = tt->block + GUARD_BYTES;
  tt->t.device.device_type = kDLCPU;
  tt->t.ndim = ndim;
  tt->t.dtype = dtype;
  tt->t.shape = tt->shape;
  tt->t.strides = NULL;
  return &tt->t;
}

/* Fills a float32 tensor with a deterministic pattern in [-1, 1). */
static inline void fill_f32(test_tensor *tt, unsigned seed) {
  float *p = (float *)tt->t.data;
  for (size_t i = 0; i < tt->bytes / 4; ++i) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
}

static inline int guards_intact(const test_tensor *tt) {
  for (size_t i = 0; i < GUARD_BYTES; ++i)
    if (tt->block[i] != GUARD_VALUE || tt->block[GUARD_BYTES + tt->bytes + i] != GUARD_VALUE) return 0;
  return 1;
}

/* True if the data bytes are all still zero (nothing was written). */
static inline int untouched(const test_tensor *tt) {
  for (size_t i = 0; i < tt->bytes; ++i)
    if (tt->block[GUARD_BYTES + i] != 0) return 0;
  return 1;
}

static inline void free_tensor(test_tensor *tt) { free(tt->block); }

static inline void check_true(int ok, const char *what, const char *file, int line) {
  ++checks_run;
  if (!ok) {
    ++checks_failed;
    fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
  }
}
#define CHECK(cond) check_true((cond) ? 1 : 0, #cond, __FILE__, __LINE__)

/* The call returns `expected` and, on failure, a message that contains `fragment`. */
static inline void check_status(aiter_status got, aiter_status expected, const char *fragment, const char *call,
                         const char *file, int line) {
  ++checks_run;
  const char *msg = aiter_last_error();
  int ok = got == expected;
  if (ok && expected != AITER_OK) ok = msg[0] != '\0' && (fragment == NULL || strstr(msg, fragment) != NULL);
  if (!ok) {
    ++checks_failed;
    fprintf(stderr, "FAIL %s:%d: %s\n  returned %d (%s), expected %d (%s); message: \"%s\"; wanted \"%s\"\n", file,
            line, call, (int)got, aiter_status_string(got), (int)expected, aiter_status_string(expected), msg,
            fragment ? fragment : "");
  }
}
#define EXPECT_STATUS(call, expected, fragment) check_status((call), (expected), (fragment), #call, __FILE__, __LINE__)
#define EXPECT_OK(call) EXPECT_STATUS(call, AITER_OK, NULL)

/* A call on ROCm tensors where no AMD GPU is present (every machine these tests
 * have run on) returns AITER_ERR_NO_DEVICE, with HIP's own answer when
 * libamdhip64 is installed and dlopen's when it is not; nothing else passes. */
#define NO_HIP_RUNTIME "no HIP runtime: dlopen(libamdhip64.so) failed: "
#define NO_AMD_GPU "no AMD GPU: hip"
static inline void check_no_hip_device(aiter_status got, const char *call, const char *file, int line) {
  const char *fragment = strstr(aiter_last_error(), NO_HIP_RUNTIME) ? NO_HIP_RUNTIME : NO_AMD_GPU;
  check_status(got, AITER_ERR_NO_DEVICE, fragment, call, file, line);
}
#define EXPECT_NO_HIP_DEVICE(call) check_no_hip_device((call), #call, __FILE__, __LINE__)

/* The closing line counts checks, in the "N passed, N failed" form test runners read. */
static inline int report(void) {
  printf("%d passed, %d failed\n", checks_run - checks_failed, checks_failed);
  return checks_failed ? 1 : 0;
}

#endif /* AITER_TEST_HARNESS_H */
