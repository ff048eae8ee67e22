// The Triton prefill kernel (kernels/triton/attention.py, compiled ahead of time
// where meson's Python imports triton): the tensor-core prefill of sm_90a
// (wgmma) and the AMD targets (MFMA / WMMA).  It was compiled assuming 16-byte
// aligned q, k, v, out and strides that are multiples of 16 elements
// (kernels/triton/attention_aot.py); calls without them take another kernel.
#include <climits>
#include <cstdint>
#include <string>

#include "gpu/attention_common.hpp"
#include "gpu/triton_launch.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int64_t kMaxGridY = 65535;
constexpr int kRowTiles[] = {128, 64, 32};  // attention_aot.py's BM values, the larger tried first

// The stride Triton is given for a dim: 0 where the dim has one element (its
// stride is never used and may be anything), so a promise of divisibility holds.
int64_t used_stride(int64_t stride, int64_t extent) { return extent <= 1 ? 0 : stride; }

bool multiple_of_16(int64_t v) { return v % 16 == 0; }

bool strides_fit(const TokenHeadStrides &s, int64_t tokens, int64_t heads) {
  return multiple_of_16(used_stride(s.token, tokens)) && multiple_of_16(used_stride(s.head, heads));
}

bool fits(const PrefillArgs &a) {
  const AttentionShape &sh = a.shape;
  const bool dims = (sh.head_dim == sh.v_head_dim && (sh.head_dim == 64 || sh.head_dim == 128 || sh.head_dim == 256)) ||
                    (sh.head_dim == 192 && sh.v_head_dim == 128);
  return (a.dtype == DType::bf16 || a.dtype == DType::f16) && dims && aligned16(a.q) && aligned16(a.k) &&
         aligned16(a.v) && aligned16(a.out) && strides_fit(a.q_strides, a.total_q, sh.q_heads) &&
         strides_fit(a.k_strides, a.total_k, sh.kv_heads) && strides_fit(a.v_strides, a.total_k, sh.kv_heads) &&
         strides_fit(a.out_strides, a.total_q, sh.q_heads) && sh.q_heads <= INT_MAX;
}

std::string variant_name(const PrefillArgs &a, int rows) {
  const AttentionShape &sh = a.shape;
  std::string dims = "d" + std::to_string(sh.head_dim);
  if (sh.v_head_dim != sh.head_dim) dims += "v" + std::to_string(sh.v_head_dim);
  return std::string("triton.") + dtype_tag(a.dtype) + "." + dims + ".m" + std::to_string(rows);
}

// Binary-search steps over cu_seqlens_q's batch entries: ceil(log2(batch)).
int search_steps(int64_t batch) {
  int steps = 0;
  while ((int64_t(1) << steps) < batch) ++steps;
  return steps;
}

aiter_status launch(const PrefillArgs &a, const GpuCall &call, const std::string &variant, int rows) {
  const AttentionShape &sh = a.shape;
  const NamedArg values[] = {
      NamedArg::pointer("q", a.q), NamedArg::pointer("k", a.k), NamedArg::pointer("v", a.v),
      NamedArg::pointer("out", a.out), NamedArg::pointer("lse", a.lse),
      NamedArg::pointer("cu_seqlens_q", a.cu_seqlens_q), NamedArg::pointer("cu_seqlens_k", a.cu_seqlens_k),
      NamedArg::number("q_token_stride", used_stride(a.q_strides.token, a.total_q)),
      NamedArg::number("q_head_stride", used_stride(a.q_strides.head, sh.q_heads)),
      NamedArg::number("k_token_stride", used_stride(a.k_strides.token, a.total_k)),
      NamedArg::number("k_head_stride", used_stride(a.k_strides.head, sh.kv_heads)),
      NamedArg::number("v_token_stride", used_stride(a.v_strides.token, a.total_k)),
      NamedArg::number("v_head_stride", used_stride(a.v_strides.head, sh.kv_heads)),
      NamedArg::number("out_token_stride", used_stride(a.out_strides.token, a.total_q)),
      NamedArg::number("out_head_stride", used_stride(a.out_strides.head, sh.q_heads)),
      NamedArg::number("total_q", a.total_q), NamedArg::number("total_k", a.total_k),
      NamedArg::number("batch", a.batch), NamedArg::number("search_steps", search_steps(a.batch)),
      NamedArg::number("q_heads", sh.q_heads), NamedArg::number("group", sh.q_heads / sh.kv_heads),
      NamedArg::number("causal", a.causal ? 1 : 0), NamedArg::number("window_left", sh.window_left),
      NamedArg::single("scale", sh.softmax_scale), NamedArg::single("softcap", sh.softcap),
      NamedArg::number("has_lse", a.lse != nullptr ? 1 : 0),
  };
  const Dim3 grid{unsigned(sh.q_heads), unsigned((a.total_q + rows - 1) / rows), 1};
  return launch_triton(call, "prefill_attention", variant, grid, values, int(sizeof values / sizeof values[0]));
}

}  // namespace

aiter_status prefill_attention_triton(const PrefillArgs &a, const GpuCall &call, bool *taken) {
  *taken = false;
  if (!fits(a)) return AITER_OK;
  for (int rows : kRowTiles) {
    const std::string variant = variant_name(a, rows);
    if ((a.total_q + rows - 1) / rows > kMaxGridY || !triton_kernel_built(call, "prefill_attention", variant))
      continue;
    *taken = true;
    return launch(a, call, variant, rows);
  }
  return AITER_OK;
}

}  // namespace gpu
}  // namespace aiter
