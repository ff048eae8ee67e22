// Vendor libraries the CPU backend dlopens when present (never links): where
// each was found, for aiter_library_info.
#pragma once

namespace aiter {
namespace cpu {

// The file OpenBLAS's cblas_sgemm came from, or "" (cpu/gemm_openblas.cpp).
// Calling it opens the library, once per process.
const char *openblas_location();
// The file oneDNN 2.x's libdnnl.so.2 came from, or "" (cpu/gemm_onednn.cpp).
const char *onednn_location();

}  // namespace cpu
}  // namespace aiter
