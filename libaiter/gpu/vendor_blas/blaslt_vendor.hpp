// The one mapping between cuBLASLt and hipBLASLt: library names, the names of
// the functions (blaslt_functions.def) and the enum values and struct layouts
// the GEMM variants use.  Everything else in vendor_blas/ is shared code that
// reads only this table, so the hipBLASLt path runs the cuBLASLt path's code.
// Values are those of cublasLt.h (cuBLAS 12.9 / 13.x) and hipblaslt.h (ROCm 7).
#pragma once

#include <cstddef>
#include <cstdint>

#include "aiter/aiter.h"

namespace aiter {
namespace gpu {
namespace blas {

// cudaDataType_t / hipDataType; -1 where the vendor has no such type.
struct DataTypes {
  int f32, f16, bf16, e4m3fn, e5m2, e4m3fnuz, e5m2fnuz;
};

// cublasLtMatmulDescAttributes_t / hipblasLtMatmulDescAttributes_t.
struct DescAttributes {
  int transa, transb, epilogue, bias_pointer, bias_data_type;
  int a_scale_pointer, b_scale_pointer, a_scale_mode, b_scale_mode;
};

// cublasLtMatmulMatrixScale_t / hipblasLtMatmulMatrixScale_t.
struct ScaleModes {
  int scalar_32f, outer_vec_32f, vec128_32f, blk128x128_32f;
};

struct Vendor {
  const char *name;                  // "cuBLASLt", for messages
  const char *variant_prefix;        // "cublaslt": the variants' names start with it
  DLDeviceType device_type;          // the tensors it serves
  const char *libraries[4];          // tried in order, a copy already in the process first
  bool hip_names;                    // the second name column of blaslt_functions.def
  // The runtime that allocates the workspace and tells a capturing stream.
  const char *runtime_libraries[4];
  const char *malloc_name;           // (void **ptr, size_t bytes) -> 0 on success
  const char *stream_capturing_name;  // (stream, int *status) -> 0; *status != 0 while capturing
  int compute_32f;                   // cublasComputeType_t / hipblasComputeType_t
  int op_n, op_t;                    // cublasOperation_t / hipblasOperation_t
  int epilogue_default, epilogue_bias;
  int layout_batch_count, layout_batch_offset;  // cublasLtMatrixLayoutAttribute_t
  int pref_max_workspace;                       // cublasLtMatmulPreferenceAttributes_t
  int pref_min_alignment_a;                     // A, B, C, D follow in order; -1: none
  int transform_scale_type, transform_transa;   // cublasLtMatrixTransformDescAttributes_t
  DataTypes types;
  DescAttributes desc;
  ScaleModes scale;
  // cublasLtMatmulHeuristicResult_t: the algo struct first, then size_t
  // workspaceSize and int state; the whole struct's size.
  size_t result_bytes, result_workspace_offset, result_state_offset;
};

inline constexpr Vendor kCublasLt = {
    "cuBLASLt",
    "cublaslt",
    kDLCUDA,
    {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", nullptr},
    false,
    {"libcuda.so.1", nullptr, nullptr, nullptr},
    "cuMemAlloc_v2",
    "cuStreamIsCapturing",
    68,      // CUBLAS_COMPUTE_32F
    0, 1,    // CUBLAS_OP_N, CUBLAS_OP_T
    1, 4,    // CUBLASLT_EPILOGUE_DEFAULT, _BIAS
    5, 6,    // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, _STRIDED_BATCH_OFFSET
    1,       // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
    5,       // CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES (B 6, C 7, D 8)
    0, 2,    // CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE, _TRANSA
    {0, 2, 14, 28, 29, -1, -1},
    {3, 4, 7, 8, 26, 17, 18, 31, 32},
    {0, 3, 4, 5},
    96, 64, 72,  // cublasLtMatmulAlgo_t is uint64_t data[8]
};

inline constexpr Vendor kHipblasLt = {
    "hipBLASLt",
    "hipblaslt",
    kDLROCM,
    {"libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so", nullptr},
    true,
    {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so", nullptr},
    "hipMalloc",
    "hipStreamIsCapturing",
    2,           // HIPBLAS_COMPUTE_32F
    111, 112,    // HIPBLAS_OP_N, HIPBLAS_OP_T
    1, 4,        // HIPBLASLT_EPILOGUE_DEFAULT, _BIAS
    0, 1,        // HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, _STRIDED_BATCH_OFFSET
    1,           // HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
    -1,          // no alignment preferences
    0, 2,        // HIPBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE, _TRANSA
    {0, 2, 14, 28, 29, 1000, 1001},
    {0, 1, 2, 3, 4, 5, 6, 31, 32},
    {0, 3, 4, 5},
    56, 24, 32,  // hipblasLtMatmulAlgo_t is uint8_t data[16] + size_t max_workspace_bytes
};

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
