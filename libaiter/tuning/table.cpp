#include "tuning/table.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/file.hpp"
#include "tuning/config.hpp"
#include "tuning/select.hpp"

namespace aiter {
namespace {

constexpr int64_t kLargestPowerBucket = 8192;

// The key columns, in the order the tuner writes them; those before kTopk are
// required, topk (the fused MoE's experts a token) may be absent (GEMM tables).
enum Column { kOp, kTarget, kComputeUnits, kBatch, kM, kN, kK, kADtype, kOutDtype, kVariant, kTopk, kColumns };
constexpr const char *kColumnNames[kColumns] = {"op", "target", "compute_units", "batch",   "m",   "n",
                                                "k",  "a_dtype", "out_dtype",    "variant", "topk"};

struct ParseError {
  std::string what;
};

std::string trim(const std::string &s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

std::vector<std::string> split_fields(const std::string &line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

bool is_blank_or_comment(const std::string &line) {
  const std::string t = trim(line);
  return t.empty() || t[0] == '#';
}

// Where each key column sits in the file's header; other columns are ignored.
std::vector<size_t> header_positions(const std::vector<std::string> &header) {
  std::vector<size_t> where(kColumns, SIZE_MAX);
  for (size_t i = 0; i < header.size(); ++i)
    for (int c = 0; c < kColumns; ++c)
      if (header[i] == kColumnNames[c]) {
        if (where[c] != SIZE_MAX) throw ParseError{"the header names column '" + header[i] + "' twice"};
        where[c] = i;
      }
  for (int c = 0; c < kTopk; ++c)
    if (where[c] == SIZE_MAX)
      throw ParseError{std::string("the header lacks column '") + kColumnNames[c] +
                       "' (expected op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant)"};
  return where;
}

// A decimal integer in [smallest, 2^31): sizes and counts, never signed or hex.
int64_t parse_count(const std::string &text, const char *column, int64_t smallest) {
  const bool digits = !text.empty() && text.size() <= 10 && text.find_first_not_of("0123456789") == std::string::npos;
  const int64_t value = digits ? std::stoll(text) : -1;
  if (value < smallest || value > INT32_MAX)
    throw ParseError{std::string(column) + ": expected an integer from " + std::to_string(smallest) +
                     " to 2147483647, got '" + text + "'"};
  return value;
}

DType parse_dtype(const std::string &text, const char *column) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::u8, DType::i32, DType::i64,
                  DType::e4m3fn, DType::e4m3fnuz, DType::e5m2})
    if (text == dtype_name(t)) return t;
  throw ParseError{std::string(column) + ": unknown dtype '" + text +
                   "' (expected a name such as bfloat16, float16, float32, int8, float8_e4m3fn)"};
}

std::string parse_op(const std::string &text) {
  std::string known;
  for (const TunedOpNames &t : tuned_ops()) {
    if (text == t.op) return text;
    known += (known.empty() ? "" : ", ") + std::string(t.op);
  }
  throw ParseError{"op: unknown op '" + text + "' (known: " + known + ")"};
}

std::string parse_name(const std::string &text, const char *column) {
  if (text.empty()) throw ParseError{std::string(column) + ": must not be empty"};
  return text;
}

void parse_row(const std::vector<std::string> &f, const std::vector<size_t> &at, RowKey *key, std::string *variant) {
  key->op = parse_op(f[at[kOp]]);
  key->target = parse_name(f[at[kTarget]], "target");
  key->compute_units = int(parse_count(f[at[kComputeUnits]], "compute_units", 0));
  key->batch = parse_count(f[at[kBatch]], "batch", 1);
  key->m = parse_count(f[at[kM]], "m", 1);
  if (m_bucket(key->m) != key->m)
    throw ParseError{"m: " + f[at[kM]] + " is not a bucket (1, 2, 4, ..., 8192, then multiples of 8192; " +
                     "the next bucket is " + std::to_string(m_bucket(key->m)) + ")"};
  key->n = parse_count(f[at[kN]], "n", 1);
  key->k = parse_count(f[at[kK]], "k", 1);
  key->a_dtype = parse_dtype(f[at[kADtype]], "a_dtype");
  key->out_dtype = parse_dtype(f[at[kOutDtype]], "out_dtype");
  *variant = parse_name(f[at[kVariant]], "variant");
  key->topk = at[kTopk] == SIZE_MAX ? 0 : parse_count(f[at[kTopk]], "topk", 0);
  const bool moe = key->op.compare(0, 9, "fused_moe") == 0;
  if (moe && key->topk == 0)
    throw ParseError{"topk: expected the experts a token (1 or more) for a " + key->op + " row (a topk column)"};
  if (!moe && key->topk != 0) throw ParseError{"topk: expected 0 for a " + key->op + " row, got " + f[at[kTopk]]};
}

}  // namespace

int64_t m_bucket(int64_t m) {
  if (m <= 1) return 1;
  // Rounded up to a multiple of the largest power bucket; an M within one bucket of
  // INT64_MAX (an empty GEMM can have any M) keeps the last whole multiple instead.
  if (m > kLargestPowerBucket) {
    const int64_t whole = m / kLargestPowerBucket * kLargestPowerBucket;
    return whole == m || whole > INT64_MAX - kLargestPowerBucket ? whole : whole + kLargestPowerBucket;
  }
  int64_t b = 1;
  while (b < m) b *= 2;
  return b;
}

bool read_table_text(const std::string &path, std::string *text, std::string *error) {
  if (read_whole_file(path, text)) return true;
  *error = path + ": cannot be read (" + std::strerror(errno) + ")";
  return false;
}

TableFile parse_table(const std::string &path, const std::string &text) {
  TableFile file;
  std::istringstream in(text);
  size_t header_size = 0;
  std::vector<size_t> columns;
  std::string line;
  int number = 0;
  try {
    while (std::getline(in, line)) {
      ++number;
      if (is_blank_or_comment(line)) continue;
      const std::vector<std::string> fields = split_fields(line);
      if (header_size == 0) {
        columns = header_positions(fields);
        header_size = fields.size();
        continue;
      }
      if (fields.size() != header_size)
        throw ParseError{"expected " + std::to_string(header_size) + " columns as in the header, got " +
                         std::to_string(fields.size())};
      RowKey key;
      std::string variant;
      parse_row(fields, columns, &key, &variant);
      file.rows[key] = variant;
      ++file.row_count;
    }
  } catch (const ParseError &e) {
    file.error = path + ":" + std::to_string(number) + ": " + e.what;
    file.rows.clear();
    file.row_count = 0;
  }
  return file;
}

}  // namespace aiter
