// GPU launcher of prefill attention, 16-bit types: on sm_90a, head dims 64,
// 128, 256 or 192/128, the Hopper kernel (attention_prefill_wgmma.cpp: wgmma +
// TMA, warp-specialized; 1.2-1.3x the Triton kernel on an H100, 2026-11-27).
// Else where this build has the Triton kernel (attention_prefill_triton.cpp:
// sm_90a and AMD tensor cores, head dims 64, 128, 256 and 192/128): that one.
// Else on NVIDIA, head dims 64 or 128: the mma.sync kernel
// (kernels/attention/prefill_mma.cu: blocks of 64 query tokens x query heads).
// Otherwise the portable one (prefill.cu: blocks of 16 rows (query token, query
// head) x kv heads).  AITER_PREFILL_KERNEL=triton, =mma or =portable skips the
// kernels before that one (tests and benchmarks of each); =wgmma is the default.
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/attention_common.hpp"
#include "gpu/launch.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr unsigned kThreads = 128;  // the kernels' block
constexpr int64_t kRows = 16;       // rows a block of the portable kernel
constexpr int64_t kMmaTokens = 64;  // query tokens a block of the tensor-core kernel
constexpr int64_t kMaxGridY = 65535;

// AITER_PREFILL_KERNEL, read once: how many kernels of the order above to skip
// (0 none, 1 the Hopper one, 2 and Triton's, 3 all but the portable one).
int kernels_skipped() {
  static const int skipped = [] {
    const char *env = std::getenv("AITER_PREFILL_KERNEL");
    if (env == nullptr) return 0;
    const char *const names[] = {"wgmma", "triton", "mma", "portable"};
    for (int i = 0; i < 4; ++i)
      if (std::strcmp(env, names[i]) == 0) return i;
    return 0;
  }();
  return skipped;
}

// The kernel's head-dim suffix: "d128", or "d192v128" where v's differs.
std::string head_dims(const AttentionShape &s) {
  std::string name = "d" + std::to_string(s.head_dim);
  if (s.v_head_dim != s.head_dim) name += "v" + std::to_string(s.v_head_dim);
  return name;
}

// The tensor-core kernel (prefill_mma.cu, NVIDIA only): 16-bit types, equal head
// dims of 64 or 128, rows of q, k, v on 16-byte boundaries (cp.async copies) and
// of out on 4-byte ones (paired stores).
bool can_use_mma(const PrefillArgs &a, const GpuCall &call) {
  const AttentionShape &sh = a.shape;
  if (call.device.device_type != kDLCUDA || kernels_skipped() >= 3 || (a.dtype != DType::bf16 && a.dtype != DType::f16)) return false;
  if (sh.head_dim != sh.v_head_dim || (sh.head_dim != 64 && sh.head_dim != 128) || sh.q_heads > kMaxGridY)
    return false;
  const bool out_pairs = reinterpret_cast<uintptr_t>(a.out) % 4 == 0 &&
                         (a.total_q <= 1 || a.out_strides.token % 2 == 0) &&
                         (sh.q_heads <= 1 || a.out_strides.head % 2 == 0);
  return out_pairs && rows_aligned16(a.q, a.q_strides, a.total_q, sh.q_heads, 8) &&
         rows_aligned16(a.k, a.k_strides, a.total_k, sh.kv_heads, 8) &&
         rows_aligned16(a.v, a.v_strides, a.total_k, sh.kv_heads, 8);
}

}  // namespace

// The Hopper kernel's launcher (attention_prefill_wgmma.cpp); *taken false
// where the call does not fit it (nothing launched).
aiter_status prefill_attention_wgmma(const PrefillArgs &a, const PrefillParams &p, const GpuCall &call, bool *taken);

aiter_status prefill_attention(const PrefillArgs &a, const GpuCall &call) {
  const AttentionShape &sh = a.shape;
  if (a.total_q == 0 || sh.q_heads == 0) return AITER_OK;
  // cu_seqlens are not read on the host here; these are what their shapes show.
  if (a.batch < 1)
    return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_prefill_attention: cu_seqlens_q: expected B + 1 >= 2 entries "
                "for %lld query tokens, got 1", (long long)a.total_q);
  const int64_t group = sh.q_heads / sh.kv_heads;
  const int64_t blocks = (a.total_q * group + kRows - 1) / kRows;
  if (a.total_q > INT_MAX || a.total_k > INT_MAX || a.batch > INT_MAX - 1 || blocks > INT_MAX ||
      sh.kv_heads > kMaxGridY)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_prefill_attention: %lld query tokens x %lld heads are more "
                "than one launch holds", (long long)a.total_q, (long long)sh.q_heads);

  PrefillParams p{};
  p.sm = softmax_params(sh, 1.0f, 1.0f, a.dtype);
  p.q = a.q, p.k = a.k, p.v = a.v, p.out = a.out;
  p.lse = a.lse;
  p.cu_seqlens_q = a.cu_seqlens_q, p.cu_seqlens_k = a.cu_seqlens_k;
  p.q_token_stride = a.q_strides.token, p.q_head_stride = a.q_strides.head;
  p.k_token_stride = a.k_strides.token, p.k_head_stride = a.k_strides.head;
  p.v_token_stride = a.v_strides.token, p.v_head_stride = a.v_strides.head;
  p.out_token_stride = a.out_strides.token, p.out_head_stride = a.out_strides.head;
  p.total_q = int(a.total_q), p.total_k = int(a.total_k);
  p.batch = int(a.batch), p.q_heads = int(sh.q_heads), p.kv_heads = int(sh.kv_heads);
  p.causal = a.causal;
  const int64_t per16 = 16 / dtype_size(a.dtype);
  p.vec = rows_aligned16(a.k, a.k_strides, a.total_k, sh.kv_heads, per16) &&
          rows_aligned16(a.v, a.v_strides, a.total_k, sh.kv_heads, per16);
  if (kernels_skipped() < 1) {
    bool taken = false;
    const aiter_status st = prefill_attention_wgmma(a, p, call, &taken);
    if (taken) return st;
  }
  if (kernels_skipped() < 2) {
    bool taken = false;
    const aiter_status st = prefill_attention_triton(a, call, &taken);
    if (taken) return st;
  }
  if (can_use_mma(a, call)) {
    const int64_t tiles = (a.total_q + kMmaTokens - 1) / kMmaTokens;
    const std::string variant = std::string("mma.") + dtype_tag(a.dtype) + "." + head_dims(sh);
    return launch(call, "prefill_attention", variant, Dim3{unsigned(tiles), unsigned(sh.q_heads), 1}, kThreads, p);
  }
  const std::string variant = std::string("generic.") + dtype_tag(a.dtype) + "." + head_dims(sh);
  return launch(call, "prefill_attention", variant, Dim3{unsigned(blocks), unsigned(sh.kv_heads), 1}, kThreads, p);
}

}  // namespace gpu
}  // namespace aiter
