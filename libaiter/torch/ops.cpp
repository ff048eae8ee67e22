// libaiter_torch.so: the CPU and CUDA kernels of torch.ops.aiter.<name>
// registered in C++ through PyTorch's stable ABI, so that a call stays in C++
// from the dispatcher to libaiter's C function (no Python kernel, no cffi).
// The schemas, the fake (meta) kernels and the plans come from the op table
// in Python (aiter/torch/_register.py, _native.py); aiter.torch falls back to
// its Python kernels for any op or overload not registered here.
//
// Each row holds a C function; Binder takes its arguments in its own
// parameter order from the call as the plan maps them, so a row holds no code.
// One boxed kernel template serves every row and overload.
#include <array>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <dlfcn.h>

#include "aiter/activation.h"
#include "aiter/attention.h"
#include "aiter/gemm.h"
#include "aiter/mla.h"
#include "aiter/moe.h"
#include "aiter/norm.h"
#include "aiter/quant.h"
#include "aiter/rope.h"
#include "core/typed_call.hpp"
#include "torch/call.hpp"

namespace aiter::torch_ops {
namespace {

using aiter::Tag;

// The params structs' fields by name (the op table's argument names); each
// returns false for a name the struct lacks, which refuses the plan.
bool set_field(aiter_attention_params &p, const std::string &name, double v, DLTensor *out) {
  if (name == "softmax_scale") return p.softmax_scale = float(v), true;
  if (name == "causal") return p.causal = v != 0, true;
  if (name == "window_left") return p.window_left = int32_t(v), true;
  if (name == "k_scale") return p.k_scale = float(v), true;
  if (name == "v_scale") return p.v_scale = float(v), true;
  if (name == "softcap") return p.softcap = float(v), true;
  if (name == "lse") return p.lse = out, true;
  return false;
}

bool set_field(aiter_mla_params &p, const std::string &name, double v, DLTensor *out) {
  if (name == "softmax_scale") return p.softmax_scale = float(v), true;
  if (name == "kv_scale") return p.kv_scale = float(v), true;
  if (name == "num_splits") return p.num_splits = int32_t(v), true;
  if (name == "lse") return p.lse = out, true;
  return false;
}

bool set_field(aiter_fused_moe_params &p, const std::string &name, double v, DLTensor *) {
  if (name == "activation") return p.activation = int32_t(v), true;
  if (name == "weights_on_input") return p.weights_on_input = v != 0, true;
  if (name == "block_size") return p.block_size = int32_t(v), true;
  if (name == "variant") return p.variant = int32_t(v), true;
  return false;
}

class Binder {
 public:
  Binder(Call &call, const Plan &plan) : call_(call), plan_(plan) {}

  const DLTensor *take(Tag<const DLTensor *>) {
    const Param &p = next();
    return p.source == Param::Output ? call_.output(p.index) : call_.input(p);
  }
  DLTensor *take(Tag<DLTensor *>) {
    const Param &p = next();
    return p.source == Param::Output ? call_.output(p.index) : call_.written(p.index);
  }
  float take(Tag<float>) { return float(call_.number(next().index)); }
  int32_t take(Tag<int32_t>) { return call_.enum_value(next()); }
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  E take(Tag<E>) {
    return E(take(Tag<int32_t>{}));
  }
  void *take(Tag<void *>) { return call_.stream(); }
  const aiter_attention_params *take(Tag<const aiter_attention_params *>) {
    aiter_attention_params_init(&attention_);
    fill(attention_, next());
    return &attention_;
  }
  const aiter_mla_params *take(Tag<const aiter_mla_params *>) {
    aiter_mla_params_init(&mla_);
    fill(mla_, next());
    return &mla_;
  }
  const aiter_fused_moe_params *take(Tag<const aiter_fused_moe_params *>) {
    aiter_fused_moe_params_init(&moe_);
    fill(moe_, next());
    return &moe_;
  }

 private:
  const Param &next() { return plan_.params[position_++]; }

  // Sets each field of a params struct the plan names; a None entry keeps the default.
  template <class Struct>
  void fill(Struct &params, const Param &p) {
    for (const Field &f : p.fields) {
      const Param &src = f.source;
      if (src.source == Param::Output) {
        set_field(params, f.name, 0.0, call_.output(src.index));
      } else if (plan_.stack[src.index] == Kind::Tensor || plan_.stack[src.index] == Kind::OptionalTensor) {
        set_field(params, f.name, 0.0, call_.written(src.index));  // a .out overload's lse
      } else if (plan_.stack[src.index] != Kind::OptionalFloat || call_.given(src.index)) {
        bool integral = plan_.stack[src.index] != Kind::Float && plan_.stack[src.index] != Kind::OptionalFloat;
        set_field(params, f.name, integral ? double(call_.enum_value(src)) : call_.number(src.index), nullptr);
      }
    }
  }

  Call &call_;
  const Plan &plan_;
  size_t position_ = 0;
  aiter_attention_params attention_;
  aiter_mla_params mla_;
  aiter_fused_moe_params moe_;
};


bool is_scalar(const Plan &plan, const Param &p, bool floating) {
  if (p.source != Param::Stack) return false;
  Kind kind = plan.stack[p.index];
  if (floating) return kind == Kind::Float || kind == Kind::Int;
  return kind == Kind::Int || kind == Kind::Bool || (kind == Kind::Str && !p.names.empty());
}

// Whether a params-struct token names only fields the struct has, each from
// an output (lse) or a scalar entry.
template <class Struct>
bool fields_fit(const Plan &plan, const Param &p) {
  Struct probe{};
  for (const Field &f : p.fields) {
    const Param &src = f.source;
    bool output = src.source == Param::Output ||
                  (src.source == Param::Stack && (plan.stack[src.index] == Kind::Tensor ||
                                                  plan.stack[src.index] == Kind::OptionalTensor));
    bool scalar = is_scalar(plan, src, true) || is_scalar(plan, src, false) ||
                  (src.source == Param::Stack && plan.stack[src.index] == Kind::OptionalFloat);
    if (!(output || scalar) || !set_field(probe, f.name, 0.0, nullptr)) return false;
  }
  return p.source == Param::Params;
}

// Whether a plan fits parameter P (at registration, so a call never misreads).
template <class P>
bool fits(const Plan &plan, const Param &p) {
  if constexpr (std::is_same_v<P, const DLTensor *> || std::is_same_v<P, DLTensor *>) {
    if (p.source == Param::Output) return true;
    return p.source == Param::Stack &&
           (plan.stack[p.index] == Kind::Tensor || plan.stack[p.index] == Kind::OptionalTensor);
  } else if constexpr (std::is_same_v<P, float>) {
    return is_scalar(plan, p, true);
  } else if constexpr (std::is_same_v<P, int32_t> || std::is_enum_v<P>) {
    return is_scalar(plan, p, false);
  } else if constexpr (std::is_same_v<P, const aiter_attention_params *>) {
    return fields_fit<aiter_attention_params>(plan, p);
  } else if constexpr (std::is_same_v<P, const aiter_mla_params *>) {
    return fields_fit<aiter_mla_params>(plan, p);
  } else if constexpr (std::is_same_v<P, const aiter_fused_moe_params *>) {
    return fields_fit<aiter_fused_moe_params>(plan, p);
  } else {
    return false;
  }
}

template <class... P>
bool plan_fits(aiter_status (*)(P...), const Plan &plan) {
  constexpr size_t n = sizeof...(P);
  using Last = std::tuple_element_t<n - 1, std::tuple<P...>>;
  if (!std::is_same_v<Last, void *> || plan.params.size() != n - 1) return false;
  size_t i = 0;
  bool ok = true;
  ((ok = ok && (i == n - 1 || fits<P>(plan, plan.params[i])), ++i), ...);
  return ok;
}

struct Row {
  const char *symbol;
  aiter_status (*run)(Call &call, const Plan &plan);
  bool (*accepts)(const Plan &plan);
};

template <auto Function>
aiter_status bound(Call &call, const Plan &plan) {
  Binder binder(call, plan);
  return invoke(Function, binder);
}

template <auto Function>
bool accepts(const Plan &plan) {
  return plan_fits(Function, plan);
}

#define AITER_TORCH_ROW(function) {#function, bound<function>, accepts<function>}

constexpr Row kRows[] = {
    AITER_TORCH_ROW(aiter_rmsnorm),
    AITER_TORCH_ROW(aiter_add_rmsnorm),
    AITER_TORCH_ROW(aiter_layernorm),
    AITER_TORCH_ROW(aiter_rmsnorm_quant),
    AITER_TORCH_ROW(aiter_add_rmsnorm_quant),
    AITER_TORCH_ROW(aiter_silu_and_mul),
    AITER_TORCH_ROW(aiter_gelu_and_mul),
    AITER_TORCH_ROW(aiter_silu_and_mul_quant),
    AITER_TORCH_ROW(aiter_quant_per_tensor_dynamic),
    AITER_TORCH_ROW(aiter_quant_per_token_dynamic),
    AITER_TORCH_ROW(aiter_quant_per_tensor_static),
    AITER_TORCH_ROW(aiter_rope),
    AITER_TORCH_ROW(aiter_reshape_and_cache),
    AITER_TORCH_ROW(aiter_prefill_attention),
    AITER_TORCH_ROW(aiter_paged_decode_attention),
    AITER_TORCH_ROW(aiter_paged_decode_attention_split_kv),
    AITER_TORCH_ROW(aiter_paged_prefill_attention),
    AITER_TORCH_ROW(aiter_gemm_a16w16),
    AITER_TORCH_ROW(aiter_gemm_a8w8),
    AITER_TORCH_ROW(aiter_gemm_a8w8_blockscale),
    AITER_TORCH_ROW(aiter_batched_gemm_a16w16),
    AITER_TORCH_ROW(aiter_batched_gemm_a8w8),
    AITER_TORCH_ROW(aiter_topk_softmax),
    AITER_TORCH_ROW(aiter_topk_sigmoid),
    AITER_TORCH_ROW(aiter_grouped_topk),
    AITER_TORCH_ROW(aiter_moe_sorting),
    AITER_TORCH_ROW(aiter_fused_moe),
    AITER_TORCH_ROW(aiter_fused_moe_fp8),
    AITER_TORCH_ROW(aiter_mla_decode),
    AITER_TORCH_ROW(aiter_concat_and_cache_mla),
};
constexpr size_t kNumRows = sizeof(kRows) / sizeof(kRows[0]);

// The plan of each row's functional (0) and .out (1) overload, set once at registration.
std::unique_ptr<Plan> plans[kNumRows][2];

template <size_t R, size_t Slot>
void kernel(StableIValue *stack, uint64_t, uint64_t) {
  const Plan &plan = *plans[R][Slot];
  Call call(plan, stack);
  call.allocate_outputs();
  call.finish(kRows[R].run(call, plan), stack);
}

using Boxed = void (*)(StableIValue *, uint64_t, uint64_t);

template <size_t... R>
constexpr std::array<std::array<Boxed, 2>, kNumRows> make_kernels(std::index_sequence<R...>) {
  return {{{kernel<R, 0>, kernel<R, 1>}...}};
}
constexpr auto kKernels = make_kernels(std::make_index_sequence<kNumRows>{});

using torch::stable::detail::StableLibrary;

// Kept for the life of the process, as aiter.torch's Python Library is.
StableLibrary &library(const char *key) {
  static StableLibrary *cpu = nullptr, *cuda = nullptr;
  StableLibrary *&lib = std::string(key) == "CPU" ? cpu : cuda;
  if (lib == nullptr) lib = new StableLibrary(StableLibrary::Kind::IMPL, "aiter", key, __FILE__, __LINE__);
  return *lib;
}

thread_local std::string last_error;

}  // namespace
}  // namespace aiter::torch_ops

#define AITER_TORCH_EXPORT __attribute__((visibility("default")))

extern "C" {

// Looks up torch's current-CUDA-stream function in the torch GPU library
// already loaded (libtorch_cuda.so, or libtorch_hip.so on ROCm): the shim
// declares it only in GPU builds of torch.  Returns 1 when found, so that the
// CUDA kernels can be registered; 0 on a CPU-only torch.
AITER_TORCH_EXPORT int aiter_torch_init(int rocm) {
  using aiter::torch_ops::runtime;
  runtime.gpu = rocm ? kDLROCM : kDLCUDA;
  for (const char *name : {"libtorch_cuda.so", "libtorch_hip.so"}) {
    void *handle = dlopen(name, RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    void *symbol = dlsym(handle, "aoti_torch_get_current_cuda_stream");
    if (symbol != nullptr) {
      runtime.current_stream = reinterpret_cast<int32_t (*)(int32_t, void **)>(symbol);
      return 1;
    }
  }
  return 0;
}

// Registers the kernel of one overload ("rmsnorm" or "rmsnorm.out") for the
// CPU key, and the CUDA key when `cuda`.  Returns 0 when registered, 1 when
// this library has no row for `symbol` or the plan does not fit its C
// function (the caller keeps its own kernel), -1 on an error
// (aiter_torch_last_error says which).
AITER_TORCH_EXPORT int aiter_torch_register(const char *qualname, const char *symbol, const char *plan_text, int cuda) {
  using namespace aiter::torch_ops;
  try {
    std::string name(qualname);
    size_t slot = name.find('.') == std::string::npos ? 0 : 1;
    for (size_t r = 0; r < kNumRows; ++r) {
      if (std::string(kRows[r].symbol) != symbol) continue;
      auto plan = std::make_unique<Plan>(parse_plan("aiter." + name.substr(0, name.find('.')), plan_text));
      if (!kRows[r].accepts(*plan)) return 1;
      plans[r][slot] = std::move(plan);
      library("CPU").impl(qualname, kKernels[r][slot]);
      if (cuda) library("CUDA").impl(qualname, kKernels[r][slot]);
      return 0;
    }
    return 1;
  } catch (const std::exception &e) {
    last_error = e.what();
    return -1;
  }
}

AITER_TORCH_EXPORT const char *aiter_torch_last_error(void) { return aiter::torch_ops::last_error.c_str(); }

}  // extern "C"
