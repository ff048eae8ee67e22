// The type-erased half of kernel selection: forced variants and the last
// choice (both per thread), the backend's identity for the table key, and the
// public functions of aiter/tuning.h.
#include "tuning/select.hpp"

#include <cstring>
#include <map>
#include <string>

#include "aiter/tuning.h"
#include "core/caller_values.hpp"
#include "core/parallel.hpp"
#include "gpu/launch.hpp"
#include "ops/gemm.hpp"
#include "ops/moe.hpp"

namespace aiter {
namespace {

thread_local std::map<std::string, std::string> forced;  // op -> variant

struct Choice {
  const char *op = nullptr;
  const char *variant = nullptr;
  Chosen how = Chosen::heuristic;
};
thread_local Choice last_choice;

const TunedOpNames *find_op(const char *op) {
  for (const TunedOpNames &t : tuned_ops())
    if (std::strcmp(t.op, op) == 0) return &t;
  return nullptr;
}

std::string op_list() {
  std::string s;
  for (const TunedOpNames &t : tuned_ops()) s += (s.empty() ? "" : ", ") + std::string(t.op);
  return s;
}

bool has_variant(const TunedOpNames &op, const char *variant) {
  for (DLDeviceType backend : {kDLCPU, kDLCUDA})
    for (const char *name : op.names(backend))
      if (std::strcmp(name, variant) == 0) return true;
  return false;
}

}  // namespace

const std::vector<TunedOpNames> &tuned_ops() {
  static const std::vector<TunedOpNames> ops = [] {
    std::vector<TunedOpNames> all = gemm_tuned_op_names();
    for (const TunedOpNames &moe : moe_tuned_op_names()) all.push_back(moe);
    return all;
  }();
  return ops;
}

const char *forced_variant(const char *op) {
  if (forced.empty()) return nullptr;
  auto it = forced.find(op);
  return it == forced.end() ? nullptr : it->second.c_str();
}

void record_choice(const char *op, const char *variant, Chosen how) { last_choice = Choice{op, variant, how}; }

aiter_status backend_identity(const GpuCall *call, TuneKey *key) {
  if (call == nullptr) {
    key->target = "cpu";
    key->compute_units = cpu_threads();
    return AITER_OK;
  }
  gpu::Driver *driver = nullptr;
  aiter_status s = gpu::driver_for(call->device.device_type, &driver);
  if (s == AITER_OK) s = gpu::code_target(driver, call->device.device_id, &key->target);
  if (s == AITER_OK) s = gpu::multiprocessors(*call, &key->compute_units);
  return s;
}

}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_kernel_variants(const char *op, DLDevice device, const char **names, int capacity,
                                             int *count) {
  return guard("aiter_kernel_variants", [&] {
    if (op == nullptr || count == nullptr || capacity < 0 || (capacity > 0 && names == nullptr))
      return fail(AITER_ERR_INVALID_ARGUMENT,
                  "aiter_kernel_variants: op and count must not be NULL, capacity >= 0, names non-NULL when "
                  "capacity > 0");
    const TunedOpNames *t = find_op(op);
    if (t == nullptr)
      return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_kernel_variants: op: unknown op '%s' (known: %s)", op,
                  op_list().c_str());
    if (!runnable_device_type(device_type_code(device)))  // any int may arrive from C
      return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_kernel_variants: device: expected kDLCPU, kDLCUDA or kDLROCM");
    const std::vector<const char *> all = t->names(device.device_type == kDLCPU ? kDLCPU : kDLCUDA);
    *count = int(all.size());
    for (int i = 0; i < capacity && i < int(all.size()); ++i) names[i] = all[size_t(i)];
    return AITER_OK;
  });
}

AITER_API aiter_status aiter_force_kernel_variant(const char *op, const char *variant) {
  return guard("aiter_force_kernel_variant", [&] {
    if (op == nullptr) return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_force_kernel_variant: op must not be NULL");
    const TunedOpNames *t = find_op(op);
    if (t == nullptr)
      return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_force_kernel_variant: op: unknown op '%s' (known: %s)", op,
                  op_list().c_str());
    if (variant == nullptr || variant[0] == '\0') {
      forced.erase(op);
      return AITER_OK;
    }
    if (!has_variant(*t, variant))
      return fail(AITER_ERR_INVALID_ARGUMENT,
                  "aiter_force_kernel_variant: variant: '%s' is not a variant of %s (aiter_kernel_variants lists "
                  "them)",
                  variant, op);
    forced[op] = variant;
    return AITER_OK;
  });
}

AITER_API aiter_status aiter_last_kernel_variant(const char **op, const char **variant, int *how) {
  return guard("aiter_last_kernel_variant", [&] {
    if (op == nullptr || variant == nullptr || how == nullptr)
      return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_last_kernel_variant: op, variant and how must not be NULL");
    if (last_choice.op == nullptr)
      return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_last_kernel_variant: no tuned op has run on this thread");
    *op = last_choice.op;
    *variant = last_choice.variant;
    *how = int(last_choice.how);
    return AITER_OK;
  });
}

AITER_API aiter_status aiter_tuned_config_device(DLDevice device, const char **target, int *compute_units) {
  return guard("aiter_tuned_config_device", [&] {
    if (target == nullptr || compute_units == nullptr)
      return fail(AITER_ERR_INVALID_ARGUMENT, "aiter_tuned_config_device: target and compute_units must not be NULL");
    if (!runnable_device_type(device_type_code(device)))  // any int may arrive from C
      return fail(AITER_ERR_INVALID_ARGUMENT,
                  "aiter_tuned_config_device: device: expected kDLCPU, kDLCUDA or kDLROCM");
    const GpuCall call{device, nullptr};
    TuneKey key;
    const aiter_status s = backend_identity(device.device_type == kDLCPU ? nullptr : &call, &key);
    if (s != AITER_OK) return s;
    thread_local std::string name;
    name = key.target;
    *target = name.c_str();
    *compute_units = key.compute_units;
    return AITER_OK;
  });
}

AITER_API aiter_status aiter_reload_tuned_configs(void) {
  return guard("aiter_reload_tuned_configs", [] { return reload_tuned_configs(); });
}

AITER_API const char *aiter_tuned_config_sources(void) {
  thread_local std::string text;
  text = tuned_config_sources();
  return text.c_str();
}

}  // extern "C"
