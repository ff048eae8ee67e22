// Choosing the kernel variant of a tuned op (GEMM, MoE): forced by the caller
// (tuners, tests), else a tuned table row, else the heuristic, which is the
// first variant in list order that can run the call and declares itself a good
// fit (or, failing that, the first that can run it).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "tuning/config.hpp"

namespace aiter {

// How a variant was chosen, as aiter_last_kernel_variant reports it.
enum class Chosen { heuristic = 0, tuned = 1, forced = 2 };

// One kernel of an op.  `call` is null on the CPU.
template <class Args>
struct Variant {
  const char *name;                                        // unique within the op and backend
  bool (*supports)(const Args &args, const GpuCall *call);  // can run this call (shape, dtype, alignment, target)
  bool (*good_fit)(const Args &args);                       // the heuristic's preference; null = always
  aiter_status (*run)(const Args &args, const GpuCall *call);
};

template <class Args>
struct VariantList {
  const Variant<Args> *items = nullptr;
  size_t count = 0;
};

// A tuned op: its names, its variants per backend, and its table key.
template <class Args>
struct TunedOp {
  const char *symbol;  // "aiter_gemm_a16w16", for messages
  const char *op;      // "gemm_a16w16", the table key
  VariantList<Args> cpu;
  VariantList<Args> gpu;                        // unless gpu_list is set
  void (*key)(const Args &args, TuneKey *key);  // fills batch, m, n, k and the dtypes
  // Where set, the GPU variants come from gpu_list(gpu_index) at their first
  // use, not when the op's table is made: the GEMMs' GPU lists (hundreds of
  // kernel names) took 0.1 ms of a process's first CPU GEMM, which never reads them.
  VariantList<Args> (*gpu_list)(int index) = nullptr;
  int gpu_index = 0;

  VariantList<Args> gpu_variants() const { return gpu_list != nullptr ? gpu_list(gpu_index) : gpu; }
};

// ---- type-erased pieces (tuning/select.cpp) ------------------------------------
// The variant forced for `op` on this thread, or null.
const char *forced_variant(const char *op);
void record_choice(const char *op, const char *variant, Chosen how);
// Target and compute units of the backend a call runs on.
aiter_status backend_identity(const GpuCall *call, TuneKey *key);

// The names of an op's variants, for aiter_kernel_variants / force checks.
struct TunedOpNames {
  const char *op;
  std::vector<const char *> (*names)(DLDeviceType backend);
};
// Every tuned op of the library (listed in tuning/select.cpp).
const std::vector<TunedOpNames> &tuned_ops();

template <class Args>
std::vector<const char *> variant_names(const TunedOp<Args> &op, DLDeviceType backend) {
  const VariantList<Args> list = backend == kDLCPU ? op.cpu : op.gpu_variants();
  std::vector<const char *> names;
  for (size_t i = 0; i < list.count; ++i) names.push_back(list.items[i].name);
  return names;
}

// ---- selection -------------------------------------------------------------------
template <class Args>
const Variant<Args> *find_variant(const VariantList<Args> &list, const std::string &name) {
  for (size_t i = 0; i < list.count; ++i)
    if (name == list.items[i].name) return &list.items[i];
  return nullptr;
}

template <class Args>
const Variant<Args> *heuristic_variant(const VariantList<Args> &list, const Args &args, const GpuCall *call) {
  const Variant<Args> *runnable = nullptr;
  for (size_t i = 0; i < list.count; ++i) {
    const Variant<Args> &v = list.items[i];
    if (!v.supports(args, call)) continue;
    if (v.good_fit == nullptr || v.good_fit(args)) return &v;
    if (runnable == nullptr) runnable = &v;
  }
  return runnable;
}

template <class Args>
aiter_status run_forced(const TunedOp<Args> &op, const VariantList<Args> &list, const char *name, const Args &args,
                        const GpuCall *call) {
  const Variant<Args> *v = find_variant(list, name);
  if (v == nullptr)
    return fail(AITER_ERR_INVALID_ARGUMENT, "%s: the forced variant %s does not exist on this backend", op.symbol,
                name);
  if (!v->supports(args, call))
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "%s: the forced variant %s cannot run this call (its shape, dtypes, alignment or this GPU)",
                op.symbol, name);
  const aiter_status s = v->run(args, call);
  if (s == AITER_OK) record_choice(op.op, v->name, Chosen::forced);
  return s;
}

// Runs `op` on the backend of `where`: forced, tuned or heuristic variant.
template <class Args>
aiter_status run_tuned(const TunedOp<Args> &op, const DLTensor *where, const Args &args, void *stream) {
  const bool on_cpu = where->device.device_type == kDLCPU;
  const GpuCall gpu_call{where->device, stream};
  const GpuCall *call = on_cpu ? nullptr : &gpu_call;
  const VariantList<Args> list = on_cpu ? op.cpu : op.gpu_variants();
  if (list.count == 0) return no_gpu_backend(op.symbol, where);
  if (const char *forced = forced_variant(op.op)) return run_forced(op, list, forced, args, call);

  TuneKey key;
  key.op = op.op;
  aiter_status s = backend_identity(call, &key);
  if (s != AITER_OK) return s;
  op.key(args, &key);
  const std::string tuned = tuned_variant(key);
  const Variant<Args> *v = tuned.empty() ? nullptr : find_variant(list, tuned);
  Chosen how = Chosen::tuned;
  if (v != nullptr && !v->supports(args, call)) v = nullptr;  // a row for another alignment or target
  if (v == nullptr) {
    if (tuned.empty()) note_untuned(key);
    v = heuristic_variant(list, args, call);
    how = Chosen::heuristic;
  }
  if (v == nullptr)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: no kernel variant can run this call (M=%lld N=%lld K=%lld)",
                op.symbol, (long long)key.m, (long long)key.n, (long long)key.k);
  log_lookup(key, v->name, how == Chosen::tuned ? "tuned" : "heuristic");
  s = v->run(args, call);
  if (s == AITER_OK) record_choice(op.op, v->name, how);
  return s;
}

}  // namespace aiter
