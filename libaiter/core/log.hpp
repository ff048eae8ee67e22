// Opt-in logging to stderr: silent unless AITER_LOG_LEVEL is error, info or debug.
#pragma once

namespace aiter {

enum class LogLevel { off = 0, error = 1, info = 2, debug = 3 };

LogLevel log_level();  // read once from AITER_LOG_LEVEL
void log_message(LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// One line whatever AITER_LOG_LEVEL says: output the user turned on with a
// variable of its own (AITER_LOG_TUNED_CONFIG).
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace aiter
