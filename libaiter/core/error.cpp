#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>

#include "core/log.hpp"

namespace {
thread_local char last_error[1024];
}

namespace aiter {

aiter_status fail(aiter_status status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(last_error, sizeof last_error, fmt, args);
  va_end(args);
  log_message(LogLevel::error, "%s (%s)", last_error, aiter_status_string(status));
  return status;
}

void clear_error() { last_error[0] = '\0'; }

}  // namespace aiter

extern "C" {

AITER_API const char *aiter_status_string(aiter_status status) {
  switch (status) {
    case AITER_OK: return "success";
    case AITER_ERR_INVALID_ARGUMENT: return "invalid argument";
    case AITER_ERR_UNSUPPORTED_DTYPE: return "unsupported dtype";
    case AITER_ERR_UNSUPPORTED_SHAPE: return "unsupported shape";
    case AITER_ERR_NO_DEVICE: return "no device";
    case AITER_ERR_NO_KERNEL: return "no kernel for this device";
    case AITER_ERR_OUT_OF_MEMORY: return "out of memory";
    case AITER_ERR_DEVICE: return "device error";
    case AITER_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

AITER_API const char *aiter_last_error(void) { return last_error; }

}  // extern "C"
