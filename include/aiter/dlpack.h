/*
 * The DLPack v1.1 tensor ABI, declared by libaiter from the DLPack specification.
 *
 * Why here: Debian bookworm's libdlpack-dev is 0.6, which lacks the versioned
 * managed tensor and the fp8 type codes.  When a system dlpack.h is included
 * first (it defines DLPACK_VERSION), that one is used and this one steps aside;
 * the layout below is the same.
 *
 * Contract: shapes and strides count elements, not bytes.  NULL strides mean a
 * compact row-major tensor.  The first element lives at
 * (char *)data + byte_offset.  Enum values are fixed and only ever appended.
 */
#ifndef AITER_DLPACK_H
#define AITER_DLPACK_H
#ifndef DLPACK_VERSION

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the DLPack ABI this header describes. */
typedef struct {
  uint32_t major; /* 1 */
  uint32_t minor; /* 1 */
} DLPackVersion;

/* Where the memory lives.  libaiter runs kDLCPU, kDLCUDA and kDLROCM tensors. */
typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id; /* ordinal of the device of that type */
} DLDevice;

/* The kind of number an element holds; with DLDataType.bits it names the dtype. */
typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,   /* OCP fp8, max 448, NaN 0x7f/0xff, no inf */
  kDLFloat8_e4m3fnuz = 11, /* AMD gfx942 fp8, max 240, NaN 0x80, no -0 */
  kDLFloat8_e5m2 = 12,     /* OCP fp8 with inf, max 57344 */
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17
} DLDataTypeCode;

typedef struct {
  uint8_t code;   /* a DLDataTypeCode */
  uint8_t bits;   /* bits of one lane: 8, 16, 32, 64 */
  uint16_t lanes; /* 1 for scalars; libaiter accepts lanes == 1 only */
} DLDataType;

/* A view of memory owned by somebody else.  libaiter reads ndim, shape,
 * strides and byte_offset and never keeps the pointer after a call returns. */
typedef struct {
  void *data;           /* base pointer (device pointer for GPU tensors) */
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;       /* ndim extents */
  int64_t *strides;     /* ndim strides in elements, or NULL for compact row-major */
  uint64_t byte_offset; /* bytes from data to the first element */
} DLTensor;

/* Pre-1.0 managed tensor, still what many producers' "dltensor" capsules hold. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

enum {
  DLPACK_FLAG_BITMASK_READ_ONLY = 1,
  DLPACK_FLAG_BITMASK_IS_COPIED = 2,
  DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED = 4
};

/* The v1.x managed tensor ("dltensor_versioned" capsules). */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags; /* DLPACK_FLAG_BITMASK_* */
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_VERSION */
#endif /* AITER_DLPACK_H */
