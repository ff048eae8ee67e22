// aiter_comm_* and the NCCL/RCCL collectives: argument checks, then the library.
#include "dist/comm.hpp"

#include <cinttypes>
#include <new>

#include "core/caller_values.hpp"
#include "core/error.hpp"
#include "gpu/launch.hpp"

namespace aiter {
namespace dist {

void check_on_comm(ArgCheck &c, const aiter_comm *comm, const DLTensor *t, const char *name) {
  c.require(comm != nullptr, AITER_ERR_INVALID_ARGUMENT, "comm: expected a communicator, got NULL");
  c.tensor(t, name);
  if (!c.ok()) return;
  c.contiguous(t, name);
  const int32_t type = device_type_code(t->device);
  c.require(type == device_type_code(comm->device) && t->device.device_id == comm->device.device_id,
            AITER_ERR_INVALID_ARGUMENT, "%s: expected a tensor on the communicator's device (type %d id %d), got type %d id %d",
            name, int(device_type_code(comm->device)), int(comm->device.device_id), int(type),
            int(t->device.device_id));
}

namespace {

int nccl_type(DType t) {
  return t == DType::f32 ? kNcclFloat32 : t == DType::f16 ? kNcclFloat16 : kNcclBfloat16;
}

// Checks shared by the three collectives: both tensors on the communicator's
// device, contiguous, of one dtype (a float one for the reductions).
void check_pair(ArgCheck &c, aiter_comm *comm, const DLTensor *out, const DLTensor *x, bool reduction) {
  check_on_comm(c, comm, x, "x");
  check_on_comm(c, comm, out, "out");
  if (!c.ok()) return;
  if (reduction) c.dtype(x, "x", {DType::f32, DType::f16, DType::bf16});
  c.same_dtype(out, "out", x, "x");
}

// out.shape[0] == factor * x.shape[0] (all-gather) or the other way round
// (reduce-scatter), the other dims equal.
void check_dim0_scaled(ArgCheck &c, const DLTensor *big, const char *big_name, const DLTensor *small,
                       const char *small_name, int64_t factor) {
  if (!c.ok()) return;
  c.min_ndim(small, small_name, 1).ndim(big, big_name, small->ndim);
  if (!c.ok()) return;
  int64_t expected = 0;  // an empty tensor's dim 0 may be huge: the product is checked
  c.require(!__builtin_mul_overflow(small->shape[0], factor, &expected), AITER_ERR_INVALID_ARGUMENT,
            "%s: dim 0 (%" PRId64 ") times world_size %" PRId64 " overflows", small_name, small->shape[0], factor);
  c.dim(big, big_name, 0, expected, "world_size times dim 0 of the other tensor");
  for (int d = 1; c.ok() && d < small->ndim; ++d) c.dim(big, big_name, d, small->shape[d], "the other tensor's");
}

}  // namespace

aiter_status nccl_all_reduce(aiter_comm *comm, void *out, const void *x, size_t count, DType dtype, void *stream) {
  if (count == 0) return AITER_OK;
  gpu::DeviceScope scope(comm->device);
  if (scope.status() != AITER_OK) return scope.status();
  return nccl_check(*comm->api, comm->api->AllReduce(x, out, count, nccl_type(dtype), kNcclSum, comm->nccl, stream),
                    "ncclAllReduce", comm->nccl);
}

aiter_status nccl_all_gather_bytes(aiter_comm *comm, void *out, const void *x, size_t bytes, void *stream) {
  if (bytes == 0) return AITER_OK;
  gpu::DeviceScope scope(comm->device);
  if (scope.status() != AITER_OK) return scope.status();
  return nccl_check(*comm->api, comm->api->AllGather(x, out, bytes, kNcclUint8, comm->nccl, stream), "ncclAllGather",
                    comm->nccl);
}

}  // namespace dist
}  // namespace aiter

using namespace aiter;
using namespace aiter::dist;

extern "C" AITER_API aiter_status aiter_comm_unique_id(aiter_comm_id *id, int32_t device_type) {
  return guard("aiter_comm_unique_id", [&] {
    if (id == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "id: expected a pointer, got NULL");
    const NcclApi *api = nullptr;
    aiter_status s = nccl_api(device_type, &api);
    if (s != AITER_OK) return s;
    NcclId nid;
    s = nccl_check(*api, api->GetUniqueId(&nid), "ncclGetUniqueId", nullptr);
    if (s == AITER_OK) static_assert(sizeof nid == sizeof id->bytes, "ncclUniqueId is 128 bytes");
    if (s == AITER_OK) std::memcpy(id->bytes, nid.internal, sizeof nid);
    return s;
  });
}

extern "C" AITER_API aiter_status aiter_comm_create(aiter_comm **comm, const aiter_comm_id *id, int32_t rank,
                                                    int32_t world_size, DLDevice device) {
  return guard("aiter_comm_create", [&]() -> aiter_status {
    if (comm == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "comm: expected a pointer to store into, got NULL");
    *comm = nullptr;
    if (id == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "id: expected a pointer, got NULL");
    if (world_size < 1 || world_size > 1024)
      return fail(AITER_ERR_INVALID_ARGUMENT, "world_size: expected 1..1024, got %d", int(world_size));
    if (rank < 0 || rank >= world_size)
      return fail(AITER_ERR_INVALID_ARGUMENT, "rank: expected 0..%d (world_size - 1), got %d", int(world_size - 1),
                  int(rank));
    const int32_t type = device_type_code(device);
    if (type != kDLCUDA && type != kDLROCM)
      return fail(AITER_ERR_INVALID_ARGUMENT, "device: expected a GPU (cuda %d or rocm %d), got device type %d",
                  int(kDLCUDA), int(kDLROCM), int(type));
    gpu::DeviceScope scope(device);  // "no device" before "no NCCL": the device is the first need
    if (scope.status() != AITER_OK) return scope.status();
    const NcclApi *api = nullptr;
    aiter_status s = nccl_api(type, &api);
    if (s != AITER_OK) return s;
    NcclId nid;
    std::memcpy(nid.internal, id->bytes, sizeof nid);
    NcclComm nccl = nullptr;
    s = nccl_check(*api, api->CommInitRank(&nccl, world_size, nid, rank), "ncclCommInitRank", nullptr);
    if (s != AITER_OK) return s;
    *comm = new aiter_comm{api, nccl, rank, world_size, device};
    return AITER_OK;
  });
}

extern "C" AITER_API aiter_status aiter_comm_destroy(aiter_comm *comm) {
  return guard("aiter_comm_destroy", [&] {
    if (comm == nullptr) return AITER_OK;
    aiter_status s = AITER_OK;
    {
      gpu::DeviceScope scope(comm->device);
      s = nccl_check(*comm->api, comm->api->CommDestroy(comm->nccl), "ncclCommDestroy", nullptr);
    }
    delete comm;
    return s;
  });
}

extern "C" AITER_API aiter_status aiter_comm_get_info(const aiter_comm *comm, int32_t *rank, int32_t *world_size,
                                                      DLDevice *device) {
  return guard("aiter_comm_get_info", [&] {
    if (comm == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "comm: expected a communicator, got NULL");
    if (rank) *rank = comm->rank;
    if (world_size) *world_size = comm->world;
    if (device) *device = comm->device;
    return AITER_OK;
  });
}

extern "C" AITER_API aiter_status aiter_all_reduce(DLTensor *out, const DLTensor *x, aiter_comm *comm, void *stream) {
  return guard("aiter_all_reduce", [&] {
    ArgCheck c("aiter_all_reduce");
    check_pair(c, comm, out, x, true);
    c.same_shape(out, "out", x, "x");
    if (!c.ok()) return c.status();
    return nccl_all_reduce(comm, data_ptr<void>(out), data_ptr<const void>(x), size_t(numel(x)),
                           dtype_of(x->dtype), stream);
  });
}

extern "C" AITER_API aiter_status aiter_all_gather(DLTensor *out, const DLTensor *x, aiter_comm *comm, void *stream) {
  return guard("aiter_all_gather", [&] {
    ArgCheck c("aiter_all_gather");
    check_pair(c, comm, out, x, false);
    if (c.ok()) check_dim0_scaled(c, out, "out", x, "x", comm->world);
    if (!c.ok()) return c.status();
    const size_t bytes = size_t(numel(x)) * dtype_size(dtype_of(x->dtype));
    return nccl_all_gather_bytes(comm, data_ptr<void>(out), data_ptr<const void>(x), bytes, stream);
  });
}

extern "C" AITER_API aiter_status aiter_reduce_scatter(DLTensor *out, const DLTensor *x, aiter_comm *comm,
                                                       void *stream) {
  return guard("aiter_reduce_scatter", [&]() -> aiter_status {
    ArgCheck c("aiter_reduce_scatter");
    check_pair(c, comm, out, x, true);
    if (c.ok()) check_dim0_scaled(c, x, "x", out, "out", comm->world);
    if (!c.ok()) return c.status();
    const size_t count = size_t(numel(out));
    if (count == 0) return AITER_OK;
    gpu::DeviceScope scope(comm->device);
    if (scope.status() != AITER_OK) return scope.status();
    return nccl_check(*comm->api,
                      comm->api->ReduceScatter(data_ptr<const void>(x), data_ptr<void>(out), count,
                                               nccl_type(dtype_of(x->dtype)), kNcclSum, comm->nccl, stream),
                      "ncclReduceScatter", comm->nccl);
  });
}
