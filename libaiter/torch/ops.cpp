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
#include "torch/call.hpp"

namespace aiter::torch_ops {
namespace {

template <class T>
struct Tag {};

class Binder {
 public:
  Binder(Call &call, const Plan &plan) : call_(call), plan_(plan) {}

  const DLTensor *take(Tag<const DLTensor *>) {
    const Param &p = next();
    return p.source == Param::Output ? call_.output(p.index) : call_.input(p.index);
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

 private:
  const Param &next() { return plan_.params[position_++]; }

  Call &call_;
  const Plan &plan_;
  size_t position_ = 0;
};

// Calls `function` with its arguments taken from `binder`; a braced list is
// evaluated left to right, so they are taken in parameter order.
template <class... P>
aiter_status invoke(aiter_status (*function)(P...), Binder &binder) {
  std::tuple<P...> arguments{binder.take(Tag<P>{})...};
  return std::apply(function, arguments);
}

// Whether a plan fits parameter P (at registration, so a call never misreads).
template <class P>
bool fits(const Plan &plan, const Param &p) {
  auto kind = [&] { return plan.stack[p.index]; };
  if constexpr (std::is_same_v<P, const DLTensor *> || std::is_same_v<P, DLTensor *>) {
    return p.source == Param::Output || kind() == Kind::Tensor || kind() == Kind::OptionalTensor;
  } else if constexpr (std::is_same_v<P, float>) {
    return p.source == Param::Stack && (kind() == Kind::Float || kind() == Kind::Int);
  } else if constexpr (std::is_same_v<P, int32_t> || std::is_enum_v<P>) {
    return p.source == Param::Stack &&
           (kind() == Kind::Int || kind() == Kind::Bool || (kind() == Kind::Str && !p.names.empty()));
  } else {
    return false;  // a params struct: such ops keep their Python kernels
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

// The C functions whose scalars are plain arguments; the ops with a params
// struct (attention, MLA decode, fused MoE) keep their Python kernels.
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
    AITER_TORCH_ROW(aiter_gemm_a16w16),
    AITER_TORCH_ROW(aiter_gemm_a8w8),
    AITER_TORCH_ROW(aiter_gemm_a8w8_blockscale),
    AITER_TORCH_ROW(aiter_batched_gemm_a16w16),
    AITER_TORCH_ROW(aiter_batched_gemm_a8w8),
    AITER_TORCH_ROW(aiter_topk_softmax),
    AITER_TORCH_ROW(aiter_topk_sigmoid),
    AITER_TORCH_ROW(aiter_grouped_topk),
    AITER_TORCH_ROW(aiter_moe_sorting),
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
