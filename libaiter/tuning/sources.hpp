// Where tuned tables come from, in merge order (later rows replace earlier
// rows with the same key): the tables shipped with the library, the site
// folder /etc/aiter/configs, the user's folder ($XDG_CONFIG_HOME/aiter/configs
// or ~/.config/aiter/configs), then the entries of AITER_CONFIG_PATH.
#pragma once

#include <string>
#include <vector>

namespace aiter {

struct TableSource {
  std::string path;   // a CSV file
  std::string error;  // set when an AITER_CONFIG_PATH entry does not exist
};

// The files to read, in order: a folder stands for its *.csv files, sorted.
// Missing shipped, site and user folders are skipped silently; a missing
// AITER_CONFIG_PATH entry is reported, since someone asked for it.
std::vector<TableSource> table_sources();

// The shipped tables' folder, or "" when none is found beside libaiter.so.
std::string shipped_config_dir();

}  // namespace aiter
