/*
 * Tensor parallelism: collectives between the GPUs of several processes.
 *
 * aiter_comm: one rank's communicator over NCCL (NVIDIA, libnccl.so.2) or RCCL
 * (AMD, librccl.so.1), loaded with dlopen at first use and never linked
 * (AITER_NCCL_LIBRARY names another file).  A collective library that is missing
 * gives AITER_ERR_NO_DEVICE with "no NCCL" (or "no RCCL") and dlopen's message;
 * its own errors give AITER_ERR_DEVICE with its message.
 *
 * aiter_custom_ar: an all-reduce for the GPUs of one machine through buffers
 * that every rank's process maps (CUDA/HIP IPC): a one-shot kernel (every rank
 * reads every peer's input) for small messages, a two-shot kernel (reduce-scatter
 * then all-gather through the buffers) for medium ones, the communicator's NCCL
 * above.  The input is copied into the registered buffer by the kernel itself,
 * so calls can be captured in CUDA/HIP graphs and replayed with new contents.
 * Sums run in fp32 in rank order 0, 1, ..., so every rank gets bitwise the same
 * result.  NVLink multicast is not used.
 *
 * Every rank must make the same calls in the same order with the same shapes
 * (as with NCCL): a rank that skips a call leaves its peers waiting (the custom
 * kernels give up after about 10 s and leave their output unspecified).
 * dtypes: all-reduce and reduce-scatter bf16, fp16, fp32; all-gather any dtype.
 * Tensors are contiguous, on the communicator's device.  Argument order:
 * outputs, inputs, parameters, the communicator, the stream.
 */
#ifndef AITER_DIST_H
#define AITER_DIST_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aiter_comm aiter_comm;
typedef struct aiter_custom_ar aiter_custom_ar;

/* A communicator's identity: made by one rank, sent to every other by the
 * caller (NCCL's ncclUniqueId: 128 opaque bytes). */
typedef struct aiter_comm_id {
  uint8_t bytes[128];
} aiter_comm_id;

/* A new id for the collective library of device_type (kDLCUDA or kDLROCM). */
AITER_API aiter_status aiter_comm_unique_id(aiter_comm_id *id, int32_t device_type);

/* Rank `rank` of `world_size` (1..1024) on `device` (a GPU).  A collective: every
 * rank calls it with the same id; it returns once all have. */
AITER_API aiter_status aiter_comm_create(aiter_comm **comm, const aiter_comm_id *id, int32_t rank,
                                         int32_t world_size, DLDevice device);
/* NULL is accepted and does nothing. */
AITER_API aiter_status aiter_comm_destroy(aiter_comm *comm);
AITER_API aiter_status aiter_comm_get_info(const aiter_comm *comm, int32_t *rank, int32_t *world_size,
                                           DLDevice *device);

/* out = the sum of x over the ranks; out has x's shape and dtype; out may be x. */
AITER_API aiter_status aiter_all_reduce(DLTensor *out, const DLTensor *x, aiter_comm *comm, void *stream);
/* out = the ranks' x concatenated along dim 0: out.shape[0] = world_size * x.shape[0],
 * the other dims equal. */
AITER_API aiter_status aiter_all_gather(DLTensor *out, const DLTensor *x, aiter_comm *comm, void *stream);
/* out = this rank's part of the sum of x: x.shape[0] = world_size * out.shape[0]. */
AITER_API aiter_status aiter_reduce_scatter(DLTensor *out, const DLTensor *x, aiter_comm *comm, void *stream);

/* ---- custom all-reduce, one machine ----------------------------------------- */
typedef enum aiter_ar_algo {
  AITER_AR_AUTO = 0,     /* by message size: one-shot, two-shot, then NCCL (past 8 MiB or max_bytes) */
  AITER_AR_ONE_SHOT = 1, /* forced (messages up to max_bytes) */
  AITER_AR_TWO_SHOT = 2, /* forced (messages up to max_bytes) */
  AITER_AR_NCCL = 3      /* the communicator's NCCL all-reduce */
} aiter_ar_algo;

#define AITER_IPC_HANDLE_BYTES 64

/* Allocates this rank's shared buffers for messages of up to max_bytes (0: 8 MiB).
 * With comm (a collective over it), the peers' buffers are exchanged through it
 * and opened; without (comm NULL: rank, world_size and device given), the caller
 * exchanges the handles: aiter_custom_ar_handle, then aiter_custom_ar_open_peers.
 * world_size 1..8.  rank, world_size and device are ignored when comm is given. */
AITER_API aiter_status aiter_custom_ar_create(aiter_custom_ar **ar, aiter_comm *comm, int32_t rank,
                                              int32_t world_size, DLDevice device, size_t max_bytes);
/* This rank's buffer's IPC handle: AITER_IPC_HANDLE_BYTES bytes. */
AITER_API aiter_status aiter_custom_ar_handle(const aiter_custom_ar *ar, void *handle);
/* handles: world_size handles of AITER_IPC_HANDLE_BYTES bytes, in rank order. */
AITER_API aiter_status aiter_custom_ar_open_peers(aiter_custom_ar *ar, const void *handles);
/* NULL is accepted and does nothing.  No kernel of it may still be running. */
AITER_API aiter_status aiter_custom_ar_destroy(aiter_custom_ar *ar);
/* The largest message of the custom kernels, in bytes. */
AITER_API aiter_status aiter_custom_ar_max_bytes(const aiter_custom_ar *ar, size_t *max_bytes);

/* out = the sum of x over the ranks (x contiguous, any shape); out may be x.
 * algo: an aiter_ar_algo. */
AITER_API aiter_status aiter_custom_all_reduce(DLTensor *out, const DLTensor *x, int32_t algo,
                                               aiter_custom_ar *ar, void *stream);

/* residual_out = all_reduce(x) + residual; out = rmsnorm(residual_out) * weight:
 * the same values as aiter_custom_all_reduce then aiter_add_rmsnorm, in one kernel
 * where that is faster (x up to 8 MiB for 2 ranks, 512 KiB for 4, 256 KiB for
 * more, within max_bytes) and rows are whole 16-byte vectors of at most 1024 of
 * them; else those two calls.  x, residual, out, residual_out [..., H] of one
 * dtype, contiguous; weight [H], x's dtype or fp32.  residual_out may be residual. */
AITER_API aiter_status aiter_custom_all_reduce_add_rmsnorm(DLTensor *out, DLTensor *residual_out,
                                                           const DLTensor *x, const DLTensor *residual,
                                                           const DLTensor *weight, float epsilon,
                                                           aiter_custom_ar *ar, void *stream);
/* The same followed by per-row quantization, as aiter_add_rmsnorm_quant: out int8
 * or fp8, scale fp32 [..., 1].  Where the fused kernel does not apply, the sum goes
 * through a scratch buffer of max_bytes: larger x is AITER_ERR_UNSUPPORTED_SHAPE. */
AITER_API aiter_status aiter_custom_all_reduce_add_rmsnorm_quant(DLTensor *out, DLTensor *scale,
                                                                 DLTensor *residual_out, const DLTensor *x,
                                                                 const DLTensor *residual, const DLTensor *weight,
                                                                 float epsilon, aiter_custom_ar *ar, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_DIST_H */
