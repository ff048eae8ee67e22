/* Status strings, last error, version and library info. */
#include "harness.h"

int main(void) {
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
  /* aiter_synchronize: a no-op for the CPU; no driver on this machine gives "no device". */
  DLDevice cpu = {kDLCPU, 0}, bad = {kDLOpenCL, 0};
  EXPECT_OK(aiter_synchronize(cpu, NULL));
  EXPECT_STATUS(aiter_synchronize(bad, NULL), AITER_ERR_INVALID_ARGUMENT, "device type");
  return report();
}
