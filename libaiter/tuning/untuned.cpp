#include "tuning/untuned.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>

#include "core/log.hpp"

namespace aiter {

std::string untuned_line(const TuneKey &key) {
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "%d,%lld,%lld,%lld,%lld", key.compute_units, (long long)key.batch,
                (long long)key.m, (long long)key.n, (long long)key.k);
  return std::string(key.op) + "," + key.target + "," + numbers + "," + dtype_name(key.a_dtype) + "," +
         dtype_name(key.out_dtype) + "," + std::to_string(key.topk);
}

void append_untuned(const std::string &path, const TuneKey &key) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, std::string>> written;  // (file, line)
  const std::string line = untuned_line(key);
  std::lock_guard<std::mutex> lock(mutex);
  if (!written.insert({path, line}).second) return;
  std::FILE *f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    log_message(LogLevel::error, "untuned log %s cannot be opened: %s", path.c_str(), std::strerror(errno));
    return;
  }
  std::fseek(f, 0, SEEK_END);
  if (std::ftell(f) == 0) std::fputs("op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,topk\n", f);
  std::fprintf(f, "%s\n", line.c_str());
  std::fclose(f);
}

}  // namespace aiter
