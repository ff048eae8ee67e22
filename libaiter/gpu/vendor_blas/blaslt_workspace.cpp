// Per-(device, stream) scratch of the vendor GEMMs (see blaslt_workspace.hpp).
#include "gpu/vendor_blas/blaslt_workspace.hpp"

#include <map>
#include <mutex>
#include <utility>

namespace aiter {
namespace gpu {
namespace blas {
namespace {

std::mutex mutex;
std::map<std::pair<int, void *>, Workspace> buffers;
std::map<int, int> per_device;  // buffers allocated per device slot
std::map<int, Workspace> spares;  // per device slot: one buffer made ahead (or none) for a stream first met in a capture

bool capturing(const BlasLtApi &api, void *stream) {
  int status = 0;
  // Asking fails only for an invalid stream; treat that as capturing (allocate nothing).
  return api.stream_capturing(stream, &status) != 0 || status != 0;
}

// A new buffer for device `slot`, or none (the limit reached, or no memory).
Workspace allocate(const BlasLtApi &api, int slot) {
  void *base = nullptr;
  if (per_device[slot] >= kMaxStreams || api.device_malloc(&base, kBlasWorkspaceBytes + kScaleBytes) != 0 ||
      base == nullptr)
    return Workspace{};
  ++per_device[slot];
  return Workspace{base, reinterpret_cast<float *>(static_cast<char *>(base) + kBlasWorkspaceBytes)};
}

}  // namespace

Workspace workspace_for(const BlasLtApi &api, int slot, void *stream) {
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(slot, stream);
  auto it = buffers.find(key);
  const bool no_spare = spares.find(slot) == spares.end();
  if (it != buffers.end() && !no_spare) return it->second;
  if (slot < 0) return Workspace{};
  const bool captured = capturing(api, stream);
  if (no_spare && !captured) spares.emplace(slot, allocate(api, slot));  // (again after a capture took it; a
                                                                         // failure is kept: none, never retried)
  if (it != buffers.end()) return it->second;
  Workspace w{};
  if (captured) {  // no allocation inside a capture: the spare, if any
    auto spare = spares.find(slot);
    if (spare == spares.end() || spare->second.blas == nullptr) return Workspace{};
    w = spare->second;
    spares.erase(spare);
  } else {
    w = allocate(api, slot);
    if (w.blas == nullptr) return Workspace{};
  }
  buffers.emplace(key, w);
  return w;
}

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
