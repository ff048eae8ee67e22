// NCCL (libnccl.so.2) or RCCL (librccl.so.1) through dlopen: the handful of
// functions the communicator calls, with NCCL's signatures (opaque handles as
// void *).  RCCL keeps NCCL's names and numbers.  Never linked: where PyTorch is
// installed its NCCL is in the process already and is the one used.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aiter/aiter.h"

namespace aiter {
namespace dist {

using NcclResult = int;
using NcclComm = void *;
struct NcclId {
  char internal[128];
};

// ncclDataType_t and ncclRedOp_t values (the same in every NCCL 2 and RCCL).
enum NcclType { kNcclUint8 = 1, kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclBfloat16 = 9 };
constexpr int kNcclSum = 0;

struct NcclApi {
  const char *library;  // the file that was opened
  bool rccl;
  NcclResult (*GetUniqueId)(NcclId *);
  NcclResult (*CommInitRank)(NcclComm *, int, NcclId, int);
  NcclResult (*CommDestroy)(NcclComm);
  NcclResult (*AllReduce)(const void *, void *, size_t, int, int, NcclComm, void *);
  NcclResult (*AllGather)(const void *, void *, size_t, int, NcclComm, void *);
  NcclResult (*ReduceScatter)(const void *, void *, size_t, int, int, NcclComm, void *);
  const char *(*GetErrorString)(NcclResult);
  const char *(*GetLastError)(NcclComm);  // NCCL 2.13 and later; may be null
};

// The collective library for GPUs of `device_type` (kDLCUDA: NCCL, kDLROCM: RCCL),
// opened once per process.  AITER_ERR_NO_DEVICE "no NCCL: ..." when it cannot be.
aiter_status nccl_api(int32_t device_type, const NcclApi **api);

// AITER_OK, or AITER_ERR_DEVICE naming `call` with the library's messages.
aiter_status nccl_check(const NcclApi &api, NcclResult result, const char *call, NcclComm comm);

}  // namespace dist
}  // namespace aiter
