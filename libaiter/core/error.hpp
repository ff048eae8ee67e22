// Error reporting: every failure sets a thread-local message and returns a status.
#pragma once

#include <exception>
#include <new>

#include "aiter/aiter.h"

namespace aiter {

// Records "op: message" as this thread's last error and returns `status`.
aiter_status fail(aiter_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Clears the last error; every public entry point starts with it.
void clear_error();

// Makes this thread's last error start with "op: ", as every message of a public
// entry point does (messages of shared layers, such as the GPU driver loader's,
// are written before they know the op).
void name_op_in_error(const char *op, aiter_status status);

// Runs `body` (returning aiter_status) so that no C++ exception crosses the C ABI.
template <class Body>
aiter_status guard(const char *op, Body &&body) noexcept {
  try {
    clear_error();
    const aiter_status status = body();
    if (status != AITER_OK) name_op_in_error(op, status);
    return status;
  } catch (const std::bad_alloc &) {
    return fail(AITER_ERR_OUT_OF_MEMORY, "%s: host allocation failed", op);
  } catch (const std::exception &e) {
    return fail(AITER_ERR_INTERNAL, "%s: internal error: %s", op, e.what());
  } catch (...) {
    return fail(AITER_ERR_INTERNAL, "%s: internal error", op);
  }
}

}  // namespace aiter
