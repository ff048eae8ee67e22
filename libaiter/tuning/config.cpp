// The loaded tuned tables and settings: read at first use and again after a
// reload, shared by every thread through one immutable snapshot.
#include "tuning/config.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "core/log.hpp"
#include "tuning/sources.hpp"
#include "tuning/table.hpp"
#include "tuning/untuned.hpp"

namespace aiter {
namespace {

struct Settings {
  bool log_untuned = false;
  bool log_lookups = false;
  bool vendor_blas = true;
  std::string untuned_path;
};

struct Loaded {
  Settings settings;
  Table rows;
  std::string sources;  // one line per file read or failed
};

bool env_on(const char *name) {
  const char *v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

Settings read_settings() {
  Settings s;
  s.log_untuned = env_on("AITER_LOG_UNTUNED");
  s.log_lookups = env_on("AITER_LOG_TUNED_CONFIG");
  const char *vendor = std::getenv("AITER_VENDOR_BLAS");
  s.vendor_blas = vendor == nullptr || std::strcmp(vendor, "0") != 0;
  const char *path = std::getenv("AITER_UNTUNED_PATH");
  s.untuned_path = path != nullptr && path[0] != '\0' ? path : "aiter_untuned_gemm.csv";
  return s;
}

void add_source_line(Loaded &l, const std::string &line) { l.sources += (l.sources.empty() ? "" : "\n") + line; }

// A problem is reported once per load: in the log and in the sources text.
void report_problem(Loaded &l, const std::string &problem) {
  log_message(LogLevel::error, "tuned config %s; its rows are not used", problem.c_str());
  add_source_line(l, problem);
}

std::shared_ptr<const Loaded> load() {
  auto l = std::make_shared<Loaded>();
  l->settings = read_settings();
  for (const TableSource &src : table_sources()) {
    if (!src.error.empty()) {
      report_problem(*l, src.error);
      continue;
    }
    TableFile file = read_table(src.path);
    if (!file.error.empty()) {
      report_problem(*l, file.error);
      continue;
    }
    for (auto &row : file.rows) l->rows[row.first] = std::move(row.second);
    add_source_line(*l, src.path + ": " + std::to_string(file.row_count) + " rows");
    log_message(LogLevel::info, "tuned config %s: %zu rows", src.path.c_str(), file.row_count);
  }
  return l;
}

std::mutex loaded_mutex;
std::shared_ptr<const Loaded> loaded_now;

std::shared_ptr<const Loaded> loaded() {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  if (!loaded_now) loaded_now = load();
  return loaded_now;
}

}  // namespace

std::string tuned_variant(const TuneKey &key) {
  const std::shared_ptr<const Loaded> l = loaded();
  if (l->rows.empty()) return "";
  RowKey row{key.op,     key.target,  key.compute_units, key.batch, m_bucket(key.m), key.n, key.k,
             key.a_dtype, key.out_dtype, key.topk};
  auto found = l->rows.find(row);
  if (found == l->rows.end()) {  // a row for any compute-unit count
    row.compute_units = 0;
    found = l->rows.find(row);
  }
  return found == l->rows.end() ? "" : found->second;
}

void note_untuned(const TuneKey &key) {
  const std::shared_ptr<const Loaded> l = loaded();
  if (l->settings.log_untuned) append_untuned(l->settings.untuned_path, key);
}

void log_lookup(const TuneKey &key, const char *variant, const char *how) {
  if (!loaded()->settings.log_lookups) return;
  log_line("tuned config lookup: op=%s target=%s compute_units=%d batch=%lld m=%lld (bucket %lld) n=%lld k=%lld "
           "a_dtype=%s out_dtype=%s%s -> %s (%s)",
           key.op, key.target.c_str(), key.compute_units, (long long)key.batch, (long long)key.m,
           (long long)m_bucket(key.m), (long long)key.n, (long long)key.k, dtype_name(key.a_dtype),
           dtype_name(key.out_dtype), key.topk != 0 ? (" topk=" + std::to_string(key.topk)).c_str() : "", variant,
           how);
}

bool vendor_blas_enabled() { return loaded()->settings.vendor_blas; }

aiter_status reload_tuned_configs() {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  loaded_now.reset();
  return AITER_OK;
}

std::string tuned_config_sources() { return loaded()->sources; }

}  // namespace aiter
