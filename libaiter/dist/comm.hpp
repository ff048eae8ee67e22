// One rank's communicator (aiter_comm of include/aiter/dist.h), shared by the
// collectives (comm.cpp) and the custom all-reduce (custom_ar.cpp).
#pragma once

#include "aiter/dist.h"
#include "core/dtype.hpp"
#include "core/tensor.hpp"
#include "dist/nccl.hpp"

struct aiter_comm {
  const aiter::dist::NcclApi *api;
  aiter::dist::NcclComm nccl;
  int32_t rank, world;
  DLDevice device;
};

namespace aiter {
namespace dist {

// The communicator is there and `t` is a contiguous tensor on its device.
void check_on_comm(ArgCheck &c, const aiter_comm *comm, const DLTensor *t, const char *name);

// NCCL's all-reduce (sum) of `count` elements of `dtype` (f32, f16, bf16) on the
// caller's stream, the communicator's device current.
aiter_status nccl_all_reduce(aiter_comm *comm, void *out, const void *x, size_t count, DType dtype, void *stream);

// NCCL's all-gather of `bytes` bytes a rank.
aiter_status nccl_all_gather_bytes(aiter_comm *comm, void *out, const void *x, size_t bytes, void *stream);

}  // namespace dist
}  // namespace aiter
