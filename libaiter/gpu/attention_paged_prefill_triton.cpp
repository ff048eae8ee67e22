// The Triton paged-prefill kernel's choice and launch (attention_paged_prefill_triton.hpp).
// It was compiled assuming 16-byte aligned caches (kernels/triton/paged_prefill_aot.py).
#include "gpu/attention_paged_prefill_triton.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/triton_launch.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int kRowTiles[] = {64, 32};  // paged_prefill_aot.py's BM values, the larger tried first
constexpr int64_t kTileKeys = 64;      // the larger of its BN values
constexpr int64_t kMaxGridY = 65535;

bool forced() {
  const char *env = std::getenv("AITER_PAGED_PREFILL_KERNEL");
  return env != nullptr && std::strcmp(env, "triton") == 0;
}

std::string variant_name(const DecodeArgs &a, int rows) {
  return std::string("triton.") + dtype_tag(a.dtype) + ".d" + std::to_string(a.shape.head_dim) + ".m" +
         std::to_string(rows);
}

bool fits(const DecodeArgs &a) {
  const AttentionShape &sh = a.shape;
  const int64_t group = sh.q_heads / sh.kv_heads;
  return (a.dtype == DType::bf16 || a.dtype == DType::f16) && a.cache.dtype == a.dtype &&
         sh.head_dim == sh.v_head_dim && (sh.head_dim == 64 || sh.head_dim == 128) && aligned16(a.cache.k) &&
         aligned16(a.cache.v) && a.max_blocks * a.cache.page_size <= INT_MAX - 4 * kTileKeys &&
         a.total_q <= (INT_MAX - a.batch) / group && sh.kv_heads <= kMaxGridY && a.batch < INT_MAX;
}

// Binary-search steps over the sequences' first tiles: ceil(log2(batch)).
int search_steps(int64_t batch) {
  int steps = 0;
  while ((int64_t(1) << steps) < batch) ++steps;
  return steps;
}

aiter_status launch(const DecodeArgs &a, const GpuCall &call, const std::string &variant, int rows) {
  const AttentionShape &sh = a.shape;
  const NamedArg values[] = {
      NamedArg::pointer("q", a.q), NamedArg::pointer("k_cache", a.cache.k), NamedArg::pointer("v_cache", a.cache.v),
      NamedArg::pointer("out", a.out), NamedArg::pointer("lse", a.lse),
      NamedArg::pointer("block_table", a.block_table), NamedArg::pointer("context_lens", a.context_lens),
      NamedArg::pointer("cu_seqlens_q", a.cu_seqlens_q),
      NamedArg::number("q_token_stride", a.q_strides.token), NamedArg::number("q_head_stride", a.q_strides.head),
      NamedArg::number("out_token_stride", a.out_strides.token),
      NamedArg::number("out_head_stride", a.out_strides.head), NamedArg::number("table_stride", a.block_table_stride),
      NamedArg::number("num_blocks", a.cache.num_blocks),
      NamedArg::number("capacity", a.max_blocks * a.cache.page_size), NamedArg::number("page_size", a.cache.page_size),
      NamedArg::number("batch", a.batch), NamedArg::number("search_steps", search_steps(a.batch)),
      NamedArg::number("total_q", a.total_q), NamedArg::number("q_heads", sh.q_heads),
      NamedArg::number("kv_heads", sh.kv_heads), NamedArg::number("causal", a.causal ? 1 : 0),
      NamedArg::number("window_left", sh.window_left), NamedArg::single("scale", sh.softmax_scale),
      NamedArg::single("softcap", sh.softcap), NamedArg::single("k_scale", a.cache.k_scale),
      NamedArg::single("v_scale", a.cache.v_scale), NamedArg::number("has_lse", a.lse != nullptr ? 1 : 0),
  };
  // paged_rows.h's tiles: the packed rows (token, query head of a kv head) cut
  // into tiles, plus one partial tile a sequence.
  const int64_t tiles = a.total_q * (sh.q_heads / sh.kv_heads) / rows + a.batch;
  return launch_triton(call, "paged_prefill_attention", variant, Dim3{unsigned(tiles), unsigned(sh.kv_heads), 1},
                       values, int(sizeof values / sizeof values[0]));
}

}  // namespace

aiter_status paged_prefill_triton(const DecodeArgs &a, const GpuCall &call, bool *taken) {
  *taken = false;
  const bool force = forced();
  if ((call.device.device_type != kDLROCM && !force) || !fits(a)) return AITER_OK;
  for (int rows : kRowTiles) {
    const std::string variant = variant_name(a, rows);
    if (!triton_kernel_built(call, "paged_prefill_attention", variant)) continue;
    *taken = true;
    return launch(a, call, variant, rows);
  }
  if (!force) return AITER_OK;
  *taken = true;
  return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_paged_prefill_attention: AITER_PAGED_PREFILL_KERNEL=triton, but "
              "this build has no Triton kernel paged_prefill_attention/%s", variant_name(a, kRowTiles[0]).c_str());
}

}  // namespace gpu
}  // namespace aiter
