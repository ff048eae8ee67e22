/*
 * libaiter: LLM-inference operators behind a C ABI of DLPack tensors.
 *
 * Conventions shared by every op (the family headers below declare them):
 *  - Argument order: outputs, then inputs, then scalar parameters, then the stream.
 *  - Inputs are `const DLTensor *`, outputs `DLTensor *`, allocated by the caller.
 *    An optional tensor is passed as NULL.
 *  - Strides are honoured where the op says so; otherwise a non-compact tensor is
 *    rejected with AITER_ERR_INVALID_ARGUMENT.  Row-wise ops accept any tensor whose
 *    last dimension is contiguous and whose leading dimensions fold into one row stride.
 *  - The device of the tensors picks the backend (kDLCPU, kDLCUDA, kDLROCM); all
 *    tensors of one call live on one device.
 *  - `stream` is a cudaStream_t / hipStream_t for GPU tensors (NULL = default
 *    stream) and is ignored on the CPU.  Ops never synchronize.
 *  - Memory: a tensor's first element (data + byte_offset) must be aligned to its
 *    element size, and the bytes its extents and strides span must be
 *    representable: no int64 overflow of element or byte offsets, and no
 *    wrap-around of data + byte_offset + those bytes.  Strides of a tensor with
 *    no elements are never used.  Anything else is AITER_ERR_INVALID_ARGUMENT.
 *  - Aliasing: an output may share memory with an input only where its op says
 *    so (e.g. "out may be x": the same data, shape and strides).  Index tensors
 *    (positions, cu_seqlens, block tables, context lengths, slot mappings) must
 *    share no byte with any output of the call, on every device: they are read
 *    while the op writes, so such a call is refused.  Other overlaps of outputs
 *    with inputs or with each other give unspecified values, yet never an access
 *    outside the tensors' elements.
 *  - Every op returns an aiter_status; on failure aiter_last_error() says which
 *    argument was wrong and what was expected, after the op's name
 *    ("aiter_rmsnorm: weight: ...").  Enum arguments and DLDevice types are read
 *    as the ints a C caller may pass: a value that names no enumerator is
 *    AITER_ERR_INVALID_ARGUMENT.  Nothing is written to an output
 *    when argument checks fail.  The library never aborts and never prints unless
 *    AITER_LOG_LEVEL asks it to.
 */
#ifndef AITER_AITER_H
#define AITER_AITER_H

#include <stddef.h>
#include <stdint.h>

#include "aiter/dlpack.h"

#if defined(_WIN32)
#define AITER_API __declspec(dllexport)
#else
#define AITER_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Result of every call.  Values are fixed; new ones are appended. */
typedef enum aiter_status {
  AITER_OK = 0,                    /* success */
  AITER_ERR_INVALID_ARGUMENT = 1,  /* null pointer, wrong ndim/shape/stride/value, tensors that disagree */
  AITER_ERR_UNSUPPORTED_DTYPE = 2, /* a valid dtype this op does not implement */
  AITER_ERR_UNSUPPORTED_SHAPE = 3, /* a valid shape this op does not implement (e.g. head dim 96) */
  AITER_ERR_NO_DEVICE = 4,         /* GPU tensors but no usable GPU runtime or device */
  AITER_ERR_NO_KERNEL = 5,         /* no code object built for this GPU's target */
  AITER_ERR_OUT_OF_MEMORY = 6,     /* host or device allocation failed */
  AITER_ERR_DEVICE = 7,            /* the GPU driver reported an error */
  AITER_ERR_INTERNAL = 8           /* a bug in libaiter */
} aiter_status;

/* One-line meaning of a status ("invalid argument", ...); never NULL. */
AITER_API const char *aiter_status_string(aiter_status status);

/* Message of the last failed call on this thread ("" if none).  The pointer
 * stays valid until the next libaiter call on the same thread. */
AITER_API const char *aiter_last_error(void);

/* Version of the library actually loaded. */
AITER_API void aiter_version(int *major, int *minor, int *patch);
AITER_API const char *aiter_version_string(void);

/* Backends compiled into the library (bits of aiter_library_info.backends). */
enum {
  AITER_BACKEND_CPU = 1,
  AITER_BACKEND_CUDA = 2,
  AITER_BACKEND_HIP = 4
};

/* What this build of the library holds.  Set struct_size = sizeof(aiter_library_info)
 * before the call; fields past struct_size are left untouched, so older callers
 * keep working when fields are appended. */
typedef struct aiter_library_info {
  size_t struct_size;
  int32_t version_major;
  int32_t version_minor;
  int32_t version_patch;
  uint32_t backends;        /* AITER_BACKEND_* bits of the backends that can run */
  const char *gpu_targets;  /* comma-separated GPU targets built, "" if none */
  const char *build_config; /* compiler, build type, CPU ISA flags */
  int32_t cpu_threads;      /* worker threads the CPU backend uses (AITER_NUM_THREADS) */
  const char *kernel_dir;   /* folder of the code objects and their manifest.tsv, "" if none found */
  const char *cpu_isa;      /* the CPU kernels' instruction-set level (portable, avx2, avx512, avx512_bf16;
                               AITER_CPU_ISA caps it), then what the CPU has, e.g.
                               "avx512_bf16 (cpu has avx2 avx512 avx512_bf16 avx512_vnni)" */
  const char *cpu_libraries; /* vendor libraries the CPU GEMM variants found and dlopen-ed, comma-
                               separated, e.g. "openblas=/usr/lib/x86_64-linux-gnu/libopenblas.so.0,
                               onednn=/usr/lib/x86_64-linux-gnu/libdnnl.so.2", "" if none */
} aiter_library_info;

AITER_API aiter_status aiter_get_library_info(aiter_library_info *info);

/* Waits until the work queued on `stream` (NULL: the default stream) of a GPU
 * device has finished.  Ops never do this themselves; it is for callers with no
 * GPU runtime of their own (C programs, or JAX, which cannot order its work
 * after a foreign stream).  A CPU device returns AITER_OK at once. */
AITER_API aiter_status aiter_synchronize(DLDevice device, void *stream);

#ifdef __cplusplus
}
#endif

#include "aiter/activation.h"
#include "aiter/attention.h"
#include "aiter/gemm.h"
#include "aiter/mla.h"
#include "aiter/moe.h"
#include "aiter/norm.h"
#include "aiter/quant.h"
#include "aiter/rope.h"

#endif /* AITER_AITER_H */
