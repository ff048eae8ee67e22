// Whole files read into memory: the tuned tables (tuning/table.cpp) and the GPU
// code objects (gpu/registry.cpp).
#pragma once

#include <string>

namespace aiter {

// The file at `path` whole into *bytes: true, or false with errno saying why
// (*bytes then empty).  One read into a string sized by fstat: an ifstream
// copied a character at a time took 180-250 us for the three shipped tuned
// tables at a process's first GEMM, this 40-50 us.
bool read_whole_file(const std::string &path, std::string *bytes);

}  // namespace aiter
