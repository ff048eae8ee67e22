// Parsing of the plan text that aiter/torch/_native.py writes (plan.hpp).
// Runs once per overload at registration; every index is checked against
// the stack so that a call never reads outside it.
#include "torch/plan.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace aiter::torch_ops {
namespace {

std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) {
    if (!part.empty() || sep == '|') parts.push_back(part);
  }
  if (sep == '|' && !text.empty() && text.back() == sep) parts.emplace_back();  // getline drops it
  return parts;
}

[[noreturn]] void bad(const std::string &op, const std::string &what) {
  throw std::invalid_argument(op + ": plan: " + what);
}

int stack_index(const Plan &plan, const std::string &text) {
  size_t used = 0;
  int index = -1;
  try {
    index = std::stoi(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != text.size() || index < 0 || size_t(index) >= plan.stack.size()) {
    bad(plan.op, "bad stack index '" + text + "'");
  }
  return index;
}

int stack_index_of(const Plan &plan, const std::string &text, Kind kind) {
  int index = stack_index(plan, text);
  if (plan.stack[index] != kind) bad(plan.op, "entry " + text + " is not of kind " + char(kind));
  return index;
}

Param parse_param(const Plan &plan, const std::string &token);

Param parse_params_struct(const Plan &plan, const std::string &token) {
  Param param{Param::Params};
  for (const std::string &field : split(token.substr(2), ';')) {
    size_t tilde = field.find('~');
    if (tilde == std::string::npos) bad(plan.op, "params field without '~': " + field);
    param.fields.push_back({field.substr(0, tilde), parse_param(plan, field.substr(tilde + 1))});
  }
  return param;
}

Param parse_param(const Plan &plan, const std::string &token) {
  if (token.empty()) bad(plan.op, "empty parameter");
  if (token.rfind("P:", 0) == 0) return parse_params_struct(plan, token);
  if (token[0] == '@') return {Param::Output, std::stoi(token.substr(1))};
  size_t eq = token.find('='), question = token.find('?');
  Param param{Param::Stack, stack_index(plan, token.substr(0, std::min(eq, question)))};
  if (question != std::string::npos) {
    param.fallback = stack_index(plan, token.substr(question + 1));
    bool tensors = plan.stack[param.index] == Kind::OptionalTensor && plan.stack[param.fallback] == Kind::Tensor;
    if (!tensors || eq != std::string::npos) bad(plan.op, "a fallback needs an optional tensor and a tensor: " + token);
  }
  if (eq == std::string::npos) return param;
  if (plan.stack[param.index] != Kind::Str) bad(plan.op, "enum names on a non-str entry: " + token);
  for (const std::string &pair : split(token.substr(eq + 1), ',')) {
    size_t colon = pair.find(':');
    if (colon == std::string::npos) bad(plan.op, "enum value without ':' in " + token);
    param.names.push_back({pair.substr(0, colon), int32_t(std::stoi(pair.substr(colon + 1)))});
  }
  return param;
}

std::vector<Dim> parse_dims(const Plan &plan, const std::vector<std::string> &refs) {
  std::vector<Dim> dims;
  for (const std::string &ref : refs) {
    if (ref.size() > 1 && ref[0] == 'c') {
      dims.push_back({Dim::Constant, -1, std::stoll(ref.substr(1))});
    } else if (ref.size() > 1 && ref[0] == 'i') {
      dims.push_back({Dim::IntArg, stack_index_of(plan, ref.substr(1), Kind::Int)});
    } else {
      size_t dot = ref.find('.');
      if (dot == std::string::npos) bad(plan.op, "bad dim '" + ref + "'");
      int entry = stack_index(plan, ref.substr(0, dot));
      if (plan.stack[entry] != Kind::Tensor) bad(plan.op, "dim of a non-tensor entry: " + ref);
      dims.push_back({Dim::TensorDim, entry, std::stoll(ref.substr(dot + 1))});
    }
  }
  if (dims.size() > kMaxStack) bad(plan.op, "too many dims");
  return dims;
}

void parse_dtype(const Plan &plan, const std::string &text, OutputRule &rule) {
  std::vector<std::string> f = split(text, ':');
  size_t at = 0;
  if (f.size() >= 4 && f[0] == "arg") {
    rule.dtype_arg = stack_index_of(plan, f[1], Kind::Dtype);
    at = 2;
  }
  if (f.size() != at + 2) bad(plan.op, "bad dtype rule '" + text + "'");
  if (f[at] == "of") {
    rule.dtype_of = stack_index_of(plan, f[at + 1], Kind::Tensor);
  } else if (f[at] == "code") {
    rule.dtype_code = std::stoi(f[at + 1]);
  } else {
    bad(plan.op, "bad dtype rule '" + text + "'");
  }
}

OutputRule parse_output(const Plan &plan, const std::string &token) {
  size_t slash = token.find('/');
  if (slash == std::string::npos) bad(plan.op, "output without a dtype: " + token);
  std::string shape = token.substr(0, slash);
  size_t colon = shape.find(':');
  std::string name = shape.substr(0, colon);
  std::vector<std::string> refs = colon == std::string::npos ? std::vector<std::string>{}
                                                              : split(shape.substr(colon + 1), ',');
  static const struct { const char *name; OutputRule::Shape shape; size_t refs; } kShapes[] = {
      {"like", OutputRule::Like, 1}, {"half", OutputRule::Half, 1}, {"rows", OutputRule::Rows, 1},
      {"gemm", OutputRule::Gemm, 2}, {"bgemm", OutputRule::BatchedGemm, 2}, {"one", OutputRule::One, 0},
      {"topk", OutputRule::Topk, 2}};
  if (name == "dims") {
    OutputRule rule{OutputRule::Dims};
    rule.dims = parse_dims(plan, refs);
    parse_dtype(plan, token.substr(slash + 1), rule);
    return rule;
  }
  for (const auto &known : kShapes) {
    if (name != known.name) continue;
    if (refs.size() != known.refs) bad(plan.op, "shape rule '" + shape + "' takes " + std::to_string(known.refs));
    OutputRule rule{known.shape};
    if (known.refs > 0) rule.a = stack_index_of(plan, refs[0], Kind::Tensor);
    if (known.refs > 1) rule.b = stack_index_of(plan, refs[1], known.shape == OutputRule::Topk ? Kind::Int : Kind::Tensor);
    parse_dtype(plan, token.substr(slash + 1), rule);
    return rule;
  }
  bad(plan.op, "unknown shape rule '" + shape + "'");
}

void check_outputs(const Plan &plan, const Param &p) {
  if (p.source == Param::Output && (p.index < 0 || size_t(p.index) >= plan.outputs.size())) {
    bad(plan.op, "output @" + std::to_string(p.index) + " is not allocated");
  }
  for (const Field &f : p.fields) check_outputs(plan, f.source);
}

}  // namespace

Plan parse_plan(const std::string &op, const std::string &text) {
  Plan plan;
  plan.op = op;
  std::vector<std::string> fields = split(text, '|');
  if (fields.size() != 4) bad(op, "expected 4 fields separated by '|', got '" + text + "'");
  plan.names = split(fields[0], ' ');
  for (char c : fields[1]) {
    if (std::string("tTfFibsd").find(c) == std::string::npos) bad(op, std::string("unknown kind '") + c + "'");
    plan.stack.push_back(Kind(c));
  }
  if (plan.stack.size() > kMaxStack) bad(op, "too many arguments");
  if (plan.names.size() != plan.stack.size()) bad(op, "one name per argument expected");
  for (const std::string &token : split(fields[2], ' ')) plan.params.push_back(parse_param(plan, token));
  for (const std::string &token : split(fields[3], ' ')) plan.outputs.push_back(parse_output(plan, token));
  if (plan.outputs.size() > kMaxOutputs) bad(op, "too many outputs");
  for (const Param &p : plan.params) check_outputs(plan, p);
  return plan;
}

}  // namespace aiter::torch_ops
