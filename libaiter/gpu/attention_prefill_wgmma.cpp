// Launcher of the Hopper prefill kernel (kernels/attention/prefill_wgmma.cu,
// sm_90a only): bf16 or fp16, head dims 64, 128 or 256 (q, k and v alike) or
// 192 for q and k with 128 for v, softmax scale > 0 (the kernel takes row
// maxima over raw scores).  q, k and v are copied by TMA, so 16-byte aligned
// with strides of whole 16 bytes; out is stored by TMA where it is so too, else
// written in 4-byte pairs.  A call it
// does not fit is left to the next kernel (*taken false, nothing launched).
#include <climits>
#include <cstdint>
#include <string>

#include "gpu/attention_common.hpp"
#include "gpu/launch.hpp"
#include "kernels/attention/prefill_wgmma_params.h"

namespace aiter {
namespace gpu {
namespace {

// Consumer warpgroups a block (prefill_wgmma_params.h), beside the TMA warpgroup.
int64_t consumers(const AttentionShape &sh, bool softcap) { return prefill_wgmma_consumers(int(sh.head_dim), softcap); }
int64_t block_rows(const AttentionShape &sh, bool softcap) { return 64 * consumers(sh, softcap); }
constexpr int64_t kMinBlockRows = 128;  // the grid's rows of blocks are at most total_q / this
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxStrideBytes = int64_t(1) << 40;

// A stride TMA accepts: whole 16 bytes (8 elements), under 2^40 bytes.
bool tma_stride(int64_t elements) { return elements % 8 == 0 && elements >= 0 && elements * 2 < kMaxStrideBytes; }

// Strides of a [tokens, heads, D] tensor, a dim of one element excepted (its stride is never used).
bool strides_fit(const TokenHeadStrides &s, int64_t tokens, int64_t heads) {
  return (tokens <= 1 || tma_stride(s.token)) && (heads <= 1 || tma_stride(s.head));
}

// The variants' head dims (q/k, v).
bool has_variant(const AttentionShape &sh) {
  const int64_t d = sh.head_dim, dv = sh.v_head_dim;
  return (d == dv && (d == 64 || d == 128 || d == 256)) || (d == 192 && dv == 128);
}

bool fits(const PrefillArgs &a, const PrefillParams &p) {
  const AttentionShape &sh = a.shape;
  const bool out_pairs = reinterpret_cast<uintptr_t>(a.out) % 4 == 0 &&
                         (a.total_q <= 1 || a.out_strides.token % 2 == 0) &&
                         (sh.q_heads <= 1 || a.out_strides.head % 2 == 0);
  return (a.dtype == DType::bf16 || a.dtype == DType::f16) && has_variant(sh) && p.sm.scale > 0.0f && a.total_k > 0 &&
         a.total_q < INT_MAX && a.total_k < INT_MAX - 256 && sh.q_heads < INT_MAX &&
         (a.total_q + kMinBlockRows - 1) / kMinBlockRows <= kMaxGridY && aligned16(a.q) && aligned16(a.k) && aligned16(a.v) &&
         out_pairs && strides_fit(a.q_strides, a.total_q, sh.q_heads) &&
         strides_fit(a.k_strides, a.total_k, sh.kv_heads) && strides_fit(a.v_strides, a.total_k, sh.kv_heads);
}

// Whether a block takes two row tiles (the `.pairs` kernels, D128 only): where
// the sequences' mean key count is at most 1024, the second tile's first
// copies overlapping the first's end paid (H200, 2026-11-28: S 128-512 10-17%
// faster, S 1024 2-6%; S 2048 and above 4-12% slower, so not there).
bool pairs(const PrefillArgs &a, const AttentionShape &sh) {
  return sh.head_dim == 128 && sh.v_head_dim == 128 && a.total_k <= 1024 * a.batch;
}

// [heads][tokens][D] in boxes of 64 elements by `rows` rows; a dim of one element
// gets the compact stride (any multiple of 16 bytes would do: it is never stepped).
aiter_status encode(Driver *driver, const void *data, int64_t tokens, int64_t heads, const TokenHeadStrides &s,
                    int64_t d, int64_t rows, TensorMap *map) {
  const int64_t token_bytes = tokens <= 1 ? d * 2 : s.token * 2;
  const int64_t head_bytes = heads <= 1 ? token_bytes * tokens : s.head * 2;
  if (head_bytes >= kMaxStrideBytes)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_prefill_attention: %lld tokens are more than a TMA copy spans",
                (long long)tokens);
  TensorMapSpec spec{};
  spec.base = data;
  spec.element_bytes = 2;
  spec.dims[0] = uint64_t(d), spec.dims[1] = uint64_t(tokens), spec.dims[2] = uint64_t(heads);
  spec.byte_strides[0] = uint64_t(token_bytes), spec.byte_strides[1] = uint64_t(head_bytes);
  spec.box[0] = 64, spec.box[1] = uint32_t(rows), spec.box[2] = 1;
  return driver->encode_tensor_map(spec, map);
}

}  // namespace

aiter_status prefill_attention_wgmma(const PrefillArgs &a, const PrefillParams &p, const GpuCall &call,
                                     bool *taken) {
  *taken = false;
  if (call.device.device_type != kDLCUDA || !fits(a, p)) return AITER_OK;
  const AttentionShape &sh = a.shape;
  std::string dims = "d" + std::to_string(sh.head_dim);
  if (sh.v_head_dim != sh.head_dim) dims += "v" + std::to_string(sh.v_head_dim);
  const bool softcap = p.sm.softcap > 0.0f;
  const int64_t items = pairs(a, sh) ? 2 : 1;
  const std::string variant =
      std::string("wgmma.") + dtype_tag(a.dtype) + "." + dims + (softcap ? ".cap" : "") + (items == 2 ? ".pairs" : "");
  DeviceScope scope(call.device);
  if (scope.status() != AITER_OK || !has_kernel(scope.driver(), call.device.device_id, "prefill_attention", variant)) {
    clear_error();  // no sm_90a code object here (another GPU, or a build without it)
    return AITER_OK;
  }
  *taken = true;
  PrefillTmaParams q{};
  q.p = p;
  const int64_t keys = prefill_wgmma_tile_keys(int(sh.v_head_dim)), rows = block_rows(sh, softcap);
  aiter_status s = encode(scope.driver(), a.q, a.total_q, sh.q_heads, a.q_strides, sh.head_dim, rows, &q.q_map);
  if (s == AITER_OK)
    s = encode(scope.driver(), a.k, a.total_k, sh.kv_heads, a.k_strides, sh.head_dim, keys, &q.k_map);
  if (s == AITER_OK)
    s = encode(scope.driver(), a.v, a.total_k, sh.kv_heads, a.v_strides, sh.v_head_dim, keys, &q.v_map);
  // out through TMA stores (boxes of one consumer's 64 rows) where its base and strides allow.
  q.o_by_tma = aligned16(a.out) && strides_fit(a.out_strides, a.total_q, sh.q_heads);
  if (s == AITER_OK && q.o_by_tma)
    s = encode(scope.driver(), a.out, a.total_q, sh.q_heads, a.out_strides, sh.v_head_dim, 64, &q.o_map);
  if (s != AITER_OK) return s;
  const int64_t row_tiles = (a.total_q + rows - 1) / rows;
  const Dim3 grid{unsigned(sh.q_heads), unsigned((row_tiles + items - 1) / items), 1};
  return launch(call, "prefill_attention", variant, grid, unsigned(128 * (1 + consumers(sh, softcap))), q);
}

}  // namespace gpu
}  // namespace aiter
