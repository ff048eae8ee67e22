// GPU launcher of prefill over a paged cache (aiter_paged_prefill_attention).
// On NVIDIA, 16-bit q with a cache of q's dtype or fp8 and head dim 64 or 128:
// the tensor-core kernel (kernels/attention/paged_prefill_mma.cu: tiles of 64
// new tokens of one query head; fp8 widened to q's type in shared memory); on
// AMD, the Triton one where built (attention_paged_prefill_triton.cpp: MFMA /
// WMMA; AITER_PAGED_PREFILL_KERNEL=triton forces it on NVIDIA); otherwise (fp32
// q) the portable one (paged_prefill.cu: tiles of 16 rows (token, query head)
// of one kv head).
// Neither reads cu_seqlens_q, the block table or the lengths on the host: the
// grid is sized from the shapes (paged_rows.h), so a call can be captured into a
// CUDA/HIP graph and replayed with new contents.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "gpu/attention_common.hpp"
#include "gpu/attention_paged_prefill_triton.hpp"
#include "gpu/launch.hpp"
#include "kernels/attention/paged_prefill_params.h"

namespace aiter {
namespace gpu {
namespace {

constexpr unsigned kThreads = 128;     // both kernels' block
constexpr int64_t kPortableRows = 16;  // rows (token, query head) a tile of the portable kernel
constexpr int64_t kMmaRows = 64;       // tokens a tile of the tensor-core kernel
constexpr int64_t kMaxGridY = 65535;

// AITER_PAGED_PREFILL_KERNEL=portable runs the portable kernel (the AMD targets')
// on NVIDIA too.  Read at every call, not once, so that a test can switch it.
bool portable_forced() { return portable_requested("AITER_PAGED_PREFILL_KERNEL"); }

// The tensor-core kernel: NVIDIA, 16-bit q and a cache of q's dtype or fp8, rows of q
// on 16-byte boundaries and of out on 4-byte ones (cp.async copies, paired
// stores), caches on 16-byte boundaries (compact rows of 128 bytes or more).
bool use_mma(const DecodeArgs &a, const GpuCall &call) {
  const AttentionShape &sh = a.shape;
  if (call.device.device_type != kDLCUDA || portable_forced()) return false;
  if ((a.dtype != DType::bf16 && a.dtype != DType::f16) || (a.cache.dtype != a.dtype && !is_fp8(a.cache.dtype)))
    return false;
  if (sh.q_heads > kMaxGridY || !aligned16(a.cache.k) || !aligned16(a.cache.v)) return false;
  const bool out_pairs = reinterpret_cast<uintptr_t>(a.out) % 4 == 0 &&
                         (a.total_q <= 1 || a.out_strides.token % 2 == 0) &&
                         (sh.q_heads <= 1 || a.out_strides.head % 2 == 0);
  return out_pairs && rows_aligned16(a.q, a.q_strides, a.total_q, sh.q_heads, 8);
}

std::string kernel_variant(const DecodeArgs &a, bool mma) {
  const std::string dt = dtype_tag(a.dtype), d = ".d" + std::to_string(a.shape.head_dim);
  if (mma) return "mma." + dt + (is_fp8(a.cache.dtype) ? std::string(".") + dtype_tag(a.cache.dtype) : "") + d;
  return dt + (is_fp8(a.cache.dtype) ? ".fp8" : ".same") + d;
}

PagedPrefillParams params_of(const DecodeArgs &a) {
  const AttentionShape &sh = a.shape;
  PagedPrefillParams p{};
  p.sm = softmax_params(sh, a.cache.k_scale, a.cache.v_scale, a.cache.dtype);
  p.q = a.q, p.out = a.out, p.lse = a.lse;
  p.k_cache = a.cache.k, p.v_cache = a.cache.v;
  p.block_table = a.block_table, p.context_lens = a.context_lens, p.cu_seqlens_q = a.cu_seqlens_q;
  p.q_token_stride = a.q_strides.token, p.q_head_stride = a.q_strides.head;
  p.out_token_stride = a.out_strides.token, p.out_head_stride = a.out_strides.head;
  p.table_stride = a.block_table_stride;
  p.num_blocks = a.cache.num_blocks;
  // Lengths are int32: a larger capacity than INT_MAX positions is never reached.
  p.max_blocks = int(std::min<int64_t>(a.max_blocks, INT_MAX / a.cache.page_size));
  p.page_size = int(a.cache.page_size);
  p.batch = int(a.batch), p.total_q = int(a.total_q);
  p.q_heads = int(sh.q_heads), p.kv_heads = int(sh.kv_heads);
  p.causal = a.causal;
  p.vec = aligned16(a.cache.k) && aligned16(a.cache.v);
  return p;
}

}  // namespace

aiter_status paged_prefill_attention(const DecodeArgs &a, const GpuCall &call) {
  const AttentionShape &sh = a.shape;
  if (a.total_q == 0 || sh.q_heads == 0) return AITER_OK;
  // cu_seqlens_q is not read on the host; this is what its shape shows.
  if (a.batch < 1)
    return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_paged_prefill_attention: cu_seqlens_q: expected B + 1 >= 2 "
                "entries for %lld query tokens, got 1", (long long)a.total_q);
  if (a.cache.page_size > INT_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_paged_prefill_attention: k_cache: a page of %lld positions "
                "is more than a kernel addresses", (long long)a.cache.page_size);
  bool taken = false;
  const aiter_status st = portable_forced() ? AITER_OK : paged_prefill_triton(a, call, &taken);
  if (taken) return st;
  const bool mma = use_mma(a, call);
  const int64_t group = sh.q_heads / sh.kv_heads;
  // Tiles (paged_rows.h): the packed rows cut into tiles, plus one partial tile a sequence.
  const int64_t per_token = mma ? 1 : group, tile_rows = mma ? kMmaRows : kPortableRows;
  const int64_t grid_y = mma ? sh.q_heads : sh.kv_heads;
  if (a.total_q > INT_MAX / group || a.batch > INT_MAX - 1 || grid_y > kMaxGridY ||
      a.total_q * per_token / tile_rows + a.batch > INT_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_paged_prefill_attention: %lld query tokens x %lld heads in "
                "%lld sequences are more than one launch holds", (long long)a.total_q, (long long)sh.q_heads,
                (long long)a.batch);
  const int64_t tiles = a.total_q * per_token / tile_rows + a.batch;
  return launch(call, "paged_prefill_attention", kernel_variant(a, mma), Dim3{unsigned(tiles), unsigned(grid_y), 1},
                kThreads, params_of(a));
}

}  // namespace gpu
}  // namespace aiter
