// GPU launcher of MLA decode: on NVIDIA the tensor-core kernels (on sm_90a with
// 16-bit caches: kernels/mla/mla_wgmma.cu, tiles of 64 rows; else
// kernels/mla/mla_mma.cu: tiles of 16 or 32), on AMD
// the Triton one where built (mla_triton.cpp: MFMA), elsewhere the portable one
// (kernels/mla/mla.cu: one row a block); with several splits, then the merge of
// their partial results.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "gpu/launch.hpp"
#include "gpu/mla_triton.hpp"
#include "kernels/common/quant_kind.h"
#include "kernels/mla/mla_params.h"
#include "kernels/mla/mla_wgmma_params.h"
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
// targets' kernel, tested where AMD hardware is not at hand; =mma keeps the
// sm_90a kernel out, so that the mma.sync one runs (and is tested) at every size.
bool portable_forced() {
  static const bool forced = portable_requested("AITER_MLA_KERNEL");
  return forced;
}
bool mma_forced() {
  static const bool forced = env_is("AITER_MLA_KERNEL", "mma");
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
// multiprocessors (`per_sm` blocks each) to 90% or more, within what the
// workspace holds, counting only splits that hold a tile of the table's
// capacity (a plan from the shapes alone: lengths live on the device).
aiter_status plan_splits(const MlaDecodeArgs &a, int64_t blocks, int64_t capacity, const GpuCall &call, int per_sm,
                         int64_t *splits) {
  *splits = 1;
  if (a.requested_splits > 0) return *splits = a.requested_splits, AITER_OK;
  if (a.max_splits <= 1) return AITER_OK;
  int sms = 0;
  const aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  sms *= per_sm;
  double best = 0.0;
  for (int64_t n = 1; n <= a.max_splits; ++n) {
    const int64_t used = nonempty_splits(capacity, n), total = blocks * used, waves = (total + sms - 1) / sms;
    const double filled = double(total) / double(waves * sms);
    if (filled > best + 1e-9) best = filled, *splits = used;
    if (total >= sms && filled >= 0.9) break;
  }
  return AITER_OK;
}

// The sm_90a kernel: 16-bit caches (any rows a sequence: fewer than 64 are
// padded, see mla_wgmma.cu), pages of a multiple of 16 positions (a TMA box
// never crosses one), q and the cache 16-byte aligned (TMA), rows and cache
// positions TMA coordinates can address.
constexpr int64_t kWgmmaRows = 64;
constexpr int64_t kMaxTmaRowsBytes = int64_t(1) << 40;

bool wgmma_chosen(const MlaDecodeArgs &a, const GpuCall &call, int64_t rows) {
  const int64_t cache_rows = a.num_blocks * a.page_size;
  const bool fits = call.device.device_type == kDLCUDA && !portable_forced() && !mma_forced() &&
                    !is_fp8(a.cache_dtype) && a.page_size % 16 == 0 && aligned(a.q, 16) &&
                    aligned(a.kv_cache, 16) && aligned(a.out, 4) && cache_rows < INT_MAX &&
                    cache_rows * kMlaLatentDim * 2 < kMaxTmaRowsBytes && a.batch * rows < INT_MAX &&
                    a.batch * rows * kMlaLatentDim * 2 < kMaxTmaRowsBytes;
  if (!fits) return false;
  DeviceScope scope(call.device);
  if (scope.status() == AITER_OK &&
      has_kernel(scope.driver(), call.device.device_id, "mla_decode", std::string("wgmma.") + dtype_tag(a.dtype)))
    return true;
  clear_error();  // no sm_90a code object here (another GPU, or a build without it)
  return false;
}

// [sequences][rows][576] 16-bit rows as a 3-D map, boxes of 64 columns by
// `box_rows` rows of one sequence (rows past a sequence's last read as zeros).
aiter_status encode_rows(Driver *driver, const void *data, int64_t sequences, int64_t rows, int box_rows,
                         TensorMap *map) {
  TensorMapSpec spec{};
  spec.base = data;
  spec.element_bytes = 2;
  spec.dims[0] = uint64_t(kMlaLatentDim), spec.dims[1] = uint64_t(rows), spec.dims[2] = uint64_t(sequences);
  spec.byte_strides[0] = uint64_t(kMlaLatentDim * 2), spec.byte_strides[1] = uint64_t(rows * kMlaLatentDim * 2);
  spec.box[0] = 64, spec.box[1] = uint32_t(box_rows), spec.box[2] = 1;
  return driver->encode_tensor_map(spec, map);
}

// The cache as [9 column blocks][rows][64] (the block stride 128 bytes, the row
// stride a latent row's), boxes of 64 rows by `box_blocks` blocks: a copy brings
// box_blocks blocks of a 64-key tile, laid down as box_blocks separate blocks.
aiter_status encode_blocks(Driver *driver, const MlaDecodeArgs &a, int box_blocks, TensorMap *map) {
  TensorMapSpec spec{};
  spec.base = a.kv_cache;
  spec.element_bytes = 2;
  spec.dims[0] = 64, spec.dims[1] = uint64_t(a.num_blocks * a.page_size), spec.dims[2] = kMlaLatentDim / 64;
  spec.byte_strides[0] = uint64_t(kMlaLatentDim * 2), spec.byte_strides[1] = 128;
  spec.box[0] = 64, spec.box[1] = 64, spec.box[2] = uint32_t(box_blocks);
  return driver->encode_tensor_map(spec, map);
}

// One block per 64 rows of a split of a sequence, a sequence's blocks side by
// side; in pairs sharing each key tile by multicast where the tiles pair up.
// Where pages hold whole tiles, blocks that are no pair copy a third of a tile
// at a time, if their splits are 8 tiles or more: 5-11% faster on the
// memory-bound cases, and 4-6% slower at 4 tiles a split (H200, 2026-11-28).
aiter_status launch_wgmma(const MlaDecodeArgs &a, const MlaDecodeParams &p, const GpuCall &call, int64_t tiles) {
  DeviceScope scope(call.device);
  if (scope.status() != AITER_OK) return scope.status();
  MlaWgmmaParams w{};
  w.p = p;
  w.box_rows = a.page_size % 64 == 0 ? 64 : 16;
  w.box_blocks = w.box_rows == 64 && tiles % 2 != 0 && p.split_keys >= 8 * kTileKeys ? 3 : 1;
  aiter_status s = encode_rows(scope.driver(), a.q, a.batch, p.rows, 64, &w.q_map);
  if (s == AITER_OK)
    s = w.box_blocks > 1 ? encode_blocks(scope.driver(), a, w.box_blocks, &w.kv_map)
                         : encode_rows(scope.driver(), a.kv_cache, 1, a.num_blocks * a.page_size, w.box_rows, &w.kv_map);
  if (s != AITER_OK) return s;
  const int64_t blocks = a.batch * p.splits * tiles;
  if (blocks > INT_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_mla_decode: %lld blocks are more than one launch holds",
                (long long)blocks);
  const std::string variant = std::string("wgmma.") + dtype_tag(a.dtype) + (tiles % 2 == 0 ? ".x2" : "");
  return launch(call, "mla_decode", variant, Dim3{unsigned(blocks), 1, 1}, 384, w);
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
  const char *room = p.splits <= 8 ? ".s8" : p.splits <= 32 ? ".s32" : ".s128";  // the splits it holds (mla.cu)
  return launch(call, "mla_decode", std::string("combine.") + dtype_tag(a.dtype) + room,
                Dim3{unsigned(rows), quarters, 1}, kPortableThreads, c);
}

}  // namespace

aiter_status mla_decode(const MlaDecodeArgs &a, const GpuCall &call) {
  if (a.batch == 0 || a.q_heads == 0) return AITER_OK;
  const int64_t rows = a.q_tokens * a.q_heads;
  bool triton = false;
  aiter_status s = mla_triton_chosen(a, call, &triton);
  if (s != AITER_OK) return s;
  const bool wgmma = !triton && wgmma_chosen(a, call, rows);
  const bool mma = !triton && !wgmma && use_mma(a, call);
  const int64_t tile_rows = triton ? kMlaTritonRows : wgmma ? kWgmmaRows : mma ? (rows <= 16 ? 16 : 32) : 1;
  const int64_t tiles = (rows + tile_rows - 1) / tile_rows;
  const int64_t capacity = a.max_blocks * a.page_size;
  if (tiles > kMaxGridY || capacity > INT_MAX || a.batch * rows > INT_MAX || a.batch * kMlaMaxSplits > INT_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "aiter_mla_decode: %lld sequences of %lld rows over %lld positions are more than one launch holds",
                (long long)a.batch, (long long)rows, (long long)capacity);
  int64_t splits = 1;
  const int per_sm = mma && tile_rows == 16 && is_fp8(a.cache_dtype) ? kMlaMmaFp8M16PerSm : 1;
  s = plan_splits(a, a.batch * tiles, capacity, call, per_sm, &splits);
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
  if (wgmma)
    s = launch_wgmma(a, p, call, tiles);
  else if (triton)
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
