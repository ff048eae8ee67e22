// A vendor BLAS library (cuBLASLt or hipBLASLt) opened with dlopen at first
// use: its functions, resolved by the names of blaslt_functions.def, with the
// opaque handles as void * and the enums as int (the C API of both).  Never
// linked: where no library opens, the vendor variants are not offered.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/vendor_blas/blaslt_vendor.hpp"

namespace aiter {
namespace gpu {
namespace blas {

using Status = int;  // cublasStatus_t / hipblasStatus_t: 0 is success

struct BlasLtApi {
  Status (*create)(void **handle);
  Status (*matmul_desc_create)(void **desc, int compute_type, int scale_type);
  Status (*matmul_desc_destroy)(void *desc);
  Status (*matmul_desc_set)(void *desc, int attribute, const void *value, size_t bytes);
  Status (*layout_create)(void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*layout_destroy)(void *layout);
  Status (*layout_set)(void *layout, int attribute, const void *value, size_t bytes);
  Status (*pref_create)(void **pref);
  Status (*pref_destroy)(void *pref);
  Status (*pref_set)(void *pref, int attribute, const void *value, size_t bytes);
  Status (*algo_get_heuristic)(void *handle, void *desc, void *a, void *b, void *c, void *d, void *pref,
                               int requested, void *results, int *returned);
  Status (*matmul)(void *handle, void *desc, const void *alpha, const void *a, void *a_layout, const void *b,
                   void *b_layout, const void *beta, const void *c, void *c_layout, void *d, void *d_layout,
                   const void *algo, void *workspace, size_t workspace_bytes, void *stream);
  Status (*transform_desc_create)(void **desc, int scale_type);
  Status (*transform_desc_destroy)(void *desc);
  Status (*transform_desc_set)(void *desc, int attribute, const void *value, size_t bytes);
  Status (*transform)(void *handle, void *desc, const void *alpha, const void *a, void *a_layout, const void *beta,
                      const void *b, void *b_layout, void *c, void *c_layout, void *stream);
  // From the GPU runtime: the per-device workspace, and whether a stream is
  // being captured into a graph (no allocation then).
  int (*device_malloc)(void **ptr, size_t bytes);
  int (*stream_capturing)(void *stream, int *status);
};

// The library of `vendor`, opened and resolved once per process; null when it
// is not installed, lacks a function, or its GPU runtime does not open (the
// reason is kept for unavailable_reason()).
const BlasLtApi *blaslt_api(const Vendor &vendor);
const char *unavailable_reason(const Vendor &vendor);

// The vendor of a device type, or null (kDLCPU).
const Vendor *vendor_for(DLDeviceType type);

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
