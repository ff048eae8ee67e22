// The tuned tables and settings: read at first use and again after a reload,
// shared by every thread under one lock.
//
// A target's rows are parsed at the first lookup for that target: a CPU call
// parses only the files whose text holds "cpu", never the shipped GPU tables
// (parsing those was 0.55-0.8 ms of a process's first GEMM on the CPU).  A row
// matches a lookup only where its target column is the lookup's target, so a
// file without that word holds no row for it and skipping it selects exactly
// what reading every file did.  The files are all read (bytes only) at the
// first lookup, so unreadable or missing sources are still reported then; a
// file's own format errors are reported when it is first parsed: at the first
// lookup of a target it names, or when the sources are listed.
#include "tuning/config.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

// One source in merge order: its bytes until parsed, then its rows.
struct SourceFile {
  std::string path;
  std::string error;  // "path: what is wrong" when it could not be found, read or parsed
  std::string text;
  bool parsed = false;
  TableFile table;
};

struct Loaded {
  std::shared_ptr<const Settings> settings;
  std::vector<SourceFile> files;
  std::map<std::string, std::shared_ptr<const Table>> rows_by_target;  // merged at the target's first lookup
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

// A problem is reported once per load: in the log and in the sources text.
void report_problem(SourceFile &f, const std::string &problem) {
  log_message(LogLevel::error, "tuned config %s; its rows are not used", problem.c_str());
  f.error = problem;
}

void parse(SourceFile &f) {
  if (f.parsed || !f.error.empty()) return;
  f.table = parse_table(f.path, f.text);
  f.parsed = true;
  f.text.clear();
  if (!f.table.error.empty())
    report_problem(f, f.table.error);
  else
    log_message(LogLevel::info, "tuned config %s: %zu rows", f.path.c_str(), f.table.row_count);
}

std::unique_ptr<Loaded> load() {
  auto l = std::make_unique<Loaded>();
  l->settings = std::make_shared<const Settings>(read_settings());
  for (const TableSource &src : table_sources()) {
    l->files.emplace_back();
    SourceFile &f = l->files.back();
    f.path = src.path;
    std::string problem = src.error;
    if (problem.empty()) read_table_text(src.path, &f.text, &problem);
    if (!problem.empty())
      report_problem(f, problem);
    else
      log_message(LogLevel::debug, "tuned config %s: read (parsed at the first lookup of a target it names)",
                  f.path.c_str());
  }
  return l;
}

// The merged rows of the files that can hold rows for `target`, in merge order.
std::shared_ptr<const Table> merge_rows_for(Loaded &l, const std::string &target) {
  auto table = std::make_shared<Table>();
  for (SourceFile &f : l.files) {
    if (!f.parsed && f.text.find(target) == std::string::npos) continue;
    parse(f);
    if (f.error.empty())
      for (const auto &row : f.table.rows) (*table)[row.first] = row.second;
  }
  return table;
}

std::mutex loaded_mutex;
std::unique_ptr<Loaded> loaded_now;  // guarded by loaded_mutex

Loaded &loaded_locked() {
  if (!loaded_now) loaded_now = load();
  return *loaded_now;
}

std::shared_ptr<const Settings> settings() {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  return loaded_locked().settings;
}

std::shared_ptr<const Table> rows_for(const std::string &target) {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  Loaded &l = loaded_locked();
  std::shared_ptr<const Table> &rows = l.rows_by_target[target];
  if (!rows) rows = merge_rows_for(l, target);
  return rows;
}

}  // namespace

std::string tuned_variant(const TuneKey &key) {
  const std::shared_ptr<const Table> rows = rows_for(key.target);
  if (rows->empty()) return "";
  RowKey row{key.op,     key.target,  key.compute_units, key.batch, m_bucket(key.m), key.n, key.k,
             key.a_dtype, key.out_dtype, key.topk};
  auto found = rows->find(row);
  if (found == rows->end()) {  // a row for any compute-unit count
    row.compute_units = 0;
    found = rows->find(row);
  }
  return found == rows->end() ? "" : found->second;
}

void note_untuned(const TuneKey &key) {
  const std::shared_ptr<const Settings> s = settings();
  if (s->log_untuned) append_untuned(s->untuned_path, key);
}

void log_lookup(const TuneKey &key, const char *variant, const char *how) {
  if (!settings()->log_lookups) return;
  log_line("tuned config lookup: op=%s target=%s compute_units=%d batch=%lld m=%lld (bucket %lld) n=%lld k=%lld "
           "a_dtype=%s out_dtype=%s%s -> %s (%s)",
           key.op, key.target.c_str(), key.compute_units, (long long)key.batch, (long long)key.m,
           (long long)m_bucket(key.m), (long long)key.n, (long long)key.k, dtype_name(key.a_dtype),
           dtype_name(key.out_dtype), key.topk != 0 ? (" topk=" + std::to_string(key.topk)).c_str() : "", variant,
           how);
}

bool vendor_blas_enabled() { return settings()->vendor_blas; }

aiter_status reload_tuned_configs() {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  loaded_now.reset();
  return AITER_OK;
}

// Every file parsed, so that each one's row count or problem is listed.
std::string tuned_config_sources() {
  std::lock_guard<std::mutex> lock(loaded_mutex);
  std::string lines;
  for (SourceFile &f : loaded_locked().files) {
    parse(f);
    const std::string line = f.error.empty() ? f.path + ": " + std::to_string(f.table.row_count) + " rows" : f.error;
    lines += (lines.empty() ? "" : "\n") + line;
  }
  return lines;
}

}  // namespace aiter
