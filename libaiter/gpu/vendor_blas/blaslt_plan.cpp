// Plans of the vendor GEMMs: descriptors, layouts and the heuristic's
// algorithm, made on the first call of a shape and kept (see blaslt_plan.hpp).
#include "gpu/vendor_blas/blaslt_plan.hpp"

#include <array>
#include <cstring>
#include <map>
#include <memory>

namespace aiter {
namespace gpu {
namespace blas {
namespace {

constexpr size_t kMaxResultBytes = sizeof(Plan::algo[0]);

int type_of(const Vendor &v, DType t) {
  switch (t) {
    case DType::f32: return v.types.f32;
    case DType::f16: return v.types.f16;
    case DType::bf16: return v.types.bf16;
    case DType::e4m3fn: return v.types.e4m3fn;
    case DType::e5m2: return v.types.e5m2;
    case DType::e4m3fnuz: return v.types.e4m3fnuz;
    default: return -1;
  }
}

int scale_mode(const Vendor &v, Scaling s) {
  switch (s) {
    case Scaling::outer_vec: return v.scale.outer_vec_32f;
    case Scaling::vec128: return v.scale.vec128_32f;
    case Scaling::blk128x128: return v.scale.blk128x128_32f;
    default: return v.scale.scalar_32f;
  }
}

template <class T>
bool set(Status (*setter)(void *, int, const void *, size_t), void *object, int attribute, T value) {
  return setter(object, attribute, &value, sizeof(value)) == 0;
}

// The matmul descriptor: transposes, bias epilogue, scale modes.
bool make_desc(const Vendor &v, const BlasLtApi &api, const MatmulShape &s, Plan *p) {
  if (api.matmul_desc_create(&p->desc, v.compute_32f, v.types.f32) != 0) return false;
  bool ok = set(api.matmul_desc_set, p->desc, v.desc.transa, int32_t(v.op_t)) &&
            set(api.matmul_desc_set, p->desc, v.desc.transb, int32_t(v.op_n));
  if (ok && s.bias != DType::unknown)
    ok = set(api.matmul_desc_set, p->desc, v.desc.epilogue, uint32_t(v.epilogue_bias)) &&
         set(api.matmul_desc_set, p->desc, v.desc.bias_data_type, int32_t(type_of(v, s.bias)));
  if (ok && s.w_scale != Scaling::none)  // the library's A is our W
    ok = set(api.matmul_desc_set, p->desc, v.desc.a_scale_mode, int32_t(scale_mode(v, s.w_scale))) &&
         set(api.matmul_desc_set, p->desc, v.desc.a_scale_pointer, s.w_scale_ptr);
  if (ok && s.a_scale != Scaling::none)
    ok = set(api.matmul_desc_set, p->desc, v.desc.b_scale_mode, int32_t(scale_mode(v, s.a_scale))) &&
         set(api.matmul_desc_set, p->desc, v.desc.b_scale_pointer, s.a_scale_ptr);
  return ok;
}

bool make_layout(const Vendor &v, const BlasLtApi &api, int type, int64_t rows, int64_t cols, int64_t ld,
                 int64_t batch, int64_t batch_stride, void **layout) {
  if (api.layout_create(layout, type, uint64_t(rows), uint64_t(cols), ld) != 0) return false;
  if (batch <= 1) return true;
  return set(api.layout_set, *layout, v.layout_batch_count, int32_t(batch)) &&
         set(api.layout_set, *layout, v.layout_batch_offset, int64_t(batch_stride));
}

bool make_layouts(const Vendor &v, const BlasLtApi &api, const MatmulShape &s, Plan *p) {
  const int in = type_of(v, s.in), out = type_of(v, s.out);
  return make_layout(v, api, in, s.k, s.n, s.ldw, s.batch, s.w_batch, &p->a) &&
         make_layout(v, api, in, s.k, s.m, s.lda, s.batch, s.a_batch, &p->b) &&
         make_layout(v, api, out, s.n, s.m, s.ldo, s.batch, s.o_batch, &p->d);
}

// The heuristic's algorithms for the shape (up to kPlanAlgos), within the
// workspace and the operands' alignment, in its order.
bool choose_algos(const Vendor &v, const BlasLtApi &api, void *handle, const MatmulShape &s, Plan *p) {
  void *pref = nullptr;
  if (api.pref_create(&pref) != 0) return false;
  bool ok = set(api.pref_set, pref, v.pref_max_workspace, uint64_t(s.workspace_bytes));
  if (ok && v.pref_min_alignment_a >= 0)  // A, B, C, D: our W, A, out, out
    ok = set(api.pref_set, pref, v.pref_min_alignment_a, s.align_w) &&
         set(api.pref_set, pref, v.pref_min_alignment_a + 1, s.align_a) &&
         set(api.pref_set, pref, v.pref_min_alignment_a + 2, s.align_o) &&
         set(api.pref_set, pref, v.pref_min_alignment_a + 3, s.align_o);
  alignas(16) unsigned char results[kPlanAlgos * kMaxResultBytes] = {};
  int returned = 0;
  ok = ok && api.algo_get_heuristic(handle, p->desc, p->a, p->b, p->d, p->d, pref, kPlanAlgos, results,
                                    &returned) == 0;
  api.pref_destroy(pref);
  for (int i = 0; ok && i < returned && i < kPlanAlgos; ++i) {
    const unsigned char *r = results + size_t(i) * v.result_bytes;
    size_t workspace = 0;
    int32_t state = 0;
    std::memcpy(&workspace, r + v.result_workspace_offset, sizeof(workspace));
    std::memcpy(&state, r + v.result_state_offset, sizeof(state));
    if (state == 0 && workspace <= s.workspace_bytes)
      std::memcpy(p->algo[p->algo_count++], r, v.result_bytes);
  }
  return p->algo_count > 0;
}

// 1 x 128 block scales: ours are [M, K / 128] row-major, the library reads
// them K-group by K-group ([K / 128, M]); a transform transposes them.
bool make_scale_transpose(const Vendor &v, const BlasLtApi &api, const MatmulShape &s, Plan *p) {
  const int64_t groups = s.k / 128;
  const int f32 = v.types.f32;
  return api.transform_desc_create(&p->scale_t, f32) == 0 &&
         set(api.transform_desc_set, p->scale_t, v.transform_scale_type, int32_t(f32)) &&
         set(api.transform_desc_set, p->scale_t, v.transform_transa, int32_t(v.op_t)) &&
         api.layout_create(&p->scale_src, f32, uint64_t(groups), uint64_t(s.m), groups) == 0 &&
         api.layout_create(&p->scale_dst, f32, uint64_t(s.m), uint64_t(groups), s.m) == 0;
}

void destroy(const BlasLtApi &api, Plan *p) {
  if (p->desc) api.matmul_desc_destroy(p->desc);
  for (void *layout : {p->a, p->b, p->d, p->scale_src, p->scale_dst})
    if (layout) api.layout_destroy(layout);
  if (p->scale_t) api.transform_desc_destroy(p->scale_t);
}

std::unique_ptr<Plan> make_plan(const Vendor &v, const BlasLtApi &api, void *handle, const MatmulShape &s) {
  auto p = std::make_unique<Plan>();
  if (type_of(v, s.in) < 0 || type_of(v, s.out) < 0) return p;
  p->ok = make_desc(v, api, s, p.get()) && make_layouts(v, api, s, p.get()) && choose_algos(v, api, handle, s, p.get());
  if (p->ok && s.a_scale == Scaling::vec128) p->ok = make_scale_transpose(v, api, s, p.get());
  return p;
}

static_assert(kCublasLt.result_bytes <= sizeof(Plan::algo[0]) && kHipblasLt.result_bytes <= sizeof(Plan::algo[0]),
              "Plan::algo holds heuristic results of either library");

using Key = std::array<int64_t, 24>;

Key key_of(const Vendor &v, int slot, const MatmulShape &s) {
  return {v.device_type, slot, int64_t(s.in), int64_t(s.out), int64_t(s.bias), int64_t(s.w_scale),
          int64_t(s.a_scale), s.m, s.n, s.k, s.lda, s.ldw, s.ldo, s.batch, s.a_batch, s.w_batch, s.o_batch,
          s.align_a, s.align_w, s.align_o, int64_t(s.workspace_bytes), 0, 0, 0};
}

// Plans are a few hundred bytes of host memory; a process that meets more
// shapes than this (every M of a long serving run) starts the cache afresh.
constexpr size_t kMaxPlans = 16384;

std::mutex cache_mutex;
std::map<Key, std::unique_ptr<Plan>> plans;
std::map<int64_t, void *> handles;  // vendor device type * 1000 + slot

}  // namespace

// Called with cache_mutex held (plan_for's lock).
void *handle_for(const Vendor &v, const BlasLtApi &api, int slot) {
  const int64_t id = int64_t(v.device_type) * 1000 + slot;
  auto it = handles.find(id);
  if (it != handles.end()) return it->second;
  void *handle = nullptr;
  if (api.create(&handle) != 0) handle = nullptr;
  handles[id] = handle;  // a failure is kept too: the variant is then never offered on this device
  return handle;
}

const Plan *plan_for(const Vendor &v, const BlasLtApi &api, int slot, const MatmulShape &shape,
                     std::unique_lock<std::mutex> *lock) {
  *lock = std::unique_lock<std::mutex>(cache_mutex);
  const Key key = key_of(v, slot, shape);
  auto it = plans.find(key);
  if (it != plans.end()) return it->second->ok ? it->second.get() : nullptr;
  void *handle = handle_for(v, api, slot);
  if (handle == nullptr) return nullptr;
  if (plans.size() >= kMaxPlans) {
    for (auto &entry : plans) destroy(api, entry.second.get());
    plans.clear();
  }
  std::unique_ptr<Plan> made = make_plan(v, api, handle, shape);
  const Plan *p = made->ok ? made.get() : nullptr;
  plans.emplace(key, std::move(made));
  return p;
}

}  // namespace blas
}  // namespace gpu
}  // namespace aiter
