// libaiter's ops as XLA FFI custom-call targets, so that aiter.jax can call
// them inside jax.jit.  Each target is one row of kOps: a short function that
// passes the call's results, operands and attributes to the public C function
// of the same name.  One handler template serves every row and platform: it
// views XLA's buffers as DLTensors on the call's device, takes XLA's stream on a
// GPU, and turns a failed status into an XLA error carrying aiter_last_error().
#include <array>
#include <exception>
#include <string>
#include <utility>

#include "aiter/activation.h"
#include "aiter/attention.h"
#include "aiter/gemm.h"
#include "aiter/norm.h"
#include "aiter/quant.h"
#include "aiter/rope.h"
#include "xla/call.hpp"

namespace aiter::xla_ffi {
namespace {

// Each function's operands and results are in the order aiter/jax/ops.py passes them.
aiter_status rmsnorm(Call &c) { return aiter_rmsnorm(c.ret(0), c.arg(0), c.arg(1), c.f32("eps"), c.stream()); }

aiter_status add_rmsnorm(Call &c) {  // operands x, residual, weight; results out, residual_out
  return aiter_add_rmsnorm(c.ret(0), c.ret(1), c.arg(0), c.arg(1), c.arg(2), c.f32("eps"), c.stream());
}

aiter_status layernorm(Call &c) {  // bias is left out when None
  return aiter_layernorm(c.ret(0), c.arg(0), c.arg(1), c.optional_arg(2), c.f32("eps"), c.stream());
}

aiter_status rmsnorm_quant(Call &c) {  // results out, scale
  return aiter_rmsnorm_quant(c.ret(0), c.ret(1), c.arg(0), c.arg(1), c.f32("eps"), c.stream());
}

aiter_status add_rmsnorm_quant(Call &c) {  // results out, scale, residual_out
  return aiter_add_rmsnorm_quant(c.ret(0), c.ret(1), c.ret(2), c.arg(0), c.arg(1), c.arg(2), c.f32("eps"),
                                 c.stream());
}

aiter_status silu_and_mul(Call &c) { return aiter_silu_and_mul(c.ret(0), c.arg(0), c.stream()); }

aiter_status gelu_and_mul(Call &c) {
  return aiter_gelu_and_mul(c.ret(0), c.arg(0), aiter_gelu_approx(c.i32("approximate")), c.stream());
}

aiter_status silu_and_mul_quant(Call &c) { return aiter_silu_and_mul_quant(c.ret(0), c.ret(1), c.arg(0), c.stream()); }

aiter_status quant_per_tensor(Call &c) {
  return aiter_quant_per_tensor_dynamic(c.ret(0), c.ret(1), c.arg(0), c.stream());
}

aiter_status quant_per_token(Call &c) { return aiter_quant_per_token_dynamic(c.ret(0), c.ret(1), c.arg(0), c.stream()); }

aiter_status quant_per_tensor_static(Call &c) {
  return aiter_quant_per_tensor_static(c.ret(0), c.arg(0), c.arg(1), c.stream());
}

// Operands q, [k], positions, cos_sin_cache; results q and k, aliased with the
// operands (XLA copies an operand first where its old value is still needed).
aiter_status rope(Call &c) {
  const size_t rotated = c.num_rets();  // 1: q alone, 2: q and k
  return aiter_rope(c.ret(0), c.optional_ret(1), c.arg(rotated), c.arg(rotated + 1),
                    aiter_rope_style(c.i32("style")), c.stream());
}

// Operands key, value, k_cache, v_cache, slot_mapping; results the two caches, aliased.
aiter_status reshape_and_cache(Call &c) {
  return aiter_reshape_and_cache(c.ret(0), c.ret(1), c.arg(0), c.arg(1), c.arg(4), c.f32("k_scale"),
                                 c.f32("v_scale"), c.stream());
}

aiter_status gemm_a16w16(Call &c) {  // operands a, w, [bias]
  return aiter_gemm_a16w16(c.ret(0), c.arg(0), c.arg(1), c.optional_arg(2), c.stream());
}

aiter_status gemm_a8w8(Call &c) {  // operands a, w, a_scale, w_scale, [bias]
  return aiter_gemm_a8w8(c.ret(0), c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.optional_arg(4), c.stream());
}

struct Op {
  const char *target;  // the custom-call target: the C function's name
  aiter_status (*run)(Call &call);
};

constexpr Op kOps[] = {
    {"aiter_rmsnorm", rmsnorm},
    {"aiter_add_rmsnorm", add_rmsnorm},
    {"aiter_layernorm", layernorm},
    {"aiter_rmsnorm_quant", rmsnorm_quant},
    {"aiter_add_rmsnorm_quant", add_rmsnorm_quant},
    {"aiter_silu_and_mul", silu_and_mul},
    {"aiter_gelu_and_mul", gelu_and_mul},
    {"aiter_silu_and_mul_quant", silu_and_mul_quant},
    {"aiter_quant_per_tensor_dynamic", quant_per_tensor},
    {"aiter_quant_per_token_dynamic", quant_per_token},
    {"aiter_quant_per_tensor_static", quant_per_tensor_static},
    {"aiter_rope", rope},
    {"aiter_reshape_and_cache", reshape_and_cache},
    {"aiter_gemm_a16w16", gemm_a16w16},
    {"aiter_gemm_a8w8", gemm_a8w8},
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
    aiter_status status = op.run(call);
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
} aiter_xla_target;

// Sets *targets to the table of every target; returns its length.
__attribute__((visibility("default"))) size_t aiter_xla_targets(const aiter_xla_target **targets);
}

namespace aiter::xla_ffi {
namespace {

template <size_t... I>
constexpr std::array<aiter_xla_target, kNumOps> make_targets(std::index_sequence<I...>) {
  return {{{kOps[I].target, handler<I, kDLCPU>, handler<I, kDLCUDA>, handler<I, kDLROCM>}...}};
}

constexpr std::array<aiter_xla_target, kNumOps> kTargets = make_targets(std::make_index_sequence<kNumOps>{});

}  // namespace
}  // namespace aiter::xla_ffi

size_t aiter_xla_targets(const aiter_xla_target **targets) {
  *targets = aiter::xla_ffi::kTargets.data();
  return aiter::xla_ffi::kTargets.size();
}
