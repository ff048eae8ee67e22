// One XLA custom call as libaiter's C functions take it: the operands and
// results as DLTensors on the call's device, the attributes, and the stream
// XLA runs the computation on.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "aiter/aiter.h"
#include "xla/ffi/api/ffi.h"

namespace aiter::xla_ffi {

namespace ffi = ::xla::ffi;

// A call that does not fit its target (an operand or attribute missing, an
// element type DLPack has no code for): only a caller that bypasses aiter.jax
// gets one.  Thrown by Call and caught by the handler, which turns it into an
// XLA error; nothing has been written then.
struct BadCall : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Call {
 public:
  Call(DLDevice device, void *stream, const ffi::RemainingArgs &args, const ffi::RemainingRets &rets,
       const ffi::Dictionary &attrs);

  size_t num_args() const { return args_.size(); }
  size_t num_rets() const { return rets_.size(); }
  const DLTensor *arg(size_t i) const;
  const DLTensor *optional_arg(size_t i) const;  // NULL where the caller left trailing operands out
  DLTensor *ret(size_t i);
  DLTensor *optional_ret(size_t i);  // NULL where the call has fewer results
  float f32(const char *name) const;
  int32_t i32(const char *name) const;
  int64_t i64(const char *name) const;
  bool has_attr(const char *name) const { return attrs_.contains(name); }
  void *stream() const { return stream_; }

 private:
  void *stream_;
  std::vector<DLTensor> args_, rets_;
  const ffi::Dictionary &attrs_;
};

}  // namespace aiter::xla_ffi
