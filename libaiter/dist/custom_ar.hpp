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
  size_t push_max_bytes;    // the largest message of the push kernels (max_bytes, at most 2 MiB)
  size_t push_slot_bytes;   // one slot of the push areas (allreduce_params.h's PushLayout)
  char *bufs[kArMaxRanks];  // every rank's buffer; bufs[rank] is this rank's own
  bool peers_open;
  void *scratch;  // max_bytes of this rank's memory, unshared: the fused ops' fallback
};

// Where the push areas begin in every rank's buffer (after the input and reduced areas).
inline size_t push_area_offset(const aiter_custom_ar &ar) { return size_t(kArDataOffset) + 2 * ar.area_bytes; }

namespace aiter {
namespace gpu {

// out = sum over the ranks of x (n elements of dtype).
enum class ArKernel { push, one_shot, two_shot };
aiter_status custom_all_reduce(const aiter_custom_ar &ar, void *out, const void *x, int64_t n, DType dtype,
                               ArKernel kernel, void *stream);

// The fused kernel's arguments, checked by the caller.
struct ArNormArgs {
  DType dtype, weight_dtype, quant_dtype;  // quant_dtype unknown: no quantization
  const void *x, *residual, *weight;
  void *out, *residual_out;
  float *scale;
  int64_t rows, cols;
  float epsilon;
};
// Whether the one-kernel path (push) takes these arguments (else all-reduce then the norm).
bool custom_all_reduce_norm_fits(const aiter_custom_ar &ar, const ArNormArgs &a);
// two_shot: each row summed by one rank and sent back (allreduce.cu), else one shot.
aiter_status custom_all_reduce_norm(const aiter_custom_ar &ar, const ArNormArgs &a, bool two_shot, void *stream);

}  // namespace gpu
}  // namespace aiter
