#include "xla/call.hpp"

#include <sstream>
#include <string>

namespace aiter::xla_ffi {
namespace {

// The DLPack dtype of an XLA element type, for the types libaiter has a name for.
bool dlpack_dtype(ffi::DataType type, DLDataType *out) {
  struct Pair {
    ffi::DataType xla;
    DLDataType dl;
  };
  static const Pair kPairs[] = {
      {ffi::F32, {kDLFloat, 32, 1}},
      {ffi::F16, {kDLFloat, 16, 1}},
      {ffi::BF16, {kDLBfloat, 16, 1}},
      {ffi::F64, {kDLFloat, 64, 1}},
      {ffi::S8, {kDLInt, 8, 1}},
      {ffi::U8, {kDLUInt, 8, 1}},
      {ffi::S32, {kDLInt, 32, 1}},
      {ffi::S64, {kDLInt, 64, 1}},
      {ffi::F8E4M3FN, {kDLFloat8_e4m3fn, 8, 1}},
      {ffi::F8E4M3FNUZ, {kDLFloat8_e4m3fnuz, 8, 1}},
      {ffi::F8E5M2, {kDLFloat8_e5m2, 8, 1}},
  };
  for (const Pair &p : kPairs) {
    if (p.xla == type) {
      *out = p.dl;
      return true;
    }
  }
  return false;
}

// XLA lays the buffers of a custom call out row-major and compact (the default
// layout that jax.ffi.ffi_call asks for), so the strides stay NULL.
DLTensor dltensor(const ffi::AnyBuffer &buffer, DLDevice device, const std::string &what) {
  DLTensor t{};
  if (!dlpack_dtype(buffer.element_type(), &t.dtype)) {
    std::ostringstream message;  // XLA's operator<< names the type
    message << what << ": element type " << buffer.element_type() << " has no DLPack dtype that libaiter takes";
    throw BadCall(message.str());
  }
  auto dims = buffer.dimensions();
  t.data = buffer.untyped_data();
  t.device = device;
  t.ndim = int32_t(dims.size());
  t.shape = const_cast<int64_t *>(dims.begin());  // XLA's array, alive for the call; libaiter only reads it
  return t;
}

template <class Value>
Value attribute(const ffi::Dictionary &attrs, const char *name) {
  auto value = attrs.get<Value>(name);
  if (!value.has_value()) throw BadCall(std::string("attribute ") + name + ": " + value.error().message());
  return *value;
}

ffi::AnyBuffer buffer_of(const ffi::AnyBuffer &operand) { return operand; }
ffi::AnyBuffer buffer_of(ffi::Result<ffi::AnyBuffer> result) { return *result; }

// The operands (RemainingArgs) or results (RemainingRets) of the call, all buffers.
template <class Remaining>
std::vector<DLTensor> tensors(const Remaining &list, DLDevice device, const char *kind) {
  std::vector<DLTensor> out;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string what = kind + (" " + std::to_string(i));
    auto buffer = list.template get<ffi::AnyBuffer>(i);
    if (!buffer.has_value()) throw BadCall(what + ": " + buffer.error().message());
    out.push_back(dltensor(buffer_of(*buffer), device, what));
  }
  return out;
}

}  // namespace

Call::Call(DLDevice device, void *stream, const ffi::RemainingArgs &args, const ffi::RemainingRets &rets,
           const ffi::Dictionary &attrs)
    : stream_(stream),
      args_(tensors(args, device, "operand")),
      rets_(tensors(rets, device, "result")),
      attrs_(attrs) {}

const DLTensor *Call::arg(size_t i) const {
  if (i >= args_.size())
    throw BadCall("expected at least " + std::to_string(i + 1) + " operands, got " + std::to_string(args_.size()));
  return &args_[i];
}

const DLTensor *Call::optional_arg(size_t i) const { return i < args_.size() ? &args_[i] : nullptr; }

DLTensor *Call::ret(size_t i) {
  if (i >= rets_.size())
    throw BadCall("expected at least " + std::to_string(i + 1) + " results, got " + std::to_string(rets_.size()));
  return &rets_[i];
}

DLTensor *Call::optional_ret(size_t i) { return i < rets_.size() ? &rets_[i] : nullptr; }

float Call::f32(const char *name) const { return attribute<float>(attrs_, name); }

int32_t Call::i32(const char *name) const { return attribute<int32_t>(attrs_, name); }

int64_t Call::i64(const char *name) const { return attribute<int64_t>(attrs_, name); }

}  // namespace aiter::xla_ffi
