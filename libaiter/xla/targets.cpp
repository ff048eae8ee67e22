// libaiter's ops as XLA FFI custom-call targets, so that aiter.jax can call
// them inside jax.jit.  Each target is one row of kOps: the C function of the
// same name and the names of its scalar parameters; Binder (bind.hpp) takes
// the function's arguments from the call in its parameter order, so a row
// holds no code.  One handler template serves every row and platform: it
// views XLA's buffers as DLTensors on the call's device, takes XLA's stream on
// a GPU, and turns a failed status into an XLA error carrying aiter_last_error().
//
// A row per op stays: the handler needs each function's address and type at
// compile time, and the names are checked against the op table
// (python/aiter/spec) by tests/python/test_spec.py, through the exported table.
#include <array>
#include <exception>
#include <string>
#include <utility>

#include "aiter/activation.h"
#include "aiter/attention.h"
#include "aiter/gemm.h"
#include "aiter/mla.h"
#include "aiter/moe.h"
#include "aiter/norm.h"
#include "aiter/quant.h"
#include "aiter/rope.h"
#include "xla/bind.hpp"
#include "xla/call.hpp"

namespace aiter::xla_ffi {
namespace {

template <auto Function>
aiter_status bound(Call &call, const char *scalars) {
  Binder binder(call, scalars);
  return invoke(Function, binder);
}

struct Op {
  const char *target;   // the custom-call target: the C function's name
  aiter_status (*run)(Call &call, const char *scalars);
  const char *scalars;  // its scalar parameters' names (the attributes), in order
};

#define AITER_XLA_OP(function, scalars) {#function, bound<function>, scalars}

constexpr Op kOps[] = {
    AITER_XLA_OP(aiter_rmsnorm, "eps"),
    AITER_XLA_OP(aiter_add_rmsnorm, "eps"),
    AITER_XLA_OP(aiter_layernorm, "eps"),
    AITER_XLA_OP(aiter_rmsnorm_quant, "eps"),
    AITER_XLA_OP(aiter_add_rmsnorm_quant, "eps"),
    AITER_XLA_OP(aiter_silu_and_mul, ""),
    AITER_XLA_OP(aiter_gelu_and_mul, "approximate"),
    AITER_XLA_OP(aiter_silu_and_mul_quant, ""),
    AITER_XLA_OP(aiter_quant_per_tensor_dynamic, ""),
    AITER_XLA_OP(aiter_quant_per_token_dynamic, ""),
    AITER_XLA_OP(aiter_quant_per_tensor_static, ""),
    AITER_XLA_OP(aiter_rope, "style"),
    AITER_XLA_OP(aiter_reshape_and_cache, "k_scale v_scale"),
    AITER_XLA_OP(aiter_prefill_attention, ""),
    AITER_XLA_OP(aiter_paged_decode_attention, ""),
    AITER_XLA_OP(aiter_paged_decode_attention_split_kv, ""),
    AITER_XLA_OP(aiter_paged_prefill_attention, ""),
    AITER_XLA_OP(aiter_gemm_a16w16, ""),
    AITER_XLA_OP(aiter_gemm_a8w8, ""),
    AITER_XLA_OP(aiter_gemm_a8w8_blockscale, ""),
    AITER_XLA_OP(aiter_batched_gemm_a16w16, ""),
    AITER_XLA_OP(aiter_batched_gemm_a8w8, ""),
    AITER_XLA_OP(aiter_topk_softmax, "renormalize"),
    AITER_XLA_OP(aiter_topk_sigmoid, "renormalize"),
    AITER_XLA_OP(aiter_grouped_topk, "num_expert_group topk_group scoring_func renormalize routed_scaling_factor"),
    AITER_XLA_OP(aiter_moe_sorting, "num_experts block_size"),
    AITER_XLA_OP(aiter_fused_moe, ""),
    AITER_XLA_OP(aiter_fused_moe_fp8, ""),
    AITER_XLA_OP(aiter_mla_decode, ""),
    AITER_XLA_OP(aiter_concat_and_cache_mla, "scale"),
};
constexpr size_t kNumOps = sizeof(kOps) / sizeof(kOps[0]);

ffi::ErrorCode error_code(aiter_status status) {
  switch (status) {
    case AITER_ERR_INVALID_ARGUMENT: return ffi::ErrorCode::kInvalidArgument;
    case AITER_ERR_UNSUPPORTED_DTYPE:
    case AITER_ERR_UNSUPPORTED_SHAPE:
    case AITER_ERR_NO_KERNEL: return ffi::ErrorCode::kUnimplemented;
    case AITER_ERR_NO_DEVICE: return ffi::ErrorCode::kUnavailable;
    case AITER_ERR_OUT_OF_MEMORY: return ffi::ErrorCode::kResourceExhausted;
    default: return ffi::ErrorCode::kInternal;
  }
}

template <size_t I, DLDeviceType kDevice>
ffi::Error execute(void *stream, int32_t device_id, ffi::RemainingArgs args, ffi::RemainingRets rets,
                   ffi::Dictionary attrs) {
  const Op &op = kOps[I];
  try {
    Call call(DLDevice{kDevice, device_id}, stream, args, rets, attrs);
    aiter_status status = op.run(call, op.scalars);
    if (status == AITER_OK) return ffi::Error::Success();
    return ffi::Error(error_code(status), aiter_last_error());
  } catch (const std::exception &e) {  // BadCall, or std::bad_alloc from building the call
    return ffi::Error::InvalidArgument(std::string(op.target) + ": " + e.what());
  }
}

// The XLA handler of kOps[I] on one platform.  The binding is built once, on
// first use, and lives as long as the process (as XLA's own handler macros do).
template <size_t I, DLDeviceType kDevice>
XLA_FFI_Error *handler(XLA_FFI_CallFrame *frame) {
  if constexpr (kDevice == kDLCPU) {
    static auto *bound = ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs()
        .To([](ffi::RemainingArgs args, ffi::RemainingRets rets, ffi::Dictionary attrs) {
          return execute<I, kDLCPU>(nullptr, 0, args, rets, attrs);
        })
        .release();
    return bound->Call(frame);
  } else {
    static auto *bound = ffi::Ffi::Bind()
        .Ctx<ffi::PlatformStream<void *>>()
        .Ctx<ffi::DeviceOrdinal>()
        .RemainingArgs()
        .RemainingRets()
        .Attrs()
        .To(execute<I, kDevice>)
        .release();
    return bound->Call(frame);
  }
}

}  // namespace
}  // namespace aiter::xla_ffi

// The one exported symbol, read by aiter/jax/_targets.py through ctypes.
extern "C" {

typedef struct aiter_xla_target {
  const char *name;      // the custom-call target name
  XLA_FFI_Handler *cpu;  // for jax.ffi.register_ffi_target(name, ..., platform="cpu")
  XLA_FFI_Handler *cuda; // platform="CUDA": kDLCUDA tensors on XLA's stream
  XLA_FFI_Handler *rocm; // platform="ROCM": kDLROCM tensors on XLA's stream
  const char *scalars;   // the names of the C function's scalar parameters, space-separated
} aiter_xla_target;

// Sets *targets to the table of every target; returns its length.
__attribute__((visibility("default"))) size_t aiter_xla_targets(const aiter_xla_target **targets);
}

namespace aiter::xla_ffi {
namespace {

template <size_t... I>
constexpr std::array<aiter_xla_target, kNumOps> make_targets(std::index_sequence<I...>) {
  return {{{kOps[I].target, handler<I, kDLCPU>, handler<I, kDLCUDA>, handler<I, kDLROCM>, kOps[I].scalars}...}};
}

constexpr std::array<aiter_xla_target, kNumOps> kTargets = make_targets(std::make_index_sequence<kNumOps>{});

}  // namespace
}  // namespace aiter::xla_ffi

size_t aiter_xla_targets(const aiter_xla_target **targets) {
  *targets = aiter::xla_ffi::kTargets.data();
  return aiter::xla_ffi::kTargets.size();
}
