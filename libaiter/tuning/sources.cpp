#include "tuning/sources.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "aiter_config.h"

namespace aiter {
namespace {

bool is_dir(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool ends_with(const std::string &s, const char *suffix) {
  const size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The *.csv files of a folder, sorted so that merge order never depends on the
// file system.
std::vector<std::string> csv_files(const std::string &dir) {
  std::vector<std::string> files;
  if (DIR *d = opendir(dir.c_str())) {
    while (const dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      if (ends_with(name, ".csv") && !is_dir(dir + "/" + name)) files.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

void add_folder(const std::string &dir, std::vector<TableSource> *out) {
  if (dir.empty() || !is_dir(dir)) return;
  for (const std::string &f : csv_files(dir)) out->push_back({f, ""});
}

std::string library_dir() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&library_dir), &info) || info.dli_fname == nullptr) return "";
  const std::string lib = info.dli_fname;
  const size_t slash = lib.find_last_of('/');
  return slash == std::string::npos ? "." : lib.substr(0, slash);
}

std::string user_config_dir() {
  const char *xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/aiter/configs";
  const char *home = std::getenv("HOME");
  return home != nullptr && home[0] != '\0' ? std::string(home) + "/.config/aiter/configs" : "";
}

}  // namespace

std::string shipped_config_dir() {
  const std::string lib = library_dir();
  if (lib.empty()) return "";
  // A system install keeps them in <datadir>/aiter/configs (AITER_DATADIR_FROM_LIBDIR
  // leads there from libdir); the wheel in the package's aiter/configs beside the
  // library, and the build tree in <build>/configs, a copy of the source's.
  const std::string datadir = AITER_DATADIR_FROM_LIBDIR;
  const std::string installed = (datadir[0] == '/' ? datadir : lib + "/" + datadir) + "/aiter/configs";
  for (const std::string &dir : {installed, lib + "/configs"}) {
    if (!is_dir(dir)) continue;
    char *resolved = realpath(dir.c_str(), nullptr);  // messages name /usr/share/..., not lib/../../share
    const std::string clean = resolved != nullptr ? resolved : dir;
    std::free(resolved);
    return clean;
  }
  return "";
}

std::vector<TableSource> table_sources() {
  std::vector<TableSource> out;
  add_folder(shipped_config_dir(), &out);
  add_folder("/etc/aiter/configs", &out);
  add_folder(user_config_dir(), &out);
  if (const char *env = std::getenv("AITER_CONFIG_PATH")) {
    std::stringstream entries(env);
    for (std::string entry; std::getline(entries, entry, ':');) {
      if (entry.empty()) continue;
      if (is_dir(entry))
        add_folder(entry, &out);
      else if (exists(entry))
        out.push_back({entry, ""});
      else
        out.push_back({entry, entry + ": no such file or folder (named in AITER_CONFIG_PATH)"});
    }
  }
  return out;
}

}  // namespace aiter
