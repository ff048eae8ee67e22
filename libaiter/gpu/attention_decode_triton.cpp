// The Triton paged decode kernel's choice and launch (attention_decode_triton.hpp).
// It was compiled assuming 16-byte aligned caches (kernels/triton/decode_aot.py);
// calls without them take another kernel.
#include "gpu/attention_decode_triton.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/triton_launch.hpp"

namespace aiter {
namespace gpu {
namespace {

enum class Forced { none, triton, portable };

// AITER_DECODE_KERNEL, read once (launch.hpp's convention for the other kernels).
Forced forced_kernel() {
  static const Forced forced = [] {
    const char *env = std::getenv("AITER_DECODE_KERNEL");
    if (env == nullptr) return Forced::none;
    return std::strcmp(env, "triton") == 0 ? Forced::triton
                                           : std::strcmp(env, "portable") == 0 ? Forced::portable : Forced::none;
  }();
  return forced;
}

// "same" for a cache of q's dtype, else the fp8 format's name.
const char *cache_tag(const DecodeArgs &a) { return a.cache.dtype == a.dtype ? "same" : dtype_tag(a.cache.dtype); }

std::string variant_name(const DecodeArgs &a) {
  return std::string("triton.") + dtype_tag(a.dtype) + "." + cache_tag(a) + ".d" + std::to_string(a.shape.head_dim);
}

// What every variant takes; which fp8 formats were built is the manifest's to say.
bool fits(const DecodeArgs &a) {
  const AttentionShape &sh = a.shape;
  const int64_t capacity = a.max_blocks * a.cache.page_size;  // validated: both below 2^31
  return (a.dtype == DType::bf16 || a.dtype == DType::f16) && (a.cache.dtype == a.dtype || is_fp8(a.cache.dtype)) &&
         sh.head_dim == sh.v_head_dim && (sh.head_dim == 64 || sh.head_dim == 128) && aligned16(a.cache.k) &&
         aligned16(a.cache.v) && capacity <= INT_MAX - 4 * kDecodeTritonKeys;
}

}  // namespace

aiter_status decode_triton_chosen(const DecodeArgs &a, const GpuCall &call, bool *chosen) {
  *chosen = false;
  const Forced forced = forced_kernel();
  if (forced == Forced::portable || (call.device.device_type != kDLROCM && forced != Forced::triton) || !fits(a))
    return AITER_OK;
  *chosen = triton_kernel_built(call, "paged_decode_attention", variant_name(a));
  if (*chosen || forced != Forced::triton) return AITER_OK;
  // Forced: an fp8 format this target's build lacks takes another kernel, but a
  // build without the Triton decode kernels at all is an error.
  const std::string same = std::string("triton.") + dtype_tag(a.dtype) + ".same.d" + std::to_string(a.shape.head_dim);
  if (triton_kernel_built(call, "paged_decode_attention", same)) return AITER_OK;
  return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_paged_decode_attention: AITER_DECODE_KERNEL=triton, but this "
              "build has no Triton kernel paged_decode_attention/%s", same.c_str());
}

aiter_status paged_decode_triton(const DecodeArgs &a, const DecodeParams &p, const GpuCall &call) {
  const int64_t capacity = a.max_blocks * a.cache.page_size;
  const NamedArg values[] = {
      NamedArg::pointer("q", p.q), NamedArg::pointer("k_cache", p.k_cache), NamedArg::pointer("v_cache", p.v_cache),
      NamedArg::pointer("out", p.out), NamedArg::pointer("partial_out", p.partial_out),
      NamedArg::pointer("partial_lse", p.partial_lse), NamedArg::pointer("block_table", p.block_table),
      NamedArg::pointer("context_lens", p.context_lens),
      NamedArg::number("q_seq_stride", p.q_seq_stride), NamedArg::number("q_token_stride", p.q_token_stride),
      NamedArg::number("q_head_stride", p.q_head_stride), NamedArg::number("out_seq_stride", p.out_seq_stride),
      NamedArg::number("out_token_stride", p.out_token_stride),
      NamedArg::number("out_head_stride", p.out_head_stride), NamedArg::number("table_stride", p.table_stride),
      NamedArg::number("num_blocks", p.num_blocks), NamedArg::number("capacity", capacity),
      NamedArg::number("page_size", p.page_size), NamedArg::number("q_tokens", p.q_tokens),
      NamedArg::number("q_heads", p.q_heads), NamedArg::number("kv_heads", p.kv_heads),
      NamedArg::number("row_blocks", p.row_blocks), NamedArg::number("splits", p.splits),
      NamedArg::number("split_keys", p.split_keys), NamedArg::number("window_left", p.sm.window_left),
      NamedArg::single("scale", p.sm.scale), NamedArg::single("softcap", p.sm.softcap),
      NamedArg::single("k_scale", p.sm.k_scale), NamedArg::single("v_scale", p.sm.v_scale),
  };
  const Dim3 grid{unsigned(int64_t(p.batch) * p.splits), unsigned(int64_t(p.kv_heads) * p.row_blocks), 1};
  return launch_triton(call, "paged_decode_attention", variant_name(a), grid, values,
                       int(sizeof values / sizeof values[0]));
}

}  // namespace gpu
}  // namespace aiter
