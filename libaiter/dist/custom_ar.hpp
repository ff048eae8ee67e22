// The custom all-reduce's state (aiter_custom_ar of include/aiter/dist.h): this
// rank's shared buffer and the peers' as mapped here, and the launchers of its
// kernels (libaiter/gpu/allreduce.cpp).
#pragma once

#include <cstddef>

#include "aiter/dist.h"
#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "kernels/allreduce/allreduce_params.h"

struct aiter_custom_ar {
  aiter_comm *comm;  // NULL when the caller exchanges the handles
  DLDevice device;
  int rank, world;
  size_t max_bytes;   // the largest message of the custom kernels
  size_t area_bytes;  // one data area (input or reduced) of a buffer
  char *bufs[kArMaxRanks];  // every rank's buffer; bufs[rank] is this rank's own
  bool peers_open;
  void *scratch;  // max_bytes of this rank's memory, unshared: the fused ops' fallback
};

namespace aiter {
namespace gpu {

// out = sum over the ranks of x (n elements of dtype), one-shot or two-shot.
aiter_status custom_all_reduce(const aiter_custom_ar &ar, void *out, const void *x, int64_t n, DType dtype,
                               bool two_shot, void *stream);

// The fused kernel's arguments, checked by the caller.
struct ArNormArgs {
  DType dtype, weight_dtype, quant_dtype;  // quant_dtype unknown: no quantization
  const void *x, *residual, *weight;
  void *out, *residual_out;
  float *scale;
  int64_t rows, cols;
  float epsilon;
};
// Whether the one-kernel path takes these arguments (else all-reduce then the norm).
bool custom_all_reduce_norm_fits(const aiter_custom_ar &ar, const ArNormArgs &a);
aiter_status custom_all_reduce_norm(const aiter_custom_ar &ar, const ArNormArgs &a, void *stream);

}  // namespace gpu
}  // namespace aiter
