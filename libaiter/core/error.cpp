#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "core/caller_values.hpp"
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

void name_op_in_error(const char *op, aiter_status status) {
  const size_t n = std::strlen(op);
  if (std::strncmp(last_error, op, n) == 0 && last_error[n] == ':') return;
  char message[sizeof last_error];
  const int room = int(sizeof message) - int(n) - 3;  // the message is cut where it would not fit
  std::snprintf(message, sizeof message, "%s: %.*s", op, room > 0 ? room : 0,
                last_error[0] ? last_error : aiter_status_string(status));
  std::memcpy(last_error, message, sizeof last_error);
}

}  // namespace aiter

extern "C" {

AITER_API const char *aiter_status_string(aiter_status status) {
  switch (aiter::enum_value(status)) {  // any int may arrive from C
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
