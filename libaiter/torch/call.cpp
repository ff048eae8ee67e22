// The per-call work of a torch.ops.aiter kernel (call.hpp).  Everything here
// goes through the aoti_torch_* shim of PyTorch's stable ABI.
#include "torch/call.hpp"

#include <stdexcept>
#include <string>

#include "aiter/aiter.h"

namespace aiter::torch_ops {

Runtime runtime;

namespace {

void shim(AOTITorchError error, const char *what) {
  if (error != AOTI_TORCH_SUCCESS) throw std::runtime_error(std::string("aiter.torch: torch's ") + what + " failed");
}

// c10::ScalarType codes (stable: torch's serialization format relies on them).
struct DtypeName {
  int32_t code;
  const char *name;
  DLDataType dl;
};
constexpr DtypeName kDtypes[] = {
    {0, "uint8", {kDLUInt, 8, 1}},          {1, "int8", {kDLInt, 8, 1}},
    {2, "int16", {0, 0, 0}},                {3, "int32", {kDLInt, 32, 1}},
    {4, "int64", {kDLInt, 64, 1}},          {5, "float16", {kDLFloat, 16, 1}},
    {6, "float32", {kDLFloat, 32, 1}},      {7, "float64", {kDLFloat, 64, 1}},
    {8, "complex32", {0, 0, 0}},            {9, "complex64", {0, 0, 0}},
    {10, "complex128", {0, 0, 0}},          {11, "bool", {0, 0, 0}},
    {15, "bfloat16", {kDLBfloat, 16, 1}},   {23, "float8_e5m2", {12, 8, 1}},
    {24, "float8_e4m3fn", {10, 8, 1}},      {25, "float8_e5m2fnuz", {0, 0, 0}},
    {26, "float8_e4m3fnuz", {11, 8, 1}},
};

DLDataType dl_dtype(int32_t code, const Plan &plan, int entry) {
  for (const DtypeName &d : kDtypes) {
    if (d.code == code && d.dl.bits != 0) return d.dl;
  }
  std::string name = "code " + std::to_string(code);
  for (const DtypeName &d : kDtypes) {
    if (d.code == code) name = d.name;
  }
  throw std::invalid_argument(plan.op + ": " + plan.names[entry] + ": unsupported dtype torch." + name);
}

int64_t size_of(AtenTensorHandle t, int64_t dim) {
  int64_t ndim = 0, *sizes = nullptr;
  shim(aoti_torch_get_dim(t, &ndim), "get_dim");
  shim(aoti_torch_get_sizes(t, &sizes), "get_sizes");
  if (dim < 0) dim += ndim;
  return dim >= 0 && dim < ndim ? sizes[dim] : 0;
}

}  // namespace

Call::Call(const Plan &plan, StableIValue *stack) : plan_(plan) {
  unbox(stack);
  if (first_tensor_ < 0) throw std::invalid_argument(plan.op + ": no tensor argument");
  if (aoti_torch_grad_mode_is_enabled()) refuse_grad();
  find_device();
}

Call::~Call() {
  for (AtenTensorHandle out : outs_) {
    if (out != nullptr) aoti_torch_delete_tensor_object(out);
  }
}

void Call::unbox(StableIValue *stack) {
  using torch::stable::detail::to;
  for (size_t i = 0; i < plan_.stack.size(); ++i) {
    switch (plan_.stack[i]) {
      case Kind::Tensor: tensors_[i].emplace(to<AtenTensorHandle>(stack[i])); break;
      case Kind::OptionalTensor: tensors_[i] = to<std::optional<torch::stable::Tensor>>(stack[i]); break;
      case Kind::Float: number_[i] = to<double>(stack[i]); break;
      case Kind::OptionalFloat: {
        std::optional<double> value = to<std::optional<double>>(stack[i]);
        number_[i] = value.value_or(0.0);
        given_[i] = value.has_value();
        break;
      }
      case Kind::Int: number_[i] = double(to<int64_t>(stack[i])); break;
      case Kind::Bool: number_[i] = to<bool>(stack[i]) ? 1 : 0; break;
      case Kind::Str: string_[i].handle = to<StringHandle>(stack[i]); break;
      case Kind::Dtype: {
        auto dtype = to<std::optional<torch::headeronly::ScalarType>>(stack[i]);
        dtype_[i] = dtype ? int32_t(*dtype) : -1;
        break;
      }
    }
    if (first_tensor_ < 0 && tensors_[i]) first_tensor_ = int(i);
  }
}

// With grad mode on, a tensor that requires grad is refused: the ops have no
// derivative, and a silently detached output would train wrongly.  The stable
// ABI has no getter for requires_grad, so aiter::_requires_grad (defined in
// aiter/torch/_native.py) answers; inference (no_grad, inference_mode) never
// gets here.
void Call::refuse_grad() const {
  using torch::stable::detail::from;
  using torch::stable::detail::to;
  for (size_t i = 0; i < plan_.stack.size(); ++i) {
    if (!tensors_[i]) continue;
    StableIValue args[1] = {from(*tensors_[i])};
    shim(torch_call_dispatcher("aiter::_requires_grad", "", args, TORCH_ABI_VERSION), "aiter::_requires_grad");
    if (to<bool>(args[0])) {
      throw std::runtime_error(plan_.op + ": " + plan_.names[i] + " requires grad, but libaiter ops have no "
                               "derivative; call it under torch.no_grad() / torch.inference_mode(), or pass "
                               "detached tensors");
    }
  }
}

void Call::find_device() {
  AtenTensorHandle t = tensors_[first_tensor_]->get();
  shim(aoti_torch_get_device_type(t, &device_type_), "get_device_type");
  shim(aoti_torch_get_device_index(t, &device_index_), "get_device_index");
  if (device_type_ == aoti_torch_device_type_cpu()) return;
  if (device_type_ != aoti_torch_device_type_cuda() || runtime.current_stream == nullptr) {
    throw std::invalid_argument(plan_.op + ": " + plan_.names[first_tensor_] +
                                ": device type " + std::to_string(device_type_) + " is not supported (expected cpu or cuda)");
  }
  shim(runtime.current_stream(device_index_, &stream_), "get_current_cuda_stream");
}

DLTensor *Call::describe(int entry) {
  DLTensor &dl = dl_[entry];
  if (described_[entry]) return &dl;
  AtenTensorHandle t = tensors_[entry]->get();
  int32_t dtype = 0, type = 0, index = 0;
  int64_t ndim = 0;
  shim(aoti_torch_get_dtype(t, &dtype), "get_dtype");
  dl.dtype = dl_dtype(dtype, plan_, entry);
  shim(aoti_torch_get_data_ptr(t, &dl.data), "get_data_ptr");
  shim(aoti_torch_get_dim(t, &ndim), "get_dim");
  dl.ndim = int32_t(ndim);
  shim(aoti_torch_get_sizes(t, &dl.shape), "get_sizes");
  shim(aoti_torch_get_strides(t, &dl.strides), "get_strides");
  shim(aoti_torch_get_device_type(t, &type), "get_device_type");
  shim(aoti_torch_get_device_index(t, &index), "get_device_index");
  dl.device = {type == aoti_torch_device_type_cpu() ? kDLCPU : runtime.gpu, index};
  dl.byte_offset = 0;  // data_ptr already includes the storage offset
  described_[entry] = true;
  return &dl;
}

const DLTensor *Call::input(const Param &param) {
  if (tensors_[param.index]) return describe(param.index);
  return param.fallback >= 0 ? describe(param.fallback) : nullptr;
}

DLTensor *Call::written(int entry) { return tensors_[entry] ? describe(entry) : nullptr; }

int32_t Call::enum_value(const Param &param) const {
  if (param.names.empty()) {
    double value = number_[param.index];
    if (!(value >= -2147483648.0 && value <= 2147483647.0)) {
      throw std::invalid_argument(plan_.op + ": " + plan_.names[param.index] + ": " + std::to_string(int64_t(value)) +
                                  " does not fit in 32 bits");
    }
    return int32_t(value);
  }
  const char *text = nullptr;
  size_t length = 0;
  shim(torch_string_c_str(string_[param.index].handle, &text), "string_c_str");
  shim(torch_string_length(string_[param.index].handle, &length), "string_length");
  std::string value(text, length), expected;
  for (const EnumValue &e : param.names) {
    if (e.name == value) return e.value;
    expected += (expected.empty() ? "'" : ", '") + e.name + "'";
  }
  throw std::invalid_argument(plan_.op + ": " + plan_.names[param.index] + ": expected one of " + expected +
                              ", got '" + value + "'");
}

int32_t Call::output_dtype(const OutputRule &rule) const {
  if (rule.dtype_arg >= 0 && dtype_[rule.dtype_arg] >= 0) return dtype_[rule.dtype_arg];
  if (rule.dtype_of < 0) return rule.dtype_code;
  int32_t code = 0;
  shim(aoti_torch_get_dtype(tensors_[rule.dtype_of]->get(), &code), "get_dtype");
  return code;
}

// The outputs of a functional call, with the shapes the table's rules give
// (aiter/spec/table.py; _native.py names each rule).  A malformed input gets
// a placeholder size here, as in the table, and the library names the problem.
// The shape of one output (its ndim returned), by the table's rule.
int64_t Call::rule_shape(const OutputRule &rule, int64_t *shape) {
  AtenTensorHandle a = rule.a >= 0 ? tensors_[rule.a]->get() : nullptr;
  AtenTensorHandle b = rule.b >= 0 && tensors_[rule.b] ? tensors_[rule.b]->get() : nullptr;
  int64_t ndim = 0;
  if (a != nullptr) {
    int64_t *sizes = nullptr;
    shim(aoti_torch_get_dim(a, &ndim), "get_dim");
    shim(aoti_torch_get_sizes(a, &sizes), "get_sizes");
    if (ndim > int64_t(kMaxStack)) throw std::invalid_argument(plan_.op + ": too many dimensions");
    for (int64_t d = 0; d < ndim; ++d) shape[d] = sizes[d];
  }
  switch (rule.shape) {
    case OutputRule::Like: break;
    case OutputRule::Half: if (ndim > 0) shape[ndim - 1] /= 2; break;
    case OutputRule::Rows: if (ndim > 0) shape[ndim - 1] = 1; else shape[ndim++] = 1; break;
    case OutputRule::One: ndim = 1, shape[0] = 1; break;
    case OutputRule::Gemm: {
      int64_t wdim = 0;
      shim(aoti_torch_get_dim(b, &wdim), "get_dim");
      shape[0] = ndim == 2 ? shape[0] : 0, shape[1] = wdim == 2 ? size_of(b, 0) : 0;
      ndim = 2;
      break;
    }
    case OutputRule::BatchedGemm: {
      int64_t wdim = 0;
      shim(aoti_torch_get_dim(b, &wdim), "get_dim");
      bool ok = ndim == 3 && wdim == 3;
      shape[0] = ok ? shape[0] : 0, shape[1] = ok ? shape[1] : 0, shape[2] = ok ? size_of(b, 1) : 0;
      ndim = 3;
      break;
    }
    case OutputRule::Topk:
      shape[0] = ndim > 0 ? shape[0] : 0, shape[1] = int64_t(number_[rule.b]);
      ndim = 2;
      break;
    case OutputRule::Dims:
      ndim = int64_t(rule.dims.size());
      for (int64_t d = 0; d < ndim; ++d) {
        const Dim &dim = rule.dims[d];
        shape[d] = dim.kind == Dim::Constant ? dim.value
                   : dim.kind == Dim::IntArg ? int64_t(number_[dim.entry])
                                             : size_of(tensors_[dim.entry]->get(), dim.value);
      }
      break;
  }
  return ndim;
}

// The outputs of a functional call, with the shapes the table's rules give
// (aiter/spec/table.py; _native.py names each rule).  A malformed input gets
// a placeholder size here, as in the table, and the library names the problem.
void Call::allocate_outputs() {
  for (size_t k = 0; k < plan_.outputs.size(); ++k) {
    const OutputRule &rule = plan_.outputs[k];
    int64_t shape[kMaxStack], strides[kMaxStack];
    int64_t ndim = rule_shape(rule, shape);
    int64_t stride = 1;
    for (int64_t d = ndim - 1; d >= 0; --d) strides[d] = stride, stride *= shape[d] > 0 ? shape[d] : 1;
    int32_t dtype = output_dtype(rule);
    shim(aoti_torch_empty_strided(ndim, shape, strides, dtype, device_type_, device_index_, &outs_[k]),
         "empty_strided");
    DLTensor &dl = out_dl_[k];
    bool from_arg = rule.dtype_arg >= 0 && dtype_[rule.dtype_arg] >= 0;  // name what set the dtype
    dl.dtype = dl_dtype(dtype, plan_, from_arg ? rule.dtype_arg : rule.dtype_of >= 0 ? rule.dtype_of : first_tensor_);
    shim(aoti_torch_get_data_ptr(outs_[k], &dl.data), "get_data_ptr");
    shim(aoti_torch_get_sizes(outs_[k], &dl.shape), "get_sizes");
    shim(aoti_torch_get_strides(outs_[k], &dl.strides), "get_strides");
    dl.ndim = int32_t(ndim);
    dl.device = {device_type_ == aoti_torch_device_type_cpu() ? kDLCPU : runtime.gpu, device_index_};
    dl.byte_offset = 0;
  }
}

void Call::finish(aiter_status status, StableIValue *stack) {
  if (status != AITER_OK) {
    const char *message = aiter_last_error();
    std::string text = message != nullptr && *message ? message : plan_.op + ": failed";
    // pybind11 turns std::invalid_argument into ValueError (aiter's argument
    // errors are ValueErrors too); a device or kernel problem stays a RuntimeError.
    if (status == AITER_ERR_INVALID_ARGUMENT || status == AITER_ERR_UNSUPPORTED_DTYPE ||
        status == AITER_ERR_UNSUPPORTED_SHAPE) {
      throw std::invalid_argument(text);
    }
    throw std::runtime_error(text);
  }
  for (size_t k = 0; k < plan_.outputs.size(); ++k) {
    stack[k] = torch::stable::detail::from(outs_[k]);  // the stack takes the reference
    outs_[k] = nullptr;
  }
}

}  // namespace aiter::torch_ops
