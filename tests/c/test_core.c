/* Status strings, last error, version and library info. */
#include "harness.h"

/* Every op called with NULL for every pointer: an error naming an argument, never a crash. */
static void test_all_null_arguments(void) {
  const aiter_status bad = AITER_ERR_INVALID_ARGUMENT;
  EXPECT_STATUS(aiter_rmsnorm(NULL, NULL, NULL, 1e-6f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_add_rmsnorm(NULL, NULL, NULL, NULL, NULL, 1e-6f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_layernorm(NULL, NULL, NULL, NULL, 1e-6f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_rmsnorm_quant(NULL, NULL, NULL, NULL, 1e-6f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_add_rmsnorm_quant(NULL, NULL, NULL, NULL, NULL, NULL, 1e-6f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul(NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_gelu_and_mul(NULL, NULL, AITER_GELU_TANH, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul_quant(NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_rope(NULL, NULL, NULL, NULL, AITER_ROPE_NEOX, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_quant_per_token_dynamic(NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_quant_per_tensor_static(NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_gemm_a16w16(NULL, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_gemm_a8w8(NULL, NULL, NULL, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_gemm_a8w8_blockscale(NULL, NULL, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_batched_gemm_a16w16(NULL, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_batched_gemm_a8w8(NULL, NULL, NULL, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_prefill_attention(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_paged_decode_attention(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), bad,
                "expected a tensor");
  EXPECT_STATUS(aiter_reshape_and_cache(NULL, NULL, NULL, NULL, NULL, 1.0f, 1.0f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_topk_softmax(NULL, NULL, NULL, 0, NULL), bad, "expected a tensor");
}

/* One valid tensor and NULL for the rest: the checks that run after a failure must not touch them. */
static void test_one_tensor_rest_null(void) {
  test_tensor x;
  DLTensor *t = make_tensor(&x, F32, 2, (int64_t[]){2, 8});
  const aiter_status bad = AITER_ERR_INVALID_ARGUMENT;
  EXPECT_STATUS(aiter_quant_per_token_dynamic(t, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_quant_per_token_dynamic(NULL, t, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_quant_per_tensor_dynamic(NULL, NULL, t, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_silu_and_mul_quant(NULL, NULL, t, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_rmsnorm_quant(NULL, NULL, t, NULL, 1e-6f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_add_rmsnorm_quant(NULL, NULL, NULL, t, NULL, NULL, 1e-6f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_rope(t, NULL, NULL, NULL, AITER_ROPE_NEOX, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_gemm_a8w8(NULL, t, t, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_gemm_a8w8_blockscale(NULL, t, t, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_batched_gemm_a8w8(NULL, t, t, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_prefill_attention(NULL, t, t, t, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_paged_decode_attention(NULL, t, t, t, NULL, NULL, NULL, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_reshape_and_cache(t, t, NULL, NULL, NULL, 1.0f, 1.0f, NULL), bad, "expected a tensor");
  EXPECT_STATUS(aiter_topk_softmax(t, NULL, NULL, 0, NULL), bad, "expected a tensor");
  free_tensor(&x);
}

int main(void) {
  test_all_null_arguments();
  test_one_tensor_rest_null();
  CHECK(strcmp(aiter_status_string(AITER_OK), "success") == 0);
  CHECK(strcmp(aiter_status_string(AITER_ERR_NO_DEVICE), "no device") == 0);
  CHECK(strcmp(aiter_status_string((aiter_status)999), "unknown status") == 0);

  int major = -1, minor = -1, patch = -1;
  aiter_version(&major, &minor, &patch);
  char expected[64];
  snprintf(expected, sizeof expected, "%d.%d.%d", major, minor, patch);
  CHECK(strcmp(aiter_version_string(), expected) == 0);
  aiter_version(NULL, NULL, NULL); /* NULL outputs are allowed */

  aiter_library_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_OK(aiter_get_library_info(&info));
  CHECK(info.version_major == major && (info.backends & AITER_BACKEND_CPU));
  CHECK(info.gpu_targets != NULL && info.build_config != NULL && info.cpu_threads >= 1);
  EXPECT_STATUS(aiter_get_library_info(NULL), AITER_ERR_INVALID_ARGUMENT, "info");

  /* An older caller whose struct ends after version_major: nothing past it is written. */
  unsigned char small[sizeof(aiter_library_info)];
  memset(small, 0x5a, sizeof small);
  ((aiter_library_info *)small)->struct_size = offsetof(aiter_library_info, version_minor);
  EXPECT_OK(aiter_get_library_info((aiter_library_info *)small));
  CHECK(small[offsetof(aiter_library_info, version_minor)] == 0x5a);
  CHECK(small[sizeof small - 1] == 0x5a);

  /* The last error is per call: a success clears it. */
  EXPECT_STATUS(aiter_get_library_info(NULL), AITER_ERR_INVALID_ARGUMENT, NULL);
  CHECK(aiter_last_error()[0] != '\0');
  EXPECT_OK(aiter_get_library_info(&info));
  CHECK(aiter_last_error()[0] == '\0');
  /* aiter_synchronize: a no-op for the CPU; no driver on this machine gives "no device".
   * The HIP runtime is opened once: the second call gets the first one's answer. */
  DLDevice cpu = {kDLCPU, 0}, bad = {kDLOpenCL, 0}, rocm = {kDLROCM, 0};
  EXPECT_OK(aiter_synchronize(cpu, NULL));
  EXPECT_STATUS(aiter_synchronize(bad, NULL), AITER_ERR_INVALID_ARGUMENT, "device type");
  EXPECT_NO_HIP_DEVICE(aiter_synchronize(rocm, NULL));
  EXPECT_NO_HIP_DEVICE(aiter_synchronize(rocm, NULL));
  return report();
}
