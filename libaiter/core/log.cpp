#include "core/log.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace aiter {

static LogLevel parse_level(const char *text) {
  if (text == nullptr) return LogLevel::off;
  if (std::strcmp(text, "error") == 0 || std::strcmp(text, "1") == 0) return LogLevel::error;
  if (std::strcmp(text, "info") == 0 || std::strcmp(text, "2") == 0) return LogLevel::info;
  if (std::strcmp(text, "debug") == 0 || std::strcmp(text, "3") == 0) return LogLevel::debug;
  return LogLevel::off;
}

LogLevel log_level() {
  static const LogLevel level = parse_level(std::getenv("AITER_LOG_LEVEL"));
  return level;
}

// One fprintf per line, so that lines of several threads do not interleave.
static void write_line(const char *fmt, va_list args) {
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, args);
  std::fprintf(stderr, "[aiter] %s\n", text);
}

void log_message(LogLevel level, const char *fmt, ...) {
  if (level == LogLevel::off || static_cast<int>(level) > static_cast<int>(log_level())) return;
  va_list args;
  va_start(args, fmt);
  write_line(fmt, args);
  va_end(args);
}

void log_line(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  write_line(fmt, args);
  va_end(args);
}

}  // namespace aiter
