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

bool capturing(const BlasLtApi &api, void *stream) {
  int status = 0;
  // Asking fails only for an invalid stream; treat that as capturing (allocate nothing).
  return api.stream_capturing(stream, &status) != 0 || status != 0;
}

}  // namespace

Workspace workspace_for(const BlasLtApi &api, int slot, void *stream) {
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(slot, stream);
  auto it = buffers.find(key);
  if (it != buffers.end()) return it->second;
  if (slot < 0 || per_device[slot] >= kMaxStreams || capturing(api, stream)) return Workspace{};
  void *base = nullptr;
  if (api.device_malloc(&base, kBlasWorkspaceBytes + kScaleBytes) != 0 || base == nullptr) return Workspace{};
  ++per_device[slot];
  Workspace w{base, reinterpret_cast<float *>(static_cast<char *>(base) + kBlasWorkspaceBytes)};
  buffers.emplace(key, w);
  return w;
}

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
