// The untuned log: problems that ran with no table row, as CSV lines a tuner
// reads back (`python -m aiter tune --untuned FILE`).
#pragma once

#include <string>

#include "tuning/config.hpp"

namespace aiter {

// Appends `key` (its real M, not the bucket) to the CSV at `path`, with a header
// when the file is new or empty; each key once per file and process.
void append_untuned(const std::string &path, const TuneKey &key);

// "op,target,...,out_dtype,topk" of `key` (real M), the untuned CSV's columns.
std::string untuned_line(const TuneKey &key);

}  // namespace aiter
