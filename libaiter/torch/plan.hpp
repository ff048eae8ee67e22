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
//            f float, F optional float, i int, b bool, s str, d optional ScalarType
//   params:  one token per C parameter before the stream: N (stack entry N),
//            @K (allocated output K), N=name:value,name:value (a str entry
//            turned into an enum value), N?M (tensor entry N, or M where N is
//            None), P:field~SOURCE;field~SOURCE (a params struct, each named
//            field set from a source of the forms above, left at its default
//            where the entry is None)
//   outputs: one token per allocated output, SHAPE/DTYPE, with
//            SHAPE like:N | half:N | rows:N | gemm:A,W | bgemm:A,W | one | topk:G,K
//                  | dims:D,D,... with D N.d (dim d of tensor entry N, d < 0 from
//                  the end), iN (int entry N) or cV (the constant V)
//            DTYPE of:N | code:C | arg:N:of:M | arg:N:code:C  (C: a ScalarType code)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aiter::torch_ops {

constexpr size_t kMaxStack = 24;
constexpr size_t kMaxOutputs = 4;

enum class Kind : char { Tensor = 't', OptionalTensor = 'T', Float = 'f', OptionalFloat = 'F', Int = 'i',
                         Bool = 'b', Str = 's', Dtype = 'd' };

struct EnumValue {
  std::string name;
  int32_t value;
};

struct Field;

struct Param {
  enum Source { Stack, Output, Params } source;
  int index = -1;                // the stack entry or the output
  std::vector<EnumValue> names = {};  // a str entry's enum values (empty otherwise)
  int fallback = -1;             // the tensor entry used where entry `index` is None
  std::vector<Field> fields = {};  // a params struct's fields
};

struct Field {
  std::string name;
  Param source;
};

struct Dim {
  enum Kind { TensorDim, IntArg, Constant } kind;
  int entry = -1;
  int64_t value = 0;             // the dim (TensorDim) or the constant
};

struct OutputRule {
  enum Shape { Like, Half, Rows, Gemm, BatchedGemm, One, Topk, Dims } shape;
  std::vector<Dim> dims = {};    // Dims
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
