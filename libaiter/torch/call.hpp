// One call of a torch.ops.aiter kernel: the dispatcher's stack unboxed as the
// plan says (each entry taken, and so owned, exactly once), the tensors seen
// as DLTensors without copying (the DLTensor's shape and strides point into
// the tensor's own arrays), the outputs of a functional call allocated, the
// caller's current stream, and the library's status turned into an error
// carrying aiter_last_error().
#pragma once

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <optional>

#include "aiter/aiter.h"
#include "torch/plan.hpp"

namespace aiter::torch_ops {

// Filled once by aiter_torch_init: the GPU's DLPack device type (CUDA or
// ROCm) and torch's current-stream function, when torch has a GPU backend.
struct Runtime {
  DLDeviceType gpu = kDLCUDA;
  int32_t (*current_stream)(int32_t device, void **stream) = nullptr;
};
extern Runtime runtime;

// A string argument's handle, deleted with the call (also when the call's
// constructor throws, which skips ~Call).
struct OwnedString {
  StringHandle handle = nullptr;
  OwnedString() = default;
  OwnedString(const OwnedString &) = delete;
  OwnedString &operator=(const OwnedString &) = delete;
  ~OwnedString() {
    if (handle != nullptr) torch_delete_string(handle);
  }
};

class Call {
 public:
  Call(const Plan &plan, StableIValue *stack);
  ~Call();
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;

  const DLTensor *input(const Param &param);  // NULL for an optional tensor left out (and no fallback)
  DLTensor *written(int entry);
  DLTensor *output(int k) { return &out_dl_[k]; }
  double number(int entry) const { return number_[entry]; }
  bool given(int entry) const { return given_[entry]; }  // false for a None optional float
  int32_t enum_value(const Param &param) const;
  void *stream() const { return stream_; }

  void allocate_outputs();
  // Throws the library's error for a failed status; else moves the outputs onto the stack.
  void finish(aiter_status status, StableIValue *stack);

 private:
  void unbox(StableIValue *stack);
  void refuse_grad() const;
  void find_device();
  DLTensor *describe(int entry);
  int32_t output_dtype(const OutputRule &rule) const;
  int64_t rule_shape(const OutputRule &rule, int64_t *shape);

  const Plan &plan_;
  std::optional<torch::stable::Tensor> tensors_[kMaxStack];
  double number_[kMaxStack] = {};                // floats, ints and bools
  bool given_[kMaxStack] = {};
  int32_t dtype_[kMaxStack] = {};                // ScalarType codes, -1 for None
  OwnedString string_[kMaxStack];
  DLTensor dl_[kMaxStack];
  bool described_[kMaxStack] = {};
  AtenTensorHandle outs_[kMaxOutputs] = {};
  DLTensor out_dl_[kMaxOutputs];
  int32_t device_type_ = 0, device_index_ = 0;
  int first_tensor_ = -1;
  void *stream_ = nullptr;
};

}  // namespace aiter::torch_ops
