#include "xla/bind.hpp"

namespace aiter::xla_ffi {

Binder::Binder(Call &call, const char *scalars) : call_(call), scalars_(scalars) {
  if (call.has_attr("absent")) absent_ = uint64_t(call.i64("absent"));
}

bool Binder::absent() {
  const size_t position = position_++;
  return position < 64 && (absent_ >> position & 1u);
}

const DLTensor *Binder::take(Tag<const DLTensor *>) { return absent() ? nullptr : call_.arg(next_arg_++); }

DLTensor *Binder::take(Tag<DLTensor *>) { return absent() ? nullptr : call_.ret(next_ret_++); }

std::string Binder::next_scalar() {
  ++position_;
  while (*scalars_ == ' ') ++scalars_;
  const char *end = scalars_;
  while (*end != '\0' && *end != ' ') ++end;
  if (end == scalars_) throw BadCall("the target's row names fewer scalars than its C function takes");
  std::string name(scalars_, end);
  scalars_ = end;
  return name;
}

DLTensor *Binder::remaining_result() {
  ++position_;
  return next_ret_ < call_.num_rets() ? call_.ret(next_ret_++) : nullptr;
}

float Binder::f32_or(const char *name, float fallback) const {
  return call_.has_attr(name) ? call_.f32(name) : fallback;
}

int32_t Binder::i32_or(const char *name, int32_t fallback) const {
  return call_.has_attr(name) ? call_.i32(name) : fallback;
}

// A struct's fields are the attributes of their names; a field left out keeps
// the library's default (aiter.jax leaves out softmax_scale=None: 1/sqrt(D)).
const aiter_attention_params *Binder::take(Tag<const aiter_attention_params *>) {
  aiter_attention_params_init(&attention_);
  attention_.softmax_scale = f32_or("softmax_scale", attention_.softmax_scale);
  attention_.causal = i32_or("causal", attention_.causal);
  attention_.window_left = i32_or("window_left", attention_.window_left);
  attention_.k_scale = f32_or("k_scale", attention_.k_scale);
  attention_.v_scale = f32_or("v_scale", attention_.v_scale);
  attention_.softcap = f32_or("softcap", attention_.softcap);
  attention_.lse = remaining_result();
  return &attention_;
}

const aiter_mla_params *Binder::take(Tag<const aiter_mla_params *>) {
  aiter_mla_params_init(&mla_);
  mla_.softmax_scale = f32_or("softmax_scale", mla_.softmax_scale);
  mla_.kv_scale = f32_or("kv_scale", mla_.kv_scale);
  mla_.num_splits = i32_or("num_splits", mla_.num_splits);
  mla_.lse = remaining_result();
  return &mla_;
}

const aiter_fused_moe_params *Binder::take(Tag<const aiter_fused_moe_params *>) {
  aiter_fused_moe_params_init(&moe_);
  moe_.activation = i32_or("activation", moe_.activation);
  moe_.weights_on_input = i32_or("weights_on_input", moe_.weights_on_input);
  moe_.block_size = i32_or("block_size", moe_.block_size);
  moe_.variant = i32_or("variant", moe_.variant);
  ++position_;
  return &moe_;
}

}  // namespace aiter::xla_ffi
