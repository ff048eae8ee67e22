// How one overload of a torch.ops.aiter op maps onto its C function: the
// schema's arguments as they arrive on the dispatcher's stack, the C
// function's parameters in order, and (functional overload) the outputs to
// allocate.  aiter/torch/_native.py writes it from the op table
// (python/aiter/spec), so the table stays the one description of the op; it
// is parsed once, at registration.
//
// Text form, four fields separated by '|':
//   names:   the schema arguments' names, separated by spaces (for messages)
//   stack:   one letter per schema argument: t tensor, T optional tensor,
//            f float, i int, b bool, s str, d optional ScalarType
//   params:  one token per C parameter before the stream: N (stack entry N),
//            @K (allocated output K), N=name:value,name:value (a str entry
//            turned into an enum value)
//   outputs: one token per allocated output, SHAPE/DTYPE, with
//            SHAPE like:N | half:N | rows:N | gemm:A,W | bgemm:A,W | one | topk:G,K
//            DTYPE of:N | code:C | arg:N:of:M | arg:N:code:C  (C: a ScalarType code)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aiter::torch_ops {

constexpr size_t kMaxStack = 24;
constexpr size_t kMaxOutputs = 4;

enum class Kind : char { Tensor = 't', OptionalTensor = 'T', Float = 'f', Int = 'i', Bool = 'b', Str = 's',
                         Dtype = 'd' };

struct EnumValue {
  std::string name;
  int32_t value;
};

struct Param {
  enum Source { Stack, Output } source;
  int index;                     // the stack entry or the output
  std::vector<EnumValue> names;  // a str entry's enum values (empty otherwise)
};

struct OutputRule {
  enum Shape { Like, Half, Rows, Gemm, BatchedGemm, One, Topk } shape;
  int a = -1, b = -1;            // the stack entries the shape reads
  int dtype_arg = -1;            // an optional ScalarType entry that, when given, is the dtype
  int dtype_of = -1;             // else the dtype of this stack tensor
  int32_t dtype_code = -1;       // else this ScalarType code
};

struct Plan {
  std::vector<Kind> stack;
  std::vector<std::string> names;  // of the stack entries
  std::vector<Param> params;
  std::vector<OutputRule> outputs;
  std::string op;                // "aiter.<name>", for messages
};

// Parses a plan; throws std::invalid_argument naming what is wrong.
Plan parse_plan(const std::string &op, const std::string &text);

}  // namespace aiter::torch_ops
