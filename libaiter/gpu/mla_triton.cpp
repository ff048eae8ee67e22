// The Triton MLA decode kernel's choice and launch (mla_triton.hpp).  It was
// compiled assuming 16-byte aligned q, cache, out and workspace
// (kernels/triton/mla_aot.py); calls without them take another kernel.
#include "gpu/mla_triton.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/triton_launch.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int64_t kTileKeys = 64;  // the larger of mla_aot.py's BN

enum class Forced { none, triton, portable };

// AITER_MLA_KERNEL, read once (launch.hpp's convention for the other kernels).
Forced forced_kernel() {
  static const Forced forced = [] {
    const char *env = std::getenv("AITER_MLA_KERNEL");
    if (env == nullptr) return Forced::none;
    return std::strcmp(env, "triton") == 0 ? Forced::triton
                                           : std::strcmp(env, "portable") == 0 ? Forced::portable : Forced::none;
  }();
  return forced;
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

std::string variant_name(DType q, DType cache) {
  return std::string("triton.") + dtype_tag(q) + "." + (cache == q ? "same" : dtype_tag(cache));
}

bool fits(const MlaDecodeArgs &a) {
  return a.dtype == DType::bf16 && aligned16(a.q) && aligned16(a.kv_cache) && aligned16(a.out) &&
         aligned16(a.workspace) && a.max_blocks * a.page_size <= INT_MAX - 4 * kTileKeys;
}

}  // namespace

aiter_status mla_triton_chosen(const MlaDecodeArgs &a, const GpuCall &call, bool *chosen) {
  *chosen = false;
  const Forced forced = forced_kernel();
  if (forced == Forced::portable || (call.device.device_type != kDLROCM && forced != Forced::triton) || !fits(a))
    return AITER_OK;
  *chosen = triton_kernel_built(call, "mla_decode", variant_name(a.dtype, a.cache_dtype));
  if (*chosen || forced != Forced::triton) return AITER_OK;
  // Forced: an fp8 format this target's build lacks takes another kernel, but a
  // build without the Triton MLA kernels at all is an error.
  const std::string same = variant_name(a.dtype, a.dtype);
  if (triton_kernel_built(call, "mla_decode", same)) return AITER_OK;
  return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_mla_decode: AITER_MLA_KERNEL=triton, but this build has no "
              "Triton kernel mla_decode/%s", same.c_str());
}

aiter_status mla_decode_triton(const MlaDecodeArgs &a, const MlaDecodeParams &p, const GpuCall &call) {
  const NamedArg values[] = {
      NamedArg::pointer("q", p.q), NamedArg::pointer("kv_cache", p.kv_cache), NamedArg::pointer("out", p.out),
      NamedArg::pointer("lse", p.lse), NamedArg::pointer("partial_out", p.partial_out),
      NamedArg::pointer("partial_lse", p.partial_lse), NamedArg::pointer("block_table", p.block_table),
      NamedArg::pointer("context_lens", p.context_lens), NamedArg::number("table_stride", p.table_stride),
      NamedArg::number("num_blocks", p.num_blocks), NamedArg::number("capacity", a.max_blocks * a.page_size),
      NamedArg::number("page_size", p.page_size), NamedArg::number("q_tokens", p.q_tokens),
      NamedArg::number("q_heads", p.q_heads), NamedArg::number("rows", p.rows), NamedArg::number("splits", p.splits),
      NamedArg::number("split_keys", p.split_keys),
      // The plan's scales hold no fp8 bias (mla.cu undoes its own in the kernel):
      // Triton's fp8 conversions give the true values.
      NamedArg::single("logit_scale", p.logit_scale), NamedArg::single("value_scale", p.value_scale),
      NamedArg::number("has_lse", p.lse != nullptr ? 1 : 0),
  };
  const Dim3 grid{unsigned(a.batch * p.splits), unsigned((p.rows + kMlaTritonRows - 1) / kMlaTritonRows), 1};
  return launch_triton(call, "mla_decode", variant_name(a.dtype, a.cache_dtype), grid, values,
                       int(sizeof values / sizeof values[0]));
}

}  // namespace gpu
}  // namespace aiter
