// aiter_rope: argument checks (including every position value of host tensors) and dispatch.
#include "ops/rope.hpp"

#include <algorithm>

#include "core/backend.hpp"
#include "core/caller_values.hpp"
#include "core/error.hpp"

namespace aiter {
namespace {

const OpImpl<RopeArgs> kRope{"aiter_rope", cpu::rope, gpu::rope};

// An empty tensor's strides say nothing (NumPy gives it zero strides), so its
// layout is not checked.
bool is_empty(const DLTensor *t) { return numel(t) == 0; }

// q or k: [T, H, D], float, unit stride along D, on q's device, same T and D as q.
void check_heads(ArgCheck &c, const DLTensor *t, const char *name, const DLTensor *q) {
  c.ndim(t, name, 3).dtype(t, name, {DType::f32, DType::f16, DType::bf16});
  if (c.ok() && !is_empty(t)) c.unit_last_stride(t, name);
  if (t == q || !c.ok()) return;
  c.same_dtype(t, name, q, "q").same_device(t, name, q, "q");
  c.dim(t, name, 0, q->shape[0], "the tokens of q").dim(t, name, 2, q->shape[2], "the head dim of q");
}

// The op writes every [D]-row of q and k in place from several threads, so the
// rows of one tensor must not share memory (a zero head stride, say).  Sorting
// the token and head dims by stride, each must step past everything inside it.
void check_rows_disjoint(ArgCheck &c, const DLTensor *t, const char *name) {
  if (!c.ok() || is_empty(t)) return;
  struct Dim { int64_t extent, stride; };
  Dim dims[2] = {{t->shape[0], stride(t, 0)}, {t->shape[1], stride(t, 1)}};
  if (dims[1].stride < dims[0].stride) std::swap(dims[0], dims[1]);
  int64_t span = t->shape[2];  // elements one row covers
  for (const Dim &d : dims) {
    if (d.extent <= 1) continue;
    c.require(d.stride >= span, AITER_ERR_INVALID_ARGUMENT,
              "%s: rows overlap (a stride of %lld elements between [%lld]-element rows spanning %lld); "
              "in-place rotation needs disjoint heads",
              name, (long long)d.stride, (long long)t->shape[2], (long long)span);
    span += d.stride * (d.extent - 1);
  }
}

// cos_sin_cache [max_position, R]: compact, fp32 or q's dtype, R even and <= D.
void check_cache(ArgCheck &c, const DLTensor *cache, const DLTensor *q) {
  c.ndim(cache, "cos_sin_cache", 2).dtype(cache, "cos_sin_cache", {DType::f32, dtype_of(q->dtype)});
  if (c.ok() && !is_empty(cache)) c.contiguous(cache, "cos_sin_cache");
  c.same_device(cache, "cos_sin_cache", q, "q");
  if (!c.ok()) return;
  const int64_t rotary = cache->shape[1], head_dim = q->shape[2];
  c.require(rotary >= 2 && rotary % 2 == 0, AITER_ERR_INVALID_ARGUMENT,
            "cos_sin_cache: expected an even rotary dim >= 2 as shape[1], got shape %s",
            shape_string(cache).c_str());
  c.require(rotary <= head_dim, AITER_ERR_INVALID_ARGUMENT,
            "cos_sin_cache: rotary dim %lld (shape[1]) exceeds the head dim %lld of q", (long long)rotary,
            (long long)head_dim);
}

template <class I>
void check_position_values(ArgCheck &c, const I *pos, int64_t n, int64_t stride, int64_t max_position) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = int64_t(pos[i * stride]);
    if (p >= 0 && p < max_position) continue;
    c.require(false, AITER_ERR_INVALID_ARGUMENT,
              "positions: value %lld at index %lld is out of range [0, %lld) (cos_sin_cache.shape[0])",
              (long long)p, (long long)i, (long long)max_position);
    return;
  }
}

// Scans the positions before anything is written.  Device memory cannot be read
// here: a GPU backend has to do its own bounds check.
void check_positions(ArgCheck &c, const RopeArgs &a, const DLTensor *positions) {
  if (!c.ok() || positions->device.device_type != kDLCPU) return;
  if (a.pos_dtype == DType::i32)
    check_position_values(c, static_cast<const int32_t *>(a.positions), a.tokens, a.pos_stride, a.max_position);
  else
    check_position_values(c, static_cast<const int64_t *>(a.positions), a.tokens, a.pos_stride, a.max_position);
}

RopeHeads heads_of(const DLTensor *t) {
  if (t == nullptr) return RopeHeads{};
  return RopeHeads{data_ptr<void>(t), t->shape[1], stride(t, 0), stride(t, 1)};
}

void check_rope(ArgCheck &c, RopeArgs &a, DLTensor *q, DLTensor *k, const DLTensor *positions,
                const DLTensor *cache, int32_t style) {
  c.tensor(q, "q").optional(k, "k").tensor(positions, "positions").tensor(cache, "cos_sin_cache");
  check_heads(c, q, "q", q);
  if (k != nullptr) check_heads(c, k, "k", q);
  if (!c.ok()) return;
  c.ndim(positions, "positions", 1).dtype(positions, "positions", {DType::i32, DType::i64});
  c.dim(positions, "positions", 0, q->shape[0], "the tokens of q").same_device(positions, "positions", q, "q");
  check_cache(c, cache, q);
  c.require(style == AITER_ROPE_NEOX || style == AITER_ROPE_GPTJ, AITER_ERR_INVALID_ARGUMENT,
            "style: expected AITER_ROPE_NEOX (0) or AITER_ROPE_GPTJ (1), got %d", int(style));
  check_rows_disjoint(c, q, "q");
  if (k != nullptr) check_rows_disjoint(c, k, "k");
  c.disjoint(positions, "positions", q, "q").disjoint(positions, "positions", k, "k");
  if (!c.ok()) return;
  a.dtype = dtype_of(q->dtype);
  a.cache_dtype = dtype_of(cache->dtype);
  a.pos_dtype = dtype_of(positions->dtype);
  a.tokens = q->shape[0];
  a.head_dim = q->shape[2];
  a.rotary_dim = cache->shape[1];
  a.max_position = cache->shape[0];
  a.q = heads_of(q);
  a.k = heads_of(k);
  a.positions = data_ptr<const void>(positions);
  a.pos_stride = stride(positions, 0);
  a.cache = data_ptr<const void>(cache);
  a.style = style == AITER_ROPE_GPTJ ? AITER_ROPE_GPTJ : AITER_ROPE_NEOX;
  check_positions(c, a, positions);
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API aiter_status aiter_rope(DLTensor *q, DLTensor *k, const DLTensor *positions,
                                  const DLTensor *cos_sin_cache, aiter_rope_style style, void *stream) {
  return guard(kRope.name, [&] {
    ArgCheck c(kRope.name);
    RopeArgs a{};
    check_rope(c, a, q, k, positions, cos_sin_cache, enum_value(style));
    return c.ok() ? run(kRope, q, a, stream) : c.status();
  });
}

}  // extern "C"
