// Device memory of the vendor GEMMs: one buffer per device and stream (so that
// calls on several streams at once never share scratch), allocated at the first
// call on that stream, never freed, at most kMaxStreams per device.  Each
// holds the library's workspace (split-K reductions) and room for the
// transposed 1 x 128 block scales.  Nothing can be allocated while a stream is
// captured, so each device keeps one buffer made ahead (at a call outside any
// capture): a stream first met in a capture (a CUDA graph captured on a stream
// of its own, as torch.cuda.graph does) takes it, and the next call outside a
// capture makes another.  Only a stream met in a capture before any vendor GEMM
// ran outside one gets none: its calls then run algorithms that need no
// workspace, and the block-scaled variant with row-major scales is not offered
// there (a capture on a fresh stream used to fall back so, silently slower:
// H100, 2026-11-27).
#pragma once

#include <cstddef>

#include "gpu/vendor_blas/blaslt_api.hpp"

namespace aiter {
namespace gpu {
namespace blas {

constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;  // what PyTorch gives cuBLAS on Hopper
constexpr size_t kScaleBytes = size_t(8) << 20;          // 1 x 128 scales of M x K up to 2M groups
constexpr int kMaxStreams = 16;

struct Workspace {
  void *blas = nullptr;  // kBlasWorkspaceBytes, or null
  float *scales = nullptr;  // kScaleBytes, or null
};

// The buffer of (device slot, stream); the device's context must be current.
Workspace workspace_for(const BlasLtApi &api, int device_slot, void *stream);

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
