// The arguments of one libaiter C function, taken from an XLA call in the
// function's own parameter order, so that one template serves every op: each
// `const DLTensor *` is the call's next operand, each `DLTensor *` its next
// result (an output, or an array updated in place, whose operand XLA aliases
// with the result), each scalar the attribute the op's row names next, a
// params struct the attributes named after its fields (and its lse, the
// call's last result where there is one left), the stream last.  Bit i of the
// optional attribute "absent" makes tensor parameter i NULL (an optional
// tensor left out).  aiter/jax/_from_spec.py lays calls out this way from the
// op table.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "aiter/attention.h"
#include "aiter/mla.h"
#include "aiter/moe.h"
#include "core/typed_call.hpp"
#include "xla/call.hpp"

namespace aiter::xla_ffi {

using aiter::Tag;

class Binder {
 public:
  // scalars: the names of the function's scalar parameters in order, separated by spaces.
  Binder(Call &call, const char *scalars);

  const DLTensor *take(Tag<const DLTensor *>);
  DLTensor *take(Tag<DLTensor *>);
  float take(Tag<float>) { return call_.f32(next_scalar().c_str()); }
  int32_t take(Tag<int32_t>) { return call_.i32(next_scalar().c_str()); }
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  E take(Tag<E>) {
    return E(take(Tag<int32_t>{}));
  }
  const aiter_attention_params *take(Tag<const aiter_attention_params *>);
  const aiter_mla_params *take(Tag<const aiter_mla_params *>);
  const aiter_fused_moe_params *take(Tag<const aiter_fused_moe_params *>);
  void *take(Tag<void *>) { return call_.stream(); }

 private:
  bool absent();  // whether the parameter at position_ is NULL; advances position_
  std::string next_scalar();
  DLTensor *remaining_result();  // a params struct's lse: the last result, if not yet taken
  float f32_or(const char *name, float fallback) const;
  int32_t i32_or(const char *name, int32_t fallback) const;

  Call &call_;
  const char *scalars_;
  uint64_t absent_ = 0;
  size_t position_ = 0, next_arg_ = 0, next_ret_ = 0;
  aiter_attention_params attention_;
  aiter_mla_params mla_;
  aiter_fused_moe_params moe_;
};


}  // namespace aiter::xla_ffi
