// GPU launcher of MLA decode: on NVIDIA the tensor-core kernel
// (kernels/mla/mla_mma.cu: tiles of 16 or 32 rows of a sequence), on AMD the
// Triton one where built (mla_triton.cpp: MFMA), elsewhere the
// portable one (kernels/mla/mla.cu: one row a block); with several splits, then
// the merge of their partial results.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "gpu/launch.hpp"
#include "gpu/mla_triton.hpp"
#include "kernels/common/quant_kind.h"
#include "kernels/mla/mla_params.h"
#include "ops/mla.hpp"

namespace aiter {
namespace gpu {
namespace {

static_assert(kMlaMaxSplits <= 128, "the merge (kernels/mla/mla.cu combine_row) holds 128 split weights");

constexpr unsigned kPortableThreads = 128;
constexpr int64_t kTileKeys = 64;  // the tensor-core kernel's keys a tile: splits start on tile boundaries
constexpr int64_t kMaxGridY = 65535;
constexpr double kLog2e = 1.4426950408889634;

bool aligned(const void *p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// AITER_MLA_KERNEL=portable runs the portable kernel on NVIDIA too: the AMD
// targets' kernel, tested where AMD hardware is not at hand.
bool portable_forced() {
  static const bool forced = portable_requested("AITER_MLA_KERNEL");
  return forced;
}

// The tensor-core kernel copies q and cache rows 16 bytes at a time, stores
// output pairs, and needs up to kMlaMmaMaxSmem bytes of shared memory a block
// (more than sm_80 grants: there the portable kernel runs).
bool use_mma(const MlaDecodeArgs &a, const GpuCall &call) {
  if (call.device.device_type != kDLCUDA || portable_forced()) return false;
  int smem = 0;
  if (cooperative_smem_limit(call, &smem) != AITER_OK || smem < kMlaMmaMaxSmem) return false;
  return aligned(a.q, 16) && aligned(a.kv_cache, 16) && aligned(a.out, 4);
}

// Tiles a split covers when `capacity` positions go in `splits` splits of whole
// tiles, and the splits that then hold any (the rest would see nothing).
int64_t tiles_per_split(int64_t capacity, int64_t splits) {
  const int64_t tiles = (capacity + kTileKeys - 1) / kTileKeys;
  return std::max<int64_t>((tiles + splits - 1) / splits, 1);
}
int64_t nonempty_splits(int64_t capacity, int64_t splits) {
  const int64_t tiles = (capacity + kTileKeys - 1) / kTileKeys, per = tiles_per_split(capacity, splits);
  return std::max<int64_t>((tiles + per - 1) / per, 1);
}

// Splits: the caller's count, else the fewest that fill the device's
// multiprocessors (one block each) to 90% or more, within what the workspace
// holds, counting only splits that hold a tile of the table's capacity (a plan
// from the shapes alone: lengths live on the device).
aiter_status plan_splits(const MlaDecodeArgs &a, int64_t blocks, int64_t capacity, const GpuCall &call,
                         int64_t *splits) {
  *splits = 1;
  if (a.requested_splits > 0) return *splits = a.requested_splits, AITER_OK;
  if (a.max_splits <= 1) return AITER_OK;
  int sms = 0;
  const aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  double best = 0.0;
  for (int64_t n = 1; n <= a.max_splits; ++n) {
    const int64_t used = nonempty_splits(capacity, n), total = blocks * used, waves = (total + sms - 1) / sms;
    const double filled = double(total) / double(waves * sms);
    if (filled > best + 1e-9) best = filled, *splits = used;
    if (total >= sms && filled >= 0.9) break;
  }
  return AITER_OK;
}

aiter_status combine(const MlaDecodeArgs &a, const MlaDecodeParams &p, const GpuCall &call) {
  MlaCombineParams c{};
  c.partial_out = p.partial_out;
  c.partial_lse = p.partial_lse;
  c.out = a.out;
  c.lse = a.lse;
  c.splits = p.splits;
  const int64_t rows = a.batch * p.rows;
  const unsigned quarters = unsigned(kMlaValueDim / kPortableThreads);  // a block per 128 columns of a row
  return launch(call, "mla_decode", std::string("combine.") + dtype_tag(a.dtype), Dim3{unsigned(rows), quarters, 1},
                kPortableThreads, c);
}

}  // namespace

aiter_status mla_decode(const MlaDecodeArgs &a, const GpuCall &call) {
  if (a.batch == 0 || a.q_heads == 0) return AITER_OK;
  const int64_t rows = a.q_tokens * a.q_heads;
  bool triton = false;
  aiter_status s = mla_triton_chosen(a, call, &triton);
  if (s != AITER_OK) return s;
  const bool mma = !triton && use_mma(a, call);
  const int64_t tile_rows = triton ? kMlaTritonRows : mma ? (rows <= 16 ? 16 : 32) : 1;
  const int64_t tiles = (rows + tile_rows - 1) / tile_rows;
  const int64_t capacity = a.max_blocks * a.page_size;
  if (tiles > kMaxGridY || capacity > INT_MAX || a.batch * rows > INT_MAX || a.batch * kMlaMaxSplits > INT_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "aiter_mla_decode: %lld sequences of %lld rows over %lld positions are more than one launch holds",
                (long long)a.batch, (long long)rows, (long long)capacity);
  int64_t splits = 1;
  s = plan_splits(a, a.batch * tiles, capacity, call, &splits);
  if (s != AITER_OK) return s;

  MlaDecodeParams p{};
  p.q = a.q;
  p.out = a.out;
  p.lse = a.lse;
  p.kv_cache = a.kv_cache;
  p.block_table = a.block_table;
  p.context_lens = a.context_lens;
  p.table_stride = a.block_table_stride;
  p.num_blocks = a.num_blocks;
  p.max_blocks = int(a.max_blocks);
  p.page_size = int(a.page_size);
  p.q_tokens = int(a.q_tokens), p.q_heads = int(a.q_heads), p.rows = int(rows);
  p.splits = int(splits);
  p.split_keys = int(std::min<int64_t>(tiles_per_split(capacity, splits) * kTileKeys, INT_MAX));
  p.logit_scale = float(kLog2e * double(a.softmax_scale) * double(a.kv_scale));
  p.value_scale = a.kv_scale;
  p.quant = a.cache_dtype == DType::e4m3fnuz ? kQuantE4m3fnuz : a.cache_dtype == DType::e4m3fn ? kQuantE4m3fn
                                                                                              : kQuantNone;
  if (splits > 1) {
    // The workspace's layout (ops/mla.hpp): the partial rows, in out's type
    // (filling half of the fp32 room the size query counts), then the lse.
    p.partial_out = a.workspace;
    p.partial_lse = static_cast<float *>(a.workspace) + a.batch * rows * splits * kMlaValueDim;
  }
  const std::string types = std::string(dtype_tag(a.dtype)) + (is_fp8(a.cache_dtype) ? ".fp8" : ".same");
  const Dim3 grid{unsigned(a.batch * splits), unsigned(tiles), 1};
  if (triton)
    s = mla_decode_triton(a, p, call);
  else if (mma)
    s = launch(call, "mla_decode", "mma." + types + ".m" + std::to_string(tile_rows), grid, unsigned(tile_rows * 8), p);
  else
    s = launch(call, "mla_decode", "portable." + types, grid, kPortableThreads, p);
  if (s != AITER_OK || splits == 1) return s;
  return combine(a, p, call);
}

aiter_status mla_device_ready(const MlaDecodeArgs &, const GpuCall &call) {
  DeviceScope scope(call.device);
  return scope.status();
}

}  // namespace gpu
}  // namespace aiter
