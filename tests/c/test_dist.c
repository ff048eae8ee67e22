#define _POSIX_C_SOURCE 200809L /* setenv */
/* The collectives' C ABI on a machine without GPUs (CI): argument checks, a
 * clear "no device", and a clear "no NCCL" when the library cannot be loaded
 * (AITER_NCCL_LIBRARY pointed at a file that does not exist). */
#include <stdlib.h>

#include "aiter/dist.h"
#include "harness.h"

static DLDevice gpu(int type) {
  DLDevice d = {(DLDeviceType)type, 0};
  return d;
}

static void test_unique_id(void) {
  aiter_comm_id id;
  EXPECT_STATUS(aiter_comm_unique_id(NULL, kDLCUDA), AITER_ERR_INVALID_ARGUMENT, "id: expected a pointer");
  EXPECT_STATUS(aiter_comm_unique_id(&id, kDLCPU), AITER_ERR_INVALID_ARGUMENT, "expected a GPU");
  EXPECT_STATUS(aiter_comm_unique_id(&id, kDLCUDA), AITER_ERR_NO_DEVICE,
                "no NCCL: dlopen(/nonexistent/libnccl.so.2) failed");
  /* Remembered, with the same message, on the next call. */
  EXPECT_STATUS(aiter_comm_unique_id(&id, kDLCUDA), AITER_ERR_NO_DEVICE, "no NCCL");
  EXPECT_STATUS(aiter_comm_unique_id(&id, kDLROCM), AITER_ERR_NO_DEVICE, "no RCCL");
}

static void test_comm_create(void) {
  aiter_comm_id id;
  memset(&id, 0, sizeof id);
  aiter_comm *comm = (aiter_comm *)&id; /* must be overwritten with NULL on failure */
  const aiter_status bad = AITER_ERR_INVALID_ARGUMENT;
  EXPECT_STATUS(aiter_comm_create(NULL, &id, 0, 1, gpu(kDLCUDA)), bad, "comm: expected a pointer");
  EXPECT_STATUS(aiter_comm_create(&comm, NULL, 0, 1, gpu(kDLCUDA)), bad, "id: expected a pointer");
  CHECK(comm == NULL);
  EXPECT_STATUS(aiter_comm_create(&comm, &id, 0, 0, gpu(kDLCUDA)), bad, "world_size: expected 1..1024, got 0");
  EXPECT_STATUS(aiter_comm_create(&comm, &id, 2, 2, gpu(kDLCUDA)), bad, "rank: expected 0..1");
  EXPECT_STATUS(aiter_comm_create(&comm, &id, -1, 2, gpu(kDLCUDA)), bad, "rank: expected 0..1");
  EXPECT_STATUS(aiter_comm_create(&comm, &id, 0, 1, gpu(kDLCPU)), bad, "device: expected a GPU");
  EXPECT_STATUS(aiter_comm_create(&comm, &id, 0, 1, gpu(77)), bad, "device type 77");
  /* No CUDA driver here ("no CUDA driver"); with one, no NCCL (the variable above). */
  EXPECT_STATUS(aiter_comm_create(&comm, &id, 0, 1, gpu(kDLCUDA)), AITER_ERR_NO_DEVICE, "no ");
  CHECK(comm == NULL);
  EXPECT_NO_HIP_DEVICE(aiter_comm_create(&comm, &id, 0, 1, gpu(kDLROCM)));
  EXPECT_OK(aiter_comm_destroy(NULL));
  EXPECT_STATUS(aiter_comm_get_info(NULL, NULL, NULL, NULL), bad, "comm: expected a communicator");
}

static void test_collectives_need_a_comm(void) {
  test_tensor x, out;
  DLTensor *xt = make_tensor(&x, F32, 1, (int64_t[]){8});
  DLTensor *ot = make_tensor(&out, F32, 1, (int64_t[]){16});
  const aiter_status bad = AITER_ERR_INVALID_ARGUMENT;
  EXPECT_STATUS(aiter_all_reduce(xt, xt, NULL, NULL), bad, "comm: expected a communicator, got NULL");
  EXPECT_STATUS(aiter_all_gather(ot, xt, NULL, NULL), bad, "comm: expected a communicator, got NULL");
  EXPECT_STATUS(aiter_reduce_scatter(xt, ot, NULL, NULL), bad, "comm: expected a communicator, got NULL");
  EXPECT_STATUS(aiter_all_reduce(NULL, NULL, NULL, NULL), bad, "aiter_all_reduce");
  CHECK(untouched(&x) && guards_intact(&x) && untouched(&out) && guards_intact(&out));
  free_tensor(&x);
  free_tensor(&out);
}

static void test_custom_ar(void) {
  aiter_custom_ar *ar = NULL;
  const aiter_status bad = AITER_ERR_INVALID_ARGUMENT;
  EXPECT_STATUS(aiter_custom_ar_create(NULL, NULL, 0, 2, gpu(kDLCUDA), 0), bad, "ar: expected a pointer");
  EXPECT_STATUS(aiter_custom_ar_create(&ar, NULL, 0, 9, gpu(kDLCUDA), 0), bad, "world_size: expected 1..8, got 9");
  EXPECT_STATUS(aiter_custom_ar_create(&ar, NULL, 3, 2, gpu(kDLCUDA), 0), bad, "rank: expected 0..1, got 3");
  EXPECT_STATUS(aiter_custom_ar_create(&ar, NULL, 0, 2, gpu(kDLCPU), 0), bad, "device: expected a GPU");
  EXPECT_STATUS(aiter_custom_ar_create(&ar, NULL, 0, 2, gpu(kDLCUDA), 100), bad, "max_bytes");
  CHECK(ar == NULL);
  /* A GPU and its driver: a one-rank all-reduce needs no peer; none: "no device". */
  const aiter_status s = aiter_custom_ar_create(&ar, NULL, 0, 1, gpu(kDLCUDA), 0);
  CHECK(s == AITER_OK || s == AITER_ERR_NO_DEVICE);
  CHECK((s == AITER_OK) == (ar != NULL));
  EXPECT_OK(aiter_custom_ar_destroy(ar));
  EXPECT_OK(aiter_custom_ar_destroy(NULL));
  unsigned char handle[AITER_IPC_HANDLE_BYTES];
  size_t max_bytes = 0;
  EXPECT_STATUS(aiter_custom_ar_handle(NULL, handle), bad, "ar: expected a custom all-reduce");
  EXPECT_STATUS(aiter_custom_ar_open_peers(NULL, handle), bad, "ar: expected a custom all-reduce");
  EXPECT_STATUS(aiter_custom_ar_max_bytes(NULL, &max_bytes), bad, "ar: expected a pointer");

  test_tensor x;
  DLTensor *xt = make_tensor(&x, BF16, 2, (int64_t[]){2, 8});
  EXPECT_STATUS(aiter_custom_all_reduce(xt, xt, AITER_AR_AUTO, NULL, NULL), bad, "ar: expected a custom all-reduce");
  EXPECT_STATUS(aiter_custom_all_reduce_add_rmsnorm(xt, xt, xt, xt, xt, 1e-6f, NULL, NULL), bad,
                "aiter_custom_all_reduce_add_rmsnorm: ar: expected a custom all-reduce");
  EXPECT_STATUS(aiter_custom_all_reduce_add_rmsnorm_quant(xt, NULL, xt, xt, xt, xt, 1e-6f, NULL, NULL), bad,
                "scale: expected a tensor");
  CHECK(untouched(&x) && guards_intact(&x));
  free_tensor(&x);
}

int main(void) {
  setenv("AITER_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  test_unique_id();
  test_comm_create();
  test_collectives_need_a_comm();
  test_custom_ar();
  return report();
}
