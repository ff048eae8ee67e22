// One GEMM as cuBLASLt / hipBLASLt sees it, and its cached plan (descriptors,
// layouts and the heuristic's algorithm), made once per shape, layout,
// alignment and workspace, so a call pays no heuristic query.
//
// Row-major to column-major: out[M, N] = A[M, K] . W[N, K]^T is, read
// column-major, out^T[N, M] = W^T . A: the library's A is our W (K x N
// column-major, transposed), its B our A (K x M, not transposed), its D our out
// (N x M, leading dimension our row stride).  So the library's A scale is our
// w_scale and its B scale our a_scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "core/dtype.hpp"
#include "gpu/vendor_blas/blaslt_api.hpp"

namespace aiter {
namespace gpu {
namespace blas {

enum class Scaling { none, scalar, outer_vec, vec128, blk128x128 };

// The library-side GEMM: column-major, as described above.
struct MatmulShape {
  DType in, out, bias;  // bias unknown: none
  Scaling w_scale = Scaling::none, a_scale = Scaling::none;
  int64_t m, n, k;                        // ours: out is M x N
  int64_t lda, ldw, ldo;                  // row strides, elements
  int64_t batch, a_batch, w_batch, o_batch;  // batch strides, elements
  uint32_t align_a, align_w, align_o;     // bytes (power of two, at most 256)
  size_t workspace_bytes;
  // Not part of the plan's key: cuBLASLt 13.1 refuses a heuristic query for
  // vector and block scales ("requires a custom pointer for A scale", H100,
  // 2026-11-27) unless the scale pointers are set; the first call's serve, and
  // every call sets its own before its matmul.
  const void *a_scale_ptr = nullptr, *w_scale_ptr = nullptr;
};

// How many of the heuristic's algorithms a plan keeps: the first is the
// library's own choice, the others are variants of their own (".alg2" ...)
// that the tuner times, as AITER tunes hipBLASLt by solution index.
constexpr int kPlanAlgos = 4;

// The descriptors of one MatmulShape and the algorithms the heuristic offered
// (those that fit the workspace, in the heuristic's order).
struct Plan {
  bool ok = false;
  void *desc = nullptr, *a = nullptr, *b = nullptr, *d = nullptr;
  void *scale_t = nullptr, *scale_src = nullptr, *scale_dst = nullptr;  // vec128: a_scale transposed
  alignas(16) unsigned char algo[kPlanAlgos][128] = {};  // heuristic results; each its algo struct first
  int algo_count = 0;
};

// The plan of `shape` on the current device (made on first use and kept for
// the process); null when the library has no algorithm for it.  `lock` holds
// the cache mutex on return: the caller sets the pointers and enqueues before
// letting go, as the descriptor is shared.
const Plan *plan_for(const Vendor &v, const BlasLtApi &api, int device_slot, const MatmulShape &shape,
                     std::unique_lock<std::mutex> *lock);

// The library handle of a device slot, made on first use (null if creating it
// failed); call it holding the lock plan_for gave.
void *handle_for(const Vendor &v, const BlasLtApi &api, int device_slot);

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
