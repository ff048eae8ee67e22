// One tuned table file: a CSV with a header naming its columns, rows mapping a
// problem key to a kernel variant.  Columns the reader does not know (the
// tuner's us, tflops, error) are skipped by name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "core/dtype.hpp"

namespace aiter {

// A table row's key; `m` is a bucket, `compute_units` 0 matches any count,
// `topk` (an optional column) is 0 for GEMMs and the experts a token for MoE ops.
struct RowKey {
  std::string op, target;
  int compute_units = 0;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  DType a_dtype = DType::unknown, out_dtype = DType::unknown;
  int64_t topk = 0;

  bool operator<(const RowKey &o) const {
    return std::tie(op, target, compute_units, batch, m, n, k, a_dtype, out_dtype, topk) <
           std::tie(o.op, o.target, o.compute_units, o.batch, o.m, o.n, o.k, o.a_dtype, o.out_dtype, o.topk);
  }
};

using Table = std::map<RowKey, std::string>;  // key -> variant

struct TableFile {
  Table rows;
  size_t row_count = 0;  // rows read (a key repeated in the file counts each time)
  std::string error;     // "path:line: what is wrong", or "" when the file is good
};

// The bytes of `path`; false, with `error` naming the file, where it cannot be read.
bool read_table_text(const std::string &path, std::string *text, std::string *error);

// Parses `text`, the contents of `path` (named in messages).  On the first
// malformed line the error names it and `rows` is left empty: a half-read
// table would select kernels nobody tuned together.
TableFile parse_table(const std::string &path, const std::string &text);

}  // namespace aiter
