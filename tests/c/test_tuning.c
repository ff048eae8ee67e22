/* Kernel selection from C: variant lists, the device key, tuned tables read
 * from AITER_CONFIG_PATH (a good one, a malformed one), and lookups from many
 * threads while another thread reloads the tables. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, setenv */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "aiter/gemm.h"
#include "aiter/tuning.h"
#include "harness.h"

static const DLDevice cpu = {kDLCPU, 0};

static void test_argument_checks(void) {
  const aiter_status bad = AITER_ERR_INVALID_ARGUMENT;
  const char *names[4], *target = NULL, *op = NULL;
  int count = -1, units = 0, how = -1;
  EXPECT_STATUS(aiter_kernel_variants(NULL, cpu, NULL, 0, &count), bad, "must not be NULL");
  EXPECT_STATUS(aiter_kernel_variants("gemm_a16w16", cpu, NULL, 2, &count), bad, "names non-NULL");
  EXPECT_STATUS(aiter_kernel_variants("gemm_zz", cpu, names, 4, &count), bad, "unknown op 'gemm_zz'");
  EXPECT_STATUS(aiter_tuned_config_device(cpu, NULL, &units), bad, "must not be NULL");
  EXPECT_STATUS(aiter_tuned_config_device((DLDevice){kDLMetal, 0}, &target, &units), bad, "device");
  EXPECT_NO_HIP_DEVICE(aiter_tuned_config_device((DLDevice){kDLROCM, 0}, &target, &units));
  EXPECT_STATUS(aiter_last_kernel_variant(&op, NULL, &how), bad, "must not be NULL");
  EXPECT_STATUS(aiter_force_kernel_variant(NULL, "cpu.tiled"), bad, "op must not be NULL");
  EXPECT_STATUS(aiter_force_kernel_variant("gemm_a8w8", "none.such"), bad, "is not a variant of gemm_a8w8");
}

static void test_lists_and_device_key(void) {
  const char *names[8];
  int count = -1, units = 0;
  const char *target = NULL;
  EXPECT_OK(aiter_kernel_variants("gemm_a16w16", cpu, NULL, 0, &count));
  CHECK(count >= 1);
  EXPECT_OK(aiter_kernel_variants("gemm_a16w16", cpu, names, 8, &count));
  int found = 0;
  for (int i = 0; i < count && i < 8; ++i) found |= strcmp(names[i], "cpu.tiled") == 0;
  CHECK(found);
  EXPECT_OK(aiter_tuned_config_device(cpu, &target, &units));
  CHECK(target != NULL && strcmp(target, "cpu") == 0);
  aiter_library_info info = {sizeof info};
  EXPECT_OK(aiter_get_library_info(&info));
  CHECK(units == info.cpu_threads);
}

/* A 3 x 8 by 5 x 8 float32 product; returns how the variant was chosen (-1 on failure). */
static int gemm_how(void) {
  test_tensor a, w, out;
  make_tensor(&a, F32, 2, (int64_t[]){3, 8}), make_tensor(&w, F32, 2, (int64_t[]){5, 8});
  fill_f32(&a, 1), fill_f32(&w, 2);
  make_tensor(&out, F32, 2, (int64_t[]){3, 5});
  int how = -1;
  const char *op = NULL, *variant = NULL;
  if (aiter_gemm_a16w16(&out.t, &a.t, &w.t, NULL, NULL) == AITER_OK &&
      aiter_last_kernel_variant(&op, &variant, &how) != AITER_OK)
    how = -1;
  free_tensor(&a), free_tensor(&w), free_tensor(&out);
  return how;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

static char table[64] = "/tmp/aiter_test_tuning_XXXXXX";

static void test_tables(void) {
  int fd = mkstemp(table);
  CHECK(fd >= 0);
  close(fd);
  write_file(table, "op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant\n"
                    "gemm_a16w16,cpu,0,1,4,5,8,float32,float32,cpu.tiled\n");
  setenv("AITER_CONFIG_PATH", table, 1);
  EXPECT_OK(aiter_reload_tuned_configs());
  char expected[128];
  snprintf(expected, sizeof expected, "%s: 1 rows", table);
  CHECK(strstr(aiter_tuned_config_sources(), expected) != NULL);  /* after any shipped tables */
  CHECK(gemm_how() == 1);

  write_file(table, "op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant\n"
                    "gemm_a16w16,cpu,0,1,4,5,8,float32,float32,cpu.tiled,1.5\n");
  EXPECT_OK(aiter_reload_tuned_configs());
  snprintf(expected, sizeof expected, "%s:2: expected 10 columns", table);
  const char *sources = aiter_tuned_config_sources();
  CHECK(strstr(sources, expected) != NULL);
  CHECK(gemm_how() == 0);  /* the op still runs, on the heuristic */
}

/* Lookups on several threads while the main thread reloads: every call runs and
 * finds the row (the table's content never changes). */
static int stop, calls, failures;
static void *lookups(void *unused) {
  (void)unused;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    if (gemm_how() != 1) __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void test_reload_while_looking_up(void) {
  write_file(table, "op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant\n"
                    "gemm_a16w16,cpu,0,1,4,5,8,float32,float32,cpu.tiled\n");
  EXPECT_OK(aiter_reload_tuned_configs());
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, lookups, NULL);
  int reloads = 0;
  const time_t give_up = time(NULL) + 10;
  while ((__atomic_load_n(&calls, __ATOMIC_RELAXED) < 2000 || reloads < 100) && time(NULL) < give_up) {
    if (aiter_reload_tuned_configs() != AITER_OK) break;
    ++reloads;
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  CHECK(calls >= 2000 && reloads >= 100);
  CHECK(failures == 0);
}

int main(void) {
  unsetenv("AITER_CONFIG_PATH");
  setenv("XDG_CONFIG_HOME", "/nonexistent", 1);  /* the user's tables stay out of the test */
  test_argument_checks();
  test_lists_and_device_key();
  test_tables();
  test_reload_while_looking_up();
  unlink(table);
  return report();
}
