// Triton kernels take their arguments one by one (no parameter struct), in an
// order and with types that only the compiled kernel knows.  The build records
// them in the manifest's args column ("a:ptr,m:i32,lda:i64,...,scratch:ptr",
// kernels/triton/build.py; f32 for float scalars); the launcher names its values and this packs them
// into the driver's argument array in the kernel's order, refusing any
// mismatch instead of launching with misplaced arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aiter/aiter.h"

namespace aiter {
namespace gpu {

enum class ArgType : uint8_t { ptr, i32, i64, f32 };

struct TritonParam {
  std::string name;
  ArgType type;
};

// Parses an args column; false (with `error` set) when an entry is not name:type.
bool parse_triton_params(const std::string &column, std::vector<TritonParam> *params, std::string *error);

// A value the launcher offers, by name.  "scratch" parameters (Triton's global
// and profile scratch, unused by libaiter's kernels) take null without one.
struct NamedArg {
  const char *name;
  ArgType type;
  union {
    const void *ptr;
    int64_t integer;
    float real;
  };
  static NamedArg pointer(const char *n, const void *p) {
    NamedArg a{n, ArgType::ptr, {}};
    a.ptr = p;
    return a;
  }
  static NamedArg number(const char *n, int64_t v) {
    NamedArg a{n, ArgType::i64, {}};
    a.integer = v;
    return a;
  }
  static NamedArg single(const char *n, float v) {
    NamedArg a{n, ArgType::f32, {}};
    a.real = v;
    return a;
  }
};

constexpr int kMaxTritonArgs = 40;

// The driver's argument array: slots[i] points at the value of parameter i.
struct TritonArgs {
  alignas(8) unsigned char storage[kMaxTritonArgs][8];
  void *slots[kMaxTritonArgs];
  int count = 0;
};

// Fills `out` for `params` from `values`.  AITER_ERR_INTERNAL naming `kernel`
// and the parameter when one has no value, a value of another kind is offered
// (pointer, integer, float), an integer does not fit an i32 parameter, or there
// are more than kMaxTritonArgs parameters.
aiter_status pack_triton_args(const char *kernel, const std::vector<TritonParam> &params, const NamedArg *values,
                              int value_count, TritonArgs *out);

}  // namespace gpu
}  // namespace aiter
