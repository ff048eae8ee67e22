// aiter_mla_decode, aiter_mla_decode_workspace_size, aiter_concat_and_cache_mla:
// argument checks and dispatch.  Index tensors in host memory (block table,
// context lengths, slots) are read and checked here before anything is written;
// device memory is not read here: the GPU kernels bounds-check each index.
#include "ops/mla.hpp"

#include <cinttypes>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "ops/paged_checks.hpp"

namespace aiter {
namespace {

const OpImpl<MlaDecodeArgs> kDecode{"aiter_mla_decode", cpu::mla_decode, gpu::mla_decode};
// The size query reads no data, but its tensors' device must be one this process can run on.
aiter_status ready_on_host(const MlaDecodeArgs &) { return AITER_OK; }
const OpImpl<MlaDecodeArgs> kWorkspaceQuery{"aiter_mla_decode_workspace_size", ready_on_host, gpu::mla_device_ready};
const OpImpl<MlaCacheWriteArgs> kCacheWrite{"aiter_concat_and_cache_mla", cpu::concat_and_cache_mla,
                                            gpu::concat_and_cache_mla};

constexpr std::initializer_list<DType> kQueryTypes = {DType::f16, DType::bf16};

bool on_host(const DLTensor *t) { return t->device.device_type == kDLCPU; }

// Copies `field` when the caller's struct_size covers it (older, shorter structs get defaults).
template <class F>
void take(const aiter_mla_params &from, aiter_mla_params &to, F aiter_mla_params::*field) {
  const size_t end =
      size_t(reinterpret_cast<const char *>(&(to.*field)) - reinterpret_cast<const char *>(&to)) + sizeof(F);
  if (from.struct_size >= end) to.*field = from.*field;
}

aiter_mla_params read_params(ArgCheck &c, const aiter_mla_params *given) {
  aiter_mla_params p;
  aiter_mla_params_init(&p);
  c.require(given != nullptr, AITER_ERR_INVALID_ARGUMENT,
            "params: expected a pointer (softmax_scale has no default), got NULL");
  if (!c.ok()) return p;
  constexpr size_t smallest = offsetof(aiter_mla_params, softmax_scale) + sizeof(float);
  c.require(given->struct_size >= smallest, AITER_ERR_INVALID_ARGUMENT,
            "params: struct_size %zu is too small (expected sizeof(aiter_mla_params) = %zu; call "
            "aiter_mla_params_init first)",
            given->struct_size, sizeof(aiter_mla_params));
  if (!c.ok()) return p;
  take(*given, p, &aiter_mla_params::softmax_scale);
  take(*given, p, &aiter_mla_params::kv_scale);
  take(*given, p, &aiter_mla_params::lse);
  take(*given, p, &aiter_mla_params::num_splits);
  c.require(std::isfinite(p.softmax_scale) && p.softmax_scale > 0.0f, AITER_ERR_INVALID_ARGUMENT,
            "params.softmax_scale: expected a finite value > 0 (the model's scale), got %g", double(p.softmax_scale));
  c.require(p.num_splits >= 0 && p.num_splits <= kMlaMaxSplits, AITER_ERR_INVALID_ARGUMENT,
            "params.num_splits: expected 0 (automatic) or 1 to %" PRId64 ", got %d", kMlaMaxSplits,
            int(p.num_splits));
  return p;
}

void check_scale(ArgCheck &c, float scale, const char *name) {
  c.require(std::isfinite(scale) && scale > 0.0f, AITER_ERR_INVALID_ARGUMENT,
            "%s: expected a finite value > 0 for an fp8 cache, got %g", name, double(scale));
}

// A compact [num_blocks, page_size, 576] latent cache of `value_dtype` or fp8 (e4m3).
void check_latent_cache(ArgCheck &c, const DLTensor *cache, DType value_dtype) {
  c.ndim(cache, "kv_cache", 3).contiguous(cache, "kv_cache");
  c.dtype(cache, "kv_cache", {value_dtype, DType::e4m3fn, DType::e4m3fnuz});
  if (!c.ok()) return;
  c.require(cache->shape[2] == kMlaLatentDim, AITER_ERR_UNSUPPORTED_SHAPE,
            "kv_cache: latent dim %" PRId64 " is not supported (expected 576 = 512 + 64)", cache->shape[2]);
  c.require(cache->shape[1] >= 1, AITER_ERR_INVALID_ARGUMENT, "kv_cache: expected page_size (shape[1]) >= 1, got %s",
            shape_string(cache).c_str());
}

// Positions a block-table row addresses, saturated far above any split plan.
int64_t table_capacity(const DLTensor *cache, const DLTensor *block_table) {
  constexpr int64_t kPlenty = int64_t(1) << 40;
  const int64_t page = cache->shape[1], max_blocks = block_table->shape[1];
  return page > 0 && max_blocks > kPlenty / page ? kPlenty : max_blocks * page;
}

// The splits the workspace must hold for these shapes: the caller's count, or the
// automatic plan's bound.
// An empty q (any extent 0) has no rows and needs no split, whatever its other
// extents: those may be huge, and their products would overflow.  A non-empty
// q's products are bounded by its element count, which the layout check bounds.
int64_t splits_to_hold(const DLTensor *q, const DLTensor *cache, const DLTensor *block_table, int64_t requested) {
  if (requested > 0) return requested;
  if (numel(q) == 0) return 1;
  return mla_max_splits(q->shape[0], q->shape[1] * q->shape[2], table_capacity(cache, block_table));
}

int64_t rows_of(const DLTensor *q) { return numel(q) == 0 ? 0 : q->shape[0] * q->shape[1] * q->shape[2]; }

void check_q_out(ArgCheck &c, const DLTensor *out, const DLTensor *q) {
  c.ndim(q, "q", 4).dtype(q, "q", kQueryTypes).contiguous(q, "q");
  c.ndim(out, "out", 4).same_dtype(out, "out", q, "q").contiguous(out, "out");
  if (!c.ok()) return;
  c.require(q->shape[3] == kMlaLatentDim, AITER_ERR_UNSUPPORTED_SHAPE,
            "q: head dim %" PRId64 " is not supported (expected 576 = 512 + 64)", q->shape[3]);
  c.require(q->shape[1] >= 1 && q->shape[1] <= kMlaMaxNewTokens, AITER_ERR_UNSUPPORTED_SHAPE,
            "q: expected 1 to %" PRId64 " new tokens a sequence (shape[1]), got %" PRId64, kMlaMaxNewTokens,
            q->shape[1]);
  c.dim(out, "out", 0, q->shape[0], "the sequences of q").dim(out, "out", 1, q->shape[1], "the new tokens of q");
  c.dim(out, "out", 2, q->shape[2], "the heads of q");
  c.require(!c.ok() || out->shape[3] == kMlaValueDim, AITER_ERR_UNSUPPORTED_SHAPE,
            "out: head dim %" PRId64 " is not supported (expected 512, the values' dim)", out->shape[3]);
}

void check_lse(ArgCheck &c, const DLTensor *lse, const DLTensor *q) {
  if (!c.ok() || lse == nullptr) return;
  c.tensor(lse, "params.lse").ndim(lse, "params.lse", 3).dtype(lse, "params.lse", {DType::f32});
  c.same_device(lse, "params.lse", q, "q").contiguous(lse, "params.lse");
  if (!c.ok()) return;
  for (int d = 0; d < 3; ++d) c.dim(lse, "params.lse", d, q->shape[d], "q's [B, s_q, Hq]");
}

void check_workspace(ArgCheck &c, MlaDecodeArgs &a, DLTensor *workspace, const DLTensor *q) {
  if (!c.ok()) return;
  const size_t needed = mla_workspace_bytes(rows_of(q), a.max_splits);
  if (workspace == nullptr) {
    c.require(needed == 0, AITER_ERR_INVALID_ARGUMENT,
              "workspace: expected at least %zu bytes (from aiter_mla_decode_workspace_size), got NULL", needed);
    return;
  }
  c.tensor(workspace, "workspace").same_device(workspace, "workspace", q, "q").contiguous(workspace, "workspace");
  if (!c.ok()) return;
  const size_t bytes = size_t(numel(workspace)) * size_t(dtype_size(dtype_of(workspace->dtype)));
  c.require(bytes >= needed, AITER_ERR_INVALID_ARGUMENT,
            "workspace: %zu bytes are too few (expected at least %zu, from aiter_mla_decode_workspace_size)", bytes,
            needed);
  c.require(reinterpret_cast<uintptr_t>(data_ptr<void>(workspace)) % 16 == 0, AITER_ERR_INVALID_ARGUMENT,
            "workspace: expected a 16-byte aligned address");
  a.workspace = needed > 0 ? data_ptr<void>(workspace) : nullptr;
}

void check_decode(ArgCheck &c, MlaDecodeArgs &a, DLTensor *out, const DLTensor *q, const DLTensor *cache,
                  const DLTensor *block_table, const DLTensor *context_lens, DLTensor *workspace,
                  const aiter_mla_params *params) {
  c.tensor(out, "out").tensor(q, "q").tensor(cache, "kv_cache");
  c.tensor(block_table, "block_table").tensor(context_lens, "context_lens");
  c.optional(workspace, "workspace");
  const aiter_mla_params p = read_params(c, params);
  check_q_out(c, out, q);
  c.same_device(out, "out", q, "q").same_device(cache, "kv_cache", q, "q");
  c.same_device(block_table, "block_table", q, "q").same_device(context_lens, "context_lens", q, "q");
  if (!c.ok()) return;
  check_latent_cache(c, cache, dtype_of(q->dtype));
  const int64_t batch = q->shape[0];
  c.ndim(block_table, "block_table", 2).dtype(block_table, "block_table", {DType::i32});
  c.dim(block_table, "block_table", 0, batch, "the sequences of q").unit_last_stride(block_table, "block_table");
  c.ndim(context_lens, "context_lens", 1).dtype(context_lens, "context_lens", {DType::i32});
  c.dim(context_lens, "context_lens", 0, batch, "the sequences of q").contiguous(context_lens, "context_lens");
  check_lse(c, p.lse, q);
  for (const DLTensor *index : {block_table, context_lens}) {
    const char *name = index == block_table ? "block_table" : "context_lens";
    c.disjoint(index, name, out, "out").disjoint(index, name, p.lse, "params.lse");
    c.disjoint(index, name, workspace, "workspace");
  }
  const DType cache_dtype = c.ok() ? dtype_of(cache->dtype) : DType::unknown;
  if (is_fp8(cache_dtype)) check_scale(c, p.kv_scale, "params.kv_scale");
  if (!c.ok()) return;
  if (on_host(q)) check_paged_context(c, block_table, context_lens, cache->shape[0], cache->shape[1]);
  a.max_splits = splits_to_hold(q, cache, block_table, p.num_splits);
  check_workspace(c, a, workspace, q);
  if (!c.ok()) return;
  a.dtype = dtype_of(q->dtype), a.cache_dtype = cache_dtype;
  a.q = data_ptr<const void>(q), a.out = data_ptr<void>(out);
  a.lse = p.lse != nullptr ? data_ptr<float>(p.lse) : nullptr;
  a.kv_cache = data_ptr<const void>(cache);
  a.num_blocks = cache->shape[0], a.page_size = cache->shape[1];
  a.block_table = data_ptr<const int32_t>(block_table);
  a.block_table_stride = stride(block_table, 0);
  a.max_blocks = block_table->shape[1];
  a.context_lens = data_ptr<const int32_t>(context_lens);
  a.batch = batch, a.q_tokens = q->shape[1], a.q_heads = q->shape[2];
  a.softmax_scale = p.softmax_scale;
  a.kv_scale = is_fp8(cache_dtype) ? p.kv_scale : 1.0f;
  a.requested_splits = p.num_splits;
}

template <class S>
void check_slot_values(ArgCheck &c, const S *slots, int64_t tokens, int64_t num_slots) {
  for (int64_t t = 0; t < tokens && c.ok(); ++t)
    c.require(slots[t] < num_slots, AITER_ERR_INVALID_ARGUMENT,
              "slot_mapping[%" PRId64 "] = %" PRId64 " is out of range: expected < num_blocks * page_size = %" PRId64
              " (or negative to skip the token)",
              t, int64_t(slots[t]), num_slots);
}

void check_cache_write(ArgCheck &c, MlaCacheWriteArgs &a, DLTensor *cache, const DLTensor *kv_c,
                       const DLTensor *k_pe, const DLTensor *slot_mapping, float scale) {
  c.tensor(cache, "kv_cache").tensor(kv_c, "kv_c").tensor(k_pe, "k_pe").tensor(slot_mapping, "slot_mapping");
  c.ndim(kv_c, "kv_c", 2).dtype(kv_c, "kv_c", kQueryTypes).unit_last_stride(kv_c, "kv_c");
  c.ndim(k_pe, "k_pe", 2).same_dtype(k_pe, "k_pe", kv_c, "kv_c").unit_last_stride(k_pe, "k_pe");
  c.same_device(k_pe, "k_pe", kv_c, "kv_c").same_device(cache, "kv_cache", kv_c, "kv_c");
  c.same_device(slot_mapping, "slot_mapping", kv_c, "kv_c");
  if (!c.ok()) return;
  c.require(kv_c->shape[1] == kMlaValueDim, AITER_ERR_UNSUPPORTED_SHAPE,
            "kv_c: dim %" PRId64 " is not supported (expected 512)", kv_c->shape[1]);
  c.require(k_pe->shape[1] == kMlaRopeDim, AITER_ERR_UNSUPPORTED_SHAPE,
            "k_pe: dim %" PRId64 " is not supported (expected 64)", k_pe->shape[1]);
  c.dim(k_pe, "k_pe", 0, kv_c->shape[0], "the tokens of kv_c");
  check_latent_cache(c, cache, dtype_of(kv_c->dtype));
  c.ndim(slot_mapping, "slot_mapping", 1).dtype(slot_mapping, "slot_mapping", {DType::i32, DType::i64});
  c.dim(slot_mapping, "slot_mapping", 0, kv_c->shape[0], "the tokens of kv_c");
  c.contiguous(slot_mapping, "slot_mapping").disjoint(slot_mapping, "slot_mapping", cache, "kv_cache");
  const DType cache_dtype = c.ok() ? dtype_of(cache->dtype) : DType::unknown;
  if (is_fp8(cache_dtype)) check_scale(c, scale, "scale");
  if (!c.ok()) return;
  const bool int64_slots = dtype_of(slot_mapping->dtype) == DType::i64;
  const int64_t num_slots = cache->shape[0] * cache->shape[1];  // fits: the cache's element count does
  if (on_host(kv_c)) {
    if (int64_slots)
      check_slot_values(c, data_ptr<const int64_t>(slot_mapping), kv_c->shape[0], num_slots);
    else
      check_slot_values(c, data_ptr<const int32_t>(slot_mapping), kv_c->shape[0], num_slots);
  }
  if (!c.ok()) return;
  a.dtype = dtype_of(kv_c->dtype), a.cache_dtype = cache_dtype;
  a.kv_c = data_ptr<const void>(kv_c), a.k_pe = data_ptr<const void>(k_pe);
  a.kv_c_stride = stride(kv_c, 0), a.k_pe_stride = stride(k_pe, 0);
  a.kv_cache = data_ptr<void>(cache);
  a.tokens = kv_c->shape[0];
  a.num_slots = num_slots;
  a.slot_mapping = data_ptr<const void>(slot_mapping);
  a.slots_are_int64 = int64_slots;
  a.scale = is_fp8(cache_dtype) ? scale : 1.0f;
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API void aiter_mla_params_init(aiter_mla_params *params) {
  if (params == nullptr) return;
  *params = aiter_mla_params{};
  params->struct_size = sizeof(aiter_mla_params);
  params->softmax_scale = 0.0f;
  params->kv_scale = 1.0f;
}

AITER_API aiter_status aiter_mla_decode(DLTensor *out, const DLTensor *q, const DLTensor *kv_cache,
                                        const DLTensor *block_table, const DLTensor *context_lens,
                                        DLTensor *workspace, const aiter_mla_params *params, void *stream) {
  return guard(kDecode.name, [&] {
    ArgCheck c(kDecode.name);
    MlaDecodeArgs a{};
    check_decode(c, a, out, q, kv_cache, block_table, context_lens, workspace, params);
    return c.ok() ? run(kDecode, q, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_mla_decode_workspace_size(size_t *bytes, const DLTensor *q, const DLTensor *kv_cache,
                                                       const DLTensor *block_table, int32_t num_splits) {
  return guard(kWorkspaceQuery.name, [&] {
    ArgCheck c(kWorkspaceQuery.name);
    c.require(bytes != nullptr, AITER_ERR_INVALID_ARGUMENT, "bytes: expected a pointer, got NULL");
    c.tensor(q, "q").tensor(kv_cache, "kv_cache").tensor(block_table, "block_table");
    c.same_device(kv_cache, "kv_cache", q, "q").same_device(block_table, "block_table", q, "q");
    c.ndim(q, "q", 4).ndim(kv_cache, "kv_cache", 3).ndim(block_table, "block_table", 2);
    c.require(num_splits >= 0 && num_splits <= kMlaMaxSplits, AITER_ERR_INVALID_ARGUMENT,
              "num_splits: expected 0 (automatic) or 1 to %" PRId64 ", got %d", kMlaMaxSplits, int(num_splits));
    if (!c.ok()) return c.status();
    const aiter_status s = run(kWorkspaceQuery, q, MlaDecodeArgs{}, nullptr);
    if (s != AITER_OK) return s;
    *bytes = mla_workspace_bytes(rows_of(q), splits_to_hold(q, kv_cache, block_table, num_splits));
    return AITER_OK;
  });
}

AITER_API aiter_status aiter_concat_and_cache_mla(DLTensor *kv_cache, const DLTensor *kv_c, const DLTensor *k_pe,
                                                  const DLTensor *slot_mapping, float scale, void *stream) {
  return guard(kCacheWrite.name, [&] {
    ArgCheck c(kCacheWrite.name);
    MlaCacheWriteArgs a{};
    check_cache_write(c, a, kv_cache, kv_c, k_pe, slot_mapping, scale);
    return c.ok() ? run(kCacheWrite, kv_c, a, stream) : c.status();
  });
}

}  // extern "C"
