// aiter_custom_ar_*: this rank's shared buffer (allocated, zeroed signals, IPC
// handle), the peers' buffers opened from their handles, exchanged through the
// communicator's NCCL all-gather or by the caller.
#include "dist/custom_ar.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/caller_values.hpp"
#include "core/error.hpp"
#include "dist/comm.hpp"
#include "gpu/launch.hpp"

namespace aiter {
namespace dist {
namespace {

constexpr size_t kDefaultMaxBytes = size_t(8) << 20;
// The push kernels' largest message: their areas take 2 x world x this of every
// buffer (32 MiB for 8 ranks); past it the pull kernels, which need no more.
constexpr size_t kPushMaxBytes = size_t(2) << 20;
constexpr size_t kHandleBytes = AITER_IPC_HANDLE_BYTES;
static_assert(kHandleBytes == gpu::Driver::kIpcHandleBytes, "one IPC handle size");

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

// The buffer: signals, then the input area and the reduced area, each with room
// for the last, partly filled 16-byte vector, then the push areas (2 stages x
// world slots), empty.
aiter_status allocate(aiter_custom_ar *ar, gpu::Driver *driver) {
  ar->area_bytes = round_up(ar->max_bytes + 16, 256);
  ar->push_max_bytes = std::min(ar->max_bytes, kPushMaxBytes);
  ar->push_slot_bytes = round_up(ar->push_max_bytes + 16, 256);
  const size_t push_bytes = 2 * size_t(ar->world) * ar->push_slot_bytes;
  void *own = nullptr;
  aiter_status s = driver->mem_alloc(push_area_offset(*ar) + push_bytes, &own);
  if (s != AITER_OK) return s;
  ar->bufs[ar->rank] = static_cast<char *>(own);
  s = driver->mem_alloc(ar->max_bytes, &ar->scratch);
  // Zeroed signals: every block's flags and epochs, and the push call count, start at 0 on every rank.
  if (s == AITER_OK) s = driver->memset_u32_async(own, 0, size_t(kArDataOffset) / 4, nullptr);
  if (s == AITER_OK)
    s = driver->memset_u32_async(static_cast<char *>(own) + push_area_offset(*ar), kArPushEmpty, push_bytes / 4,
                                 nullptr);
  if (s == AITER_OK) s = driver->synchronize(nullptr);
  return s;
}

void release(aiter_custom_ar *ar, gpu::Driver *driver) {
  for (int r = 0; r < ar->world; ++r)
    if (ar->bufs[r] != nullptr && r != ar->rank) driver->ipc_close(ar->bufs[r]);
  if (ar->bufs[ar->rank] != nullptr) driver->mem_free(ar->bufs[ar->rank]);
  if (ar->scratch != nullptr) driver->mem_free(ar->scratch);
}

aiter_status open_peers(aiter_custom_ar *ar, gpu::Driver *driver, const unsigned char *handles) {
  if (ar->peers_open) return fail(AITER_ERR_INVALID_ARGUMENT, "ar: the peers' buffers are open already");
  for (int r = 0; r < ar->world; ++r) {
    if (r == ar->rank) continue;
    void *peer = nullptr;
    const aiter_status s = driver->ipc_open(handles + r * kHandleBytes, &peer);
    if (s != AITER_OK) return s;
    ar->bufs[r] = static_cast<char *>(peer);
  }
  ar->peers_open = true;
  return AITER_OK;
}

// Every rank's handle through NCCL's all-gather (device memory: the scratch
// buffer), on the default stream, waited for.
aiter_status exchange(aiter_custom_ar *ar, gpu::Driver *driver) {
  unsigned char handles[kArMaxRanks * kHandleBytes] = {};
  aiter_status s = driver->ipc_get_handle(ar->bufs[ar->rank], handles + ar->rank * kHandleBytes);
  char *staging = static_cast<char *>(ar->scratch);
  if (s == AITER_OK)
    s = driver->copy(staging + ar->rank * kHandleBytes, handles + ar->rank * kHandleBytes, kHandleBytes);
  if (s == AITER_OK)
    s = nccl_all_gather_bytes(ar->comm, staging, staging + ar->rank * kHandleBytes, kHandleBytes, nullptr);
  if (s == AITER_OK) s = driver->synchronize(nullptr);
  if (s == AITER_OK) s = driver->copy(handles, staging, ar->world * kHandleBytes);
  return s == AITER_OK ? open_peers(ar, driver, handles) : s;
}

aiter_status create(aiter_custom_ar **out, aiter_comm *comm, int32_t rank, int32_t world, DLDevice device,
                    size_t max_bytes) {
  if (out == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "ar: expected a pointer to store into, got NULL");
  *out = nullptr;
  if (comm != nullptr) rank = comm->rank, world = comm->world, device = comm->device;
  if (world < 1 || world > kArMaxRanks)
    return fail(AITER_ERR_INVALID_ARGUMENT, "world_size: expected 1..%d, got %d", kArMaxRanks, int(world));
  if (rank < 0 || rank >= world)
    return fail(AITER_ERR_INVALID_ARGUMENT, "rank: expected 0..%d, got %d", int(world - 1), int(rank));
  const int32_t type = device_type_code(device);
  if (type != kDLCUDA && type != kDLROCM)
    return fail(AITER_ERR_INVALID_ARGUMENT, "device: expected a GPU (cuda %d or rocm %d), got device type %d",
                int(kDLCUDA), int(kDLROCM), int(type));
  if (max_bytes == 0) max_bytes = kDefaultMaxBytes;
  if (max_bytes < kArMaxRanks * kHandleBytes || max_bytes > (size_t(1) << 34))
    return fail(AITER_ERR_INVALID_ARGUMENT, "max_bytes: expected 0 (8 MiB) or %zu..16 GiB, got %zu",
                size_t(kArMaxRanks * kHandleBytes), max_bytes);
  max_bytes = round_up(max_bytes, 16);
  gpu::DeviceScope scope(device);
  if (scope.status() != AITER_OK) return scope.status();
  auto ar = std::make_unique<aiter_custom_ar>();
  *ar = aiter_custom_ar{comm, device, rank, world, max_bytes, 0, 0, 0, {}, world == 1, nullptr};
  aiter_status s = allocate(ar.get(), scope.driver());
  if (s == AITER_OK && comm != nullptr && world > 1) s = exchange(ar.get(), scope.driver());
  if (s != AITER_OK) {
    const std::string why = aiter_last_error();
    release(ar.get(), scope.driver());
    return fail(s, "%s", why.c_str());
  }
  *out = ar.release();
  return AITER_OK;
}

}  // namespace
}  // namespace dist
}  // namespace aiter

using namespace aiter;

extern "C" AITER_API aiter_status aiter_custom_ar_create(aiter_custom_ar **ar, aiter_comm *comm, int32_t rank,
                                                         int32_t world_size, DLDevice device, size_t max_bytes) {
  return guard("aiter_custom_ar_create",
               [&] { return dist::create(ar, comm, rank, world_size, device, max_bytes); });
}

extern "C" AITER_API aiter_status aiter_custom_ar_handle(const aiter_custom_ar *ar, void *handle) {
  return guard("aiter_custom_ar_handle", [&] {
    if (ar == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "ar: expected a custom all-reduce, got NULL");
    if (handle == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "handle: expected %d bytes, got NULL",
                                       AITER_IPC_HANDLE_BYTES);
    gpu::DeviceScope scope(ar->device);
    if (scope.status() != AITER_OK) return scope.status();
    return scope.driver()->ipc_get_handle(ar->bufs[ar->rank], handle);
  });
}

extern "C" AITER_API aiter_status aiter_custom_ar_open_peers(aiter_custom_ar *ar, const void *handles) {
  return guard("aiter_custom_ar_open_peers", [&] {
    if (ar == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "ar: expected a custom all-reduce, got NULL");
    if (handles == nullptr)
      return fail(AITER_ERR_INVALID_ARGUMENT, "handles: expected %d handles of %d bytes, got NULL", ar->world,
                  AITER_IPC_HANDLE_BYTES);
    gpu::DeviceScope scope(ar->device);
    if (scope.status() != AITER_OK) return scope.status();
    return dist::open_peers(ar, scope.driver(), static_cast<const unsigned char *>(handles));
  });
}

extern "C" AITER_API aiter_status aiter_custom_ar_destroy(aiter_custom_ar *ar) {
  return guard("aiter_custom_ar_destroy", [&] {
    if (ar == nullptr) return AITER_OK;
    {
      gpu::DeviceScope scope(ar->device);
      if (scope.status() == AITER_OK) dist::release(ar, scope.driver());
    }
    delete ar;
    return AITER_OK;
  });
}

extern "C" AITER_API aiter_status aiter_custom_ar_max_bytes(const aiter_custom_ar *ar, size_t *max_bytes) {
  return guard("aiter_custom_ar_max_bytes", [&] {
    if (ar == nullptr || max_bytes == nullptr)
      return fail(AITER_ERR_INVALID_ARGUMENT, "%s: expected a pointer, got NULL", ar ? "max_bytes" : "ar");
    *max_bytes = ar->max_bytes;
    return AITER_OK;
  });
}
