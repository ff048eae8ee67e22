// Choosing the backend from where the tensors live.  Each op family keeps one
// table (an OpImpl per op) naming its CPU and GPU implementations; an op whose
// GPU entry is null reports that no GPU kernel exists for it.
#pragma once

#include "aiter/aiter.h"
#include "core/error.hpp"

namespace aiter {

// Where a GPU op runs: the device of its tensors and the caller's stream.
struct GpuCall {
  DLDevice device;
  void *stream;
};

template <class Args>
struct OpImpl {
  const char *name;                                            // the public symbol, for messages
  aiter_status (*cpu)(const Args &args);                       // host memory
  aiter_status (*gpu)(const Args &args, const GpuCall &call);  // CUDA or HIP memory; may be null
};

// GPU tensors when the GPU runtime is not built in: a clear "no device".
aiter_status no_gpu_backend(const char *op, const DLTensor *where);

template <class Args>
aiter_status run(const OpImpl<Args> &impl, const DLTensor *where, const Args &args, void *stream) {
  if (where->device.device_type == kDLCPU) return impl.cpu(args);
  if (impl.gpu == nullptr) return no_gpu_backend(impl.name, where);
  return impl.gpu(args, GpuCall{where->device, stream});
}

}  // namespace aiter
