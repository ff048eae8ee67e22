// aiter_prefill_attention, aiter_paged_decode_attention, aiter_reshape_and_cache:
// argument checks and dispatch.  The index tensors (cu_seqlens, block_table,
// context_lens, slot_mapping) address memory, so every value a kernel will use is
// checked here, on the host, before anything is written -- when they are in host
// memory.  Device memory is not read here: GPU kernels bounds-check each index.
#include "ops/attention.hpp"

#include <cinttypes>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "ops/paged_checks.hpp"

namespace aiter {
namespace {

const OpImpl<PrefillArgs> kPrefill{"aiter_prefill_attention", cpu::prefill_attention, gpu::prefill_attention};
const OpImpl<DecodeArgs> kDecode{"aiter_paged_decode_attention", cpu::paged_decode_attention,
                                 gpu::paged_decode_attention};
const OpImpl<DecodeArgs> kPagedPrefill{"aiter_paged_prefill_attention", cpu::paged_prefill_attention,
                                       gpu::paged_prefill_attention};
const OpImpl<DecodeArgs> kDecodeSplit{"aiter_paged_decode_attention_split_kv", cpu::paged_decode_attention,
                                      gpu::paged_decode_attention};
// The size query reads no data, but its tensors' device must be one this process
// can run on, as for every op (the GPU entry only opens the device).
aiter_status device_ready_on_host(const DecodeArgs &) { return AITER_OK; }
const OpImpl<DecodeArgs> kWorkspaceQuery{"aiter_paged_decode_attention_workspace_size", device_ready_on_host,
                                         gpu::decode_device_ready};
const OpImpl<CacheWriteArgs> kCacheWrite{"aiter_reshape_and_cache", cpu::reshape_and_cache,
                                         gpu::reshape_and_cache};

constexpr std::initializer_list<DType> kFloatTypes = {DType::f32, DType::f16, DType::bf16};
constexpr int64_t kMaxNewTokens = 8;  // new tokens a sequence in multi-token decode

// ---- params -------------------------------------------------------------------

// Copies `field` from the caller's struct when its struct_size covers the field:
// a caller built against an older, shorter struct gets defaults for the rest.
template <class F>
void take(const aiter_attention_params &from, aiter_attention_params &to, F aiter_attention_params::*field) {
  const size_t end = size_t(reinterpret_cast<const char *>(&(to.*field)) - reinterpret_cast<const char *>(&to)) +
                     sizeof(F);
  if (from.struct_size >= end) to.*field = from.*field;
}

aiter_attention_params read_params(ArgCheck &c, const aiter_attention_params *given) {
  aiter_attention_params p;
  aiter_attention_params_init(&p);
  if (given == nullptr) return p;
  constexpr size_t smallest = offsetof(aiter_attention_params, softmax_scale) + sizeof(float);
  c.require(given->struct_size >= smallest, AITER_ERR_INVALID_ARGUMENT,
            "params: struct_size %zu is too small (expected sizeof(aiter_attention_params) = %zu; "
            "call aiter_attention_params_init first)",
            given->struct_size, sizeof(aiter_attention_params));
  if (!c.ok()) return p;
  take(*given, p, &aiter_attention_params::softmax_scale);
  take(*given, p, &aiter_attention_params::causal);
  take(*given, p, &aiter_attention_params::window_left);
  take(*given, p, &aiter_attention_params::k_scale);
  take(*given, p, &aiter_attention_params::v_scale);
  take(*given, p, &aiter_attention_params::lse);
  take(*given, p, &aiter_attention_params::softcap);
  c.require(std::isfinite(p.softmax_scale) && p.softmax_scale >= 0.0f, AITER_ERR_INVALID_ARGUMENT,
            "params.softmax_scale: expected 0 (meaning 1/sqrt(D)) or a finite value > 0, got %g",
            double(p.softmax_scale));
  c.require(std::isfinite(p.softcap) && p.softcap >= 0.0f, AITER_ERR_INVALID_ARGUMENT,
            "params.softcap: expected 0 (off) or a finite value > 0, got %g", double(p.softcap));
  return p;
}

// fp8 scales must be usable divisors and multipliers.
void check_scale(ArgCheck &c, float scale, const char *name) {
  c.require(std::isfinite(scale) && scale > 0.0f, AITER_ERR_INVALID_ARGUMENT,
            "%s: expected a finite value > 0 for an fp8 cache, got %g", name, double(scale));
}

// ---- shapes ---------------------------------------------------------------------

// Heads and head dim: `q` holds the query heads at dim ndim - 2, `kv` the kv heads
// at dim kv_head_dim; both end in D, which is 64 or 128 (also 192 and 256 where
// `wide_heads`: prefill).  v_head_dim is D; prefill sets its own.
AttentionShape check_heads(ArgCheck &c, const DLTensor *q, const DLTensor *kv, const char *kv_name,
                           int kv_head_dim, const aiter_attention_params &p, bool wide_heads = false) {
  AttentionShape s;
  if (!c.ok()) return s;
  s.q_heads = q->shape[q->ndim - 2];
  s.kv_heads = kv->shape[kv_head_dim];
  s.head_dim = q->shape[q->ndim - 1];
  s.v_head_dim = s.head_dim;
  s.softcap = p.softcap;
  c.dim(kv, kv_name, kv->ndim - 1, s.head_dim, "the head dim of q");
  c.require(s.kv_heads >= 1, AITER_ERR_INVALID_ARGUMENT, "%s: expected at least 1 kv head, got shape %s", kv_name,
            shape_string(kv).c_str());
  c.require(s.kv_heads < 1 || s.q_heads % s.kv_heads == 0, AITER_ERR_INVALID_ARGUMENT,
            "q: the %" PRId64 " query heads must be a multiple of the %" PRId64 " kv heads of %s", s.q_heads,
            s.kv_heads, kv_name);
  if (wide_heads)
    c.require(s.head_dim == 64 || s.head_dim == 128 || s.head_dim == 192 || s.head_dim == 256,
              AITER_ERR_UNSUPPORTED_SHAPE, "q: head dim %" PRId64 " is not supported (expected 64, 128, 192 or 256)",
              s.head_dim);
  else
    c.require(s.head_dim == 64 || s.head_dim == 128, AITER_ERR_UNSUPPORTED_SHAPE,
              "q: head dim %" PRId64 " is not supported (expected 64 or 128)", s.head_dim);
  s.softmax_scale = p.softmax_scale > 0.0f ? p.softmax_scale : float(1.0 / std::sqrt(double(s.head_dim)));
  s.window_left = p.window_left < 0 ? -1 : p.window_left;
  return s;
}

// A compact [num_blocks, page_size, Hkv, D] cache pair of the same shape and dtype.
void check_cache_pair(ArgCheck &c, const DLTensor *k_cache, const DLTensor *v_cache, DType value_dtype) {
  c.ndim(k_cache, "k_cache", 4).contiguous(k_cache, "k_cache");
  c.dtype(k_cache, "k_cache", {value_dtype, DType::e4m3fn, DType::e4m3fnuz, DType::e5m2});
  c.same_shape(v_cache, "v_cache", k_cache, "k_cache").same_dtype(v_cache, "v_cache", k_cache, "k_cache");
  c.contiguous(v_cache, "v_cache");
  if (!c.ok()) return;
  c.require(k_cache->shape[1] >= 1, AITER_ERR_INVALID_ARGUMENT, "k_cache: expected page_size (shape[1]) >= 1, got %s",
            shape_string(k_cache).c_str());
}

TokenHeadStrides strides_of(const DLTensor *t) { return {stride(t, 0), stride(t, 1)}; }

struct Named {
  const DLTensor *tensor;
  const char *name;
};

// Index tensors are read while every output is written (aiter.h): none may
// overlap one (NULL outputs, such as an absent lse, are skipped).
void indices_apart(ArgCheck &c, std::initializer_list<Named> indices, std::initializer_list<Named> outputs) {
  for (const Named &i : indices)
    for (const Named &o : outputs) c.disjoint(i.tensor, i.name, o.tensor, o.name);
}

void same_device_as(ArgCheck &c, const DLTensor *ref, const char *ref_name, std::initializer_list<Named> others) {
  for (const Named &n : others) c.same_device(n.tensor, n.name, ref, ref_name);
}

// ---- index values (host memory) -------------------------------------------------

// cu[0] == 0, non-decreasing, cu[B] == total: every row range lies in [0, total).
void check_cu_seqlens(ArgCheck &c, const DLTensor *cu, const char *name, int64_t total, const char *total_what) {
  if (!c.ok()) return;
  const int32_t *v = data_ptr<const int32_t>(cu);
  const int64_t n = cu->shape[0];
  c.require(n >= 1, AITER_ERR_INVALID_ARGUMENT, "%s: expected B + 1 >= 1 entries, got 0", name);
  c.require(n < 1 || v[0] == 0, AITER_ERR_INVALID_ARGUMENT, "%s: expected %s[0] == 0, got %d", name, name,
            n >= 1 ? int(v[0]) : 0);
  for (int64_t i = 1; i < n && c.ok(); ++i)
    c.require(v[i] >= v[i - 1], AITER_ERR_INVALID_ARGUMENT,
              "%s: expected non-decreasing values, got %s[%" PRId64 "] = %d < %s[%" PRId64 "] = %d", name, name, i,
              int(v[i]), name, i - 1, int(v[i - 1]));
  c.require(n < 1 || v[n - 1] == total, AITER_ERR_INVALID_ARGUMENT,
            "%s: expected the last value == %" PRId64 " (%s), got %d", name, total, total_what,
            n >= 1 ? int(v[n - 1]) : 0);
}

// Slots of a cache [num_blocks, page_size, ...]: their product, saturated.  A
// cache of no element (no kv head) may have huge extents whose product overflows;
// nothing is written to it, whatever the slot.
int64_t slot_count(int64_t num_blocks, int64_t page_size) {
  int64_t slots = 0;
  return __builtin_mul_overflow(num_blocks, page_size, &slots) ? INT64_MAX : slots;
}

template <class S>
void check_slot_values(ArgCheck &c, const S *slots, int64_t tokens, int64_t num_blocks, int64_t page_size) {
  const int64_t num_slots = slot_count(num_blocks, page_size);
  for (int64_t t = 0; t < tokens && c.ok(); ++t)
    c.require(slots[t] < num_slots, AITER_ERR_INVALID_ARGUMENT,
              "slot_mapping[%" PRId64 "] = %" PRId64 " is out of range: expected < num_blocks %" PRId64
              " * page_size %" PRId64 " = %" PRId64 " (or negative to skip the token)",
              t, int64_t(slots[t]), num_blocks, page_size, num_slots);
}

// The checked cache pair, block table and lengths, as decode and paged prefill read them.
void take_paged_cache(DecodeArgs &a, const DLTensor *k_cache, const DLTensor *v_cache, const DLTensor *block_table,
                      const DLTensor *context_lens, DType cache_dtype, const aiter_attention_params &p) {
  const bool fp8 = is_fp8(cache_dtype);
  a.cache = {cache_dtype,       data_ptr<const void>(k_cache), data_ptr<const void>(v_cache), k_cache->shape[0],
             k_cache->shape[1], fp8 ? p.k_scale : 1.0f,          fp8 ? p.v_scale : 1.0f};
  a.block_table = data_ptr<const int32_t>(block_table);
  a.block_table_stride = stride(block_table, 0);
  a.max_blocks = block_table->shape[1];
  a.context_lens = data_ptr<const int32_t>(context_lens);
}

bool on_host(const DLTensor *t) { return t->device.device_type == kDLCPU; }

// ---- the three ops ------------------------------------------------------------------

// v [Tk, Hkv, Dv] beside k [Tk, Hkv, D], out [Tq, Hq, Dv]: Dv == D, or 128 beside
// a D of 192 (DeepSeek-V3's MLA prefill).
void check_value_dims(ArgCheck &c, AttentionShape &shape, const DLTensor *q, const DLTensor *k, const DLTensor *v,
                      const DLTensor *out) {
  if (!c.ok()) return;
  c.dim(v, "v", 0, k->shape[0], "the tokens of k").dim(v, "v", 1, k->shape[1], "the kv heads of k");
  const int64_t d = shape.head_dim, dv = v->shape[2];
  c.require((dv == d && d != 192) || (d == 192 && dv == 128), AITER_ERR_UNSUPPORTED_SHAPE,
            "v: head dim %" PRId64 " beside q's %" PRId64
            " is not supported (expected v's head dim equal to q's, or 128 beside 192)",
            dv, d);
  c.dim(out, "out", 0, q->shape[0], "the tokens of q").dim(out, "out", 1, q->shape[1], "the heads of q");
  c.dim(out, "out", 2, dv, "the head dim of v");
  shape.v_head_dim = dv;
}

// The optional log-sum-exp output: fp32 [Tq, Hq], compact.
void check_lse(ArgCheck &c, const DLTensor *lse, const DLTensor *q) {
  if (!c.ok() || lse == nullptr) return;
  c.tensor(lse, "params.lse").ndim(lse, "params.lse", 2).dtype(lse, "params.lse", {DType::f32});
  c.same_device(lse, "params.lse", q, "q").contiguous(lse, "params.lse");
  if (!c.ok()) return;
  c.dim(lse, "params.lse", 0, q->shape[0], "the tokens of q").dim(lse, "params.lse", 1, q->shape[1], "the heads of q");
}

void check_prefill(ArgCheck &c, PrefillArgs &a, DLTensor *out, const DLTensor *q, const DLTensor *k,
                   const DLTensor *v, const DLTensor *cu_q, const DLTensor *cu_k,
                   const aiter_attention_params *params) {
  c.tensor(out, "out").tensor(q, "q").tensor(k, "k").tensor(v, "v");
  c.tensor(cu_q, "cu_seqlens_q").tensor(cu_k, "cu_seqlens_k");
  const aiter_attention_params p = read_params(c, params);
  c.ndim(q, "q", 3).dtype(q, "q", kFloatTypes).ndim(k, "k", 3).same_dtype(k, "k", q, "q");
  c.ndim(v, "v", 3).same_dtype(v, "v", q, "q");
  c.ndim(out, "out", 3).same_dtype(out, "out", q, "q");
  same_device_as(c, q, "q", {{k, "k"}, {v, "v"}, {out, "out"}, {cu_q, "cu_seqlens_q"}, {cu_k, "cu_seqlens_k"}});
  c.unit_last_stride(q, "q").unit_last_stride(k, "k").unit_last_stride(v, "v").unit_last_stride(out, "out");
  c.ndim(cu_q, "cu_seqlens_q", 1).dtype(cu_q, "cu_seqlens_q", {DType::i32}).contiguous(cu_q, "cu_seqlens_q");
  c.ndim(cu_k, "cu_seqlens_k", 1).dtype(cu_k, "cu_seqlens_k", {DType::i32}).contiguous(cu_k, "cu_seqlens_k");
  c.disjoint(cu_q, "cu_seqlens_q", out, "out").disjoint(cu_k, "cu_seqlens_k", out, "out");
  if (!c.ok()) return;
  c.dim(cu_k, "cu_seqlens_k", 0, cu_q->shape[0], "the length of cu_seqlens_q");
  a.shape = check_heads(c, q, k, "k", 1, p, true);
  check_value_dims(c, a.shape, q, k, v, out);
  check_lse(c, p.lse, q);
  indices_apart(c, {{cu_q, "cu_seqlens_q"}, {cu_k, "cu_seqlens_k"}}, {{p.lse, "params.lse"}});
  if (on_host(q)) {
    check_cu_seqlens(c, cu_q, "cu_seqlens_q", q->shape[0], "q.shape[0]");
    check_cu_seqlens(c, cu_k, "cu_seqlens_k", k->shape[0], "k.shape[0]");
  }
  if (!c.ok()) return;
  a.dtype = dtype_of(q->dtype);
  a.causal = p.causal != 0;
  a.q = data_ptr<const void>(q), a.k = data_ptr<const void>(k), a.v = data_ptr<const void>(v);
  a.out = data_ptr<void>(out);
  a.q_strides = strides_of(q), a.k_strides = strides_of(k), a.v_strides = strides_of(v);
  a.out_strides = strides_of(out);
  a.cu_seqlens_q = data_ptr<const int32_t>(cu_q);
  a.cu_seqlens_k = data_ptr<const int32_t>(cu_k);
  a.batch = cu_q->shape[0] - 1;
  a.total_q = q->shape[0], a.total_k = k->shape[0];
  a.lse = p.lse != nullptr ? data_ptr<float>(p.lse) : nullptr;
}

void check_decode(ArgCheck &c, DecodeArgs &a, DLTensor *out, const DLTensor *q, const DLTensor *k_cache,
                  const DLTensor *v_cache, const DLTensor *block_table, const DLTensor *context_lens,
                  const aiter_attention_params *params, bool multi_token = false) {
  c.tensor(out, "out").tensor(q, "q").tensor(k_cache, "k_cache").tensor(v_cache, "v_cache");
  c.tensor(block_table, "block_table").tensor(context_lens, "context_lens");
  const aiter_attention_params p = read_params(c, params);
  if (multi_token && c.ok() && q->ndim == 4) {
    c.require(q->shape[1] >= 1 && q->shape[1] <= kMaxNewTokens, AITER_ERR_UNSUPPORTED_SHAPE,
              "q: %" PRId64 " new tokens a sequence (shape[1]) are not supported (expected 1 to %d)", q->shape[1],
              int(kMaxNewTokens));
  } else {
    c.ndim(q, "q", 3);
  }
  c.dtype(q, "q", kFloatTypes).same_shape(out, "out", q, "q").same_dtype(out, "out", q, "q");
  same_device_as(c, q, "q", {{out, "out"}, {k_cache, "k_cache"}, {v_cache, "v_cache"}, {block_table, "block_table"},
                             {context_lens, "context_lens"}});
  c.unit_last_stride(q, "q").unit_last_stride(out, "out");
  if (!c.ok()) return;
  check_cache_pair(c, k_cache, v_cache, dtype_of(q->dtype));
  const int64_t batch = q->shape[0];
  c.ndim(block_table, "block_table", 2).dtype(block_table, "block_table", {DType::i32});
  c.dim(block_table, "block_table", 0, batch, "the batch of q").unit_last_stride(block_table, "block_table");
  c.ndim(context_lens, "context_lens", 1).dtype(context_lens, "context_lens", {DType::i32});
  c.dim(context_lens, "context_lens", 0, batch, "the batch of q").contiguous(context_lens, "context_lens");
  c.disjoint(block_table, "block_table", out, "out").disjoint(context_lens, "context_lens", out, "out");
  a.shape = check_heads(c, q, k_cache, "k_cache", 2, p);
  const DType cache_dtype = c.ok() ? dtype_of(k_cache->dtype) : DType::unknown;
  if (is_fp8(cache_dtype)) {
    check_scale(c, p.k_scale, "params.k_scale");
    check_scale(c, p.v_scale, "params.v_scale");
  }
  if (!c.ok()) return;
  if (on_host(q)) check_paged_context(c, block_table, context_lens, k_cache->shape[0], k_cache->shape[1]);
  if (!c.ok()) return;
  a.dtype = dtype_of(q->dtype);
  a.q = data_ptr<const void>(q), a.out = data_ptr<void>(out);
  const int heads_dim = int(q->ndim) - 2;  // q and out: [B, (Nq,) Hq, D]
  a.q_strides = {stride(q, heads_dim - 1), stride(q, heads_dim)};
  a.out_strides = {stride(out, heads_dim - 1), stride(out, heads_dim)};
  a.q_seq_stride = stride(q, 0), a.out_seq_stride = stride(out, 0);
  a.q_tokens = q->ndim == 4 ? q->shape[1] : 1;
  take_paged_cache(a, k_cache, v_cache, block_table, context_lens, cache_dtype, p);
  a.batch = batch;
}

// Every sequence's new tokens fit its context (host memory only).
void check_new_tokens_fit(ArgCheck &c, const DLTensor *cu_q, const DLTensor *context_lens) {
  if (!c.ok()) return;
  const int32_t *cu = data_ptr<const int32_t>(cu_q), *lens = data_ptr<const int32_t>(context_lens);
  for (int64_t b = 0; b + 1 < cu_q->shape[0] && c.ok(); ++b)
    c.require(cu[b + 1] - cu[b] <= lens[b], AITER_ERR_INVALID_ARGUMENT,
              "cu_seqlens_q: sequence %" PRId64 " has %d new tokens, more than its context_lens[%" PRId64 "] = %d", b,
              int(cu[b + 1] - cu[b]), b, int(lens[b]));
}

// Prefill over the paged cache: decode's checks for the cache, table and lengths
// (batch from cu_seqlens_q), prefill's for q, cu_seqlens_q and lse.
void check_paged_prefill(ArgCheck &c, DecodeArgs &a, DLTensor *out, const DLTensor *q, const DLTensor *k_cache,
                         const DLTensor *v_cache, const DLTensor *block_table, const DLTensor *context_lens,
                         const DLTensor *cu_q, const aiter_attention_params *params) {
  c.tensor(out, "out").tensor(q, "q").tensor(k_cache, "k_cache").tensor(v_cache, "v_cache");
  c.tensor(block_table, "block_table").tensor(context_lens, "context_lens").tensor(cu_q, "cu_seqlens_q");
  const aiter_attention_params p = read_params(c, params);
  c.ndim(q, "q", 3).dtype(q, "q", kFloatTypes).same_shape(out, "out", q, "q").same_dtype(out, "out", q, "q");
  same_device_as(c, q, "q", {{out, "out"}, {k_cache, "k_cache"}, {v_cache, "v_cache"}, {block_table, "block_table"},
                             {context_lens, "context_lens"}, {cu_q, "cu_seqlens_q"}});
  c.unit_last_stride(q, "q").unit_last_stride(out, "out");
  c.ndim(cu_q, "cu_seqlens_q", 1).dtype(cu_q, "cu_seqlens_q", {DType::i32}).contiguous(cu_q, "cu_seqlens_q");
  if (!c.ok()) return;
  c.require(cu_q->shape[0] >= 1, AITER_ERR_INVALID_ARGUMENT, "cu_seqlens_q: expected B + 1 >= 1 entries, got 0");
  check_cache_pair(c, k_cache, v_cache, dtype_of(q->dtype));
  const int64_t batch = c.ok() ? cu_q->shape[0] - 1 : 0;
  c.ndim(block_table, "block_table", 2).dtype(block_table, "block_table", {DType::i32});
  c.dim(block_table, "block_table", 0, batch, "the sequences of cu_seqlens_q");
  c.unit_last_stride(block_table, "block_table");
  c.ndim(context_lens, "context_lens", 1).dtype(context_lens, "context_lens", {DType::i32});
  c.dim(context_lens, "context_lens", 0, batch, "the sequences of cu_seqlens_q").contiguous(context_lens, "context_lens");
  c.disjoint(block_table, "block_table", out, "out").disjoint(context_lens, "context_lens", out, "out");
  c.disjoint(cu_q, "cu_seqlens_q", out, "out");
  a.shape = check_heads(c, q, k_cache, "k_cache", 2, p);
  check_lse(c, p.lse, q);
  indices_apart(c, {{block_table, "block_table"}, {context_lens, "context_lens"}, {cu_q, "cu_seqlens_q"}},
                {{p.lse, "params.lse"}});
  const DType cache_dtype = c.ok() ? dtype_of(k_cache->dtype) : DType::unknown;
  if (is_fp8(cache_dtype)) {
    check_scale(c, p.k_scale, "params.k_scale");
    check_scale(c, p.v_scale, "params.v_scale");
  }
  if (!c.ok()) return;
  if (on_host(q)) {
    check_cu_seqlens(c, cu_q, "cu_seqlens_q", q->shape[0], "q.shape[0]");
    check_paged_context(c, block_table, context_lens, k_cache->shape[0], k_cache->shape[1]);
    check_new_tokens_fit(c, cu_q, context_lens);
  }
  if (!c.ok()) return;
  a.dtype = dtype_of(q->dtype);
  a.q = data_ptr<const void>(q), a.out = data_ptr<void>(out);
  a.q_strides = strides_of(q), a.out_strides = strides_of(out);
  a.q_seq_stride = 0, a.out_seq_stride = 0;  // rows are addressed through cu_seqlens_q
  a.q_tokens = q->shape[0];                   // a bound on any sequence's new tokens
  take_paged_cache(a, k_cache, v_cache, block_table, context_lens, cache_dtype, p);
  a.batch = batch;
  a.cu_seqlens_q = data_ptr<const int32_t>(cu_q);
  a.total_q = q->shape[0];
  a.causal = p.causal != 0;
  a.lse = p.lse != nullptr ? data_ptr<float>(p.lse) : nullptr;
}

// Positions a block table of these shapes can address, saturated far above what
// any split plan needs (so the product never overflows).
int64_t table_capacity(const DLTensor *k_cache, const DLTensor *block_table) {
  constexpr int64_t kPlenty = int64_t(1) << 40;
  const int64_t page = k_cache->shape[1], max_blocks = block_table->shape[1];
  return page > 0 && max_blocks > kPlenty / page ? kPlenty : max_blocks * page;
}

// Rows of a decode call: (sequence, new token, query head).
// An empty q has no rows, whatever its other extents (which may be huge).
int64_t decode_rows(const DLTensor *q) {
  if (numel(q) == 0) return 0;
  int64_t rows = 1;
  for (int i = 0; i + 1 < q->ndim; ++i) rows *= q->shape[i];
  return rows;
}

// The caller's scratch for split-KV decode: large enough, compact, aligned, on q's device.
void check_workspace(ArgCheck &c, DecodeArgs &a, DLTensor *workspace, const DLTensor *q, const DLTensor *k_cache,
                     const DLTensor *block_table) {
  if (!c.ok()) return;
  const size_t needed =
      decode_workspace_bytes(decode_rows(q), a.shape.v_head_dim, table_capacity(k_cache, block_table));
  c.tensor(workspace, "workspace").same_device(workspace, "workspace", q, "q").contiguous(workspace, "workspace");
  if (!c.ok()) return;
  const DType dt = dtype_of(workspace->dtype);
  c.require(dt != DType::unknown, AITER_ERR_UNSUPPORTED_DTYPE, "workspace: expected a byte-sized or wider dtype");
  if (!c.ok()) return;
  const size_t bytes = size_t(numel(workspace)) * size_t(dtype_size(dt));
  c.require(bytes >= needed, AITER_ERR_INVALID_ARGUMENT,
            "workspace: %zu bytes are too few (expected at least %zu, from "
            "aiter_paged_decode_attention_workspace_size)",
            bytes, needed);
  c.require(reinterpret_cast<uintptr_t>(data_ptr<void>(workspace)) % 16 == 0, AITER_ERR_INVALID_ARGUMENT,
            "workspace: expected a 16-byte aligned address");
  a.workspace = bytes > 0 ? data_ptr<void>(workspace) : nullptr;
  a.workspace_bytes = bytes;
}

void check_cache_write(ArgCheck &c, CacheWriteArgs &a, DLTensor *k_cache, DLTensor *v_cache, const DLTensor *key,
                       const DLTensor *value, const DLTensor *slot_mapping, float k_scale, float v_scale) {
  c.tensor(k_cache, "k_cache").tensor(v_cache, "v_cache").tensor(key, "key").tensor(value, "value");
  c.tensor(slot_mapping, "slot_mapping");
  c.ndim(key, "key", 3).dtype(key, "key", kFloatTypes);
  c.same_shape(value, "value", key, "key").same_dtype(value, "value", key, "key");
  same_device_as(c, key, "key",
                 {{value, "value"}, {k_cache, "k_cache"}, {v_cache, "v_cache"}, {slot_mapping, "slot_mapping"}});
  c.unit_last_stride(key, "key").unit_last_stride(value, "value");
  if (!c.ok()) return;
  check_cache_pair(c, k_cache, v_cache, dtype_of(key->dtype));
  c.dim(k_cache, "k_cache", 2, key->shape[1], "the kv heads of key");
  c.dim(k_cache, "k_cache", 3, key->shape[2], "the head dim of key");
  if (!c.ok()) return;
  c.require(key->shape[1] >= 1, AITER_ERR_INVALID_ARGUMENT, "key: expected at least 1 kv head, got shape %s",
            shape_string(key).c_str());
  c.require(key->shape[2] == 64 || key->shape[2] == 128, AITER_ERR_UNSUPPORTED_SHAPE,
            "key: head dim %" PRId64 " is not supported (expected 64 or 128)", key->shape[2]);
  c.ndim(slot_mapping, "slot_mapping", 1).dtype(slot_mapping, "slot_mapping", {DType::i32, DType::i64});
  c.dim(slot_mapping, "slot_mapping", 0, key->shape[0], "the tokens of key").contiguous(slot_mapping, "slot_mapping");
  c.disjoint(slot_mapping, "slot_mapping", k_cache, "k_cache").disjoint(slot_mapping, "slot_mapping", v_cache, "v_cache");
  const DType cache_dtype = c.ok() ? dtype_of(k_cache->dtype) : DType::unknown;
  if (is_fp8(cache_dtype)) {
    check_scale(c, k_scale, "k_scale");
    check_scale(c, v_scale, "v_scale");
  }
  if (!c.ok()) return;
  const bool int64_slots = dtype_of(slot_mapping->dtype) == DType::i64;
  if (on_host(key)) {
    if (int64_slots)
      check_slot_values(c, data_ptr<const int64_t>(slot_mapping), key->shape[0], k_cache->shape[0], k_cache->shape[1]);
    else
      check_slot_values(c, data_ptr<const int32_t>(slot_mapping), key->shape[0], k_cache->shape[0], k_cache->shape[1]);
  }
  if (!c.ok()) return;
  a.dtype = dtype_of(key->dtype);
  a.cache_dtype = cache_dtype;
  a.key = data_ptr<const void>(key), a.value = data_ptr<const void>(value);
  a.key_strides = strides_of(key), a.value_strides = strides_of(value);
  a.k_cache = data_ptr<void>(k_cache), a.v_cache = data_ptr<void>(v_cache);
  a.tokens = key->shape[0], a.kv_heads = key->shape[1], a.head_dim = key->shape[2];
  a.num_slots = slot_count(k_cache->shape[0], k_cache->shape[1]);
  a.slot_mapping = data_ptr<const void>(slot_mapping);
  a.slots_are_int64 = int64_slots;
  a.k_scale = k_scale, a.v_scale = v_scale;
}

}  // namespace
}  // namespace aiter

using namespace aiter;

extern "C" {

AITER_API void aiter_attention_params_init(aiter_attention_params *params) {
  if (params == nullptr) return;
  *params = aiter_attention_params{};
  params->struct_size = sizeof(aiter_attention_params);
  params->softmax_scale = 0.0f;
  params->causal = 1;
  params->window_left = -1;
  params->k_scale = 1.0f;
  params->v_scale = 1.0f;
}

AITER_API aiter_status aiter_prefill_attention(DLTensor *out, const DLTensor *q, const DLTensor *k,
                                               const DLTensor *v, const DLTensor *cu_seqlens_q,
                                               const DLTensor *cu_seqlens_k, const aiter_attention_params *params,
                                               void *stream) {
  return guard(kPrefill.name, [&] {
    ArgCheck c(kPrefill.name);
    PrefillArgs a{};
    check_prefill(c, a, out, q, k, v, cu_seqlens_q, cu_seqlens_k, params);
    return c.ok() ? run(kPrefill, q, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_paged_decode_attention(DLTensor *out, const DLTensor *q, const DLTensor *k_cache,
                                                    const DLTensor *v_cache, const DLTensor *block_table,
                                                    const DLTensor *context_lens,
                                                    const aiter_attention_params *params, void *stream) {
  return guard(kDecode.name, [&] {
    ArgCheck c(kDecode.name);
    DecodeArgs a{};
    check_decode(c, a, out, q, k_cache, v_cache, block_table, context_lens, params);
    return c.ok() ? run(kDecode, q, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_paged_decode_attention_split_kv(DLTensor *out, const DLTensor *q,
                                                             const DLTensor *k_cache, const DLTensor *v_cache,
                                                             const DLTensor *block_table,
                                                             const DLTensor *context_lens, DLTensor *workspace,
                                                             const aiter_attention_params *params, void *stream) {
  return guard(kDecodeSplit.name, [&] {
    ArgCheck c(kDecodeSplit.name);
    DecodeArgs a{};
    check_decode(c, a, out, q, k_cache, v_cache, block_table, context_lens, params, true);
    check_workspace(c, a, workspace, q, k_cache, block_table);
    indices_apart(c, {{block_table, "block_table"}, {context_lens, "context_lens"}}, {{workspace, "workspace"}});
    return c.ok() ? run(kDecodeSplit, q, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_paged_prefill_attention(DLTensor *out, const DLTensor *q, const DLTensor *k_cache,
                                                     const DLTensor *v_cache, const DLTensor *block_table,
                                                     const DLTensor *context_lens, const DLTensor *cu_seqlens_q,
                                                     const aiter_attention_params *params, void *stream) {
  return guard(kPagedPrefill.name, [&] {
    ArgCheck c(kPagedPrefill.name);
    DecodeArgs a{};
    check_paged_prefill(c, a, out, q, k_cache, v_cache, block_table, context_lens, cu_seqlens_q, params);
    return c.ok() ? run(kPagedPrefill, q, a, stream) : c.status();
  });
}

AITER_API aiter_status aiter_paged_decode_attention_workspace_size(size_t *bytes, const DLTensor *q,
                                                                   const DLTensor *k_cache,
                                                                   const DLTensor *block_table) {
  return guard(kWorkspaceQuery.name, [&] {
    ArgCheck c(kWorkspaceQuery.name);
    c.require(bytes != nullptr, AITER_ERR_INVALID_ARGUMENT, "bytes: expected a pointer, got NULL");
    c.tensor(q, "q").tensor(k_cache, "k_cache").tensor(block_table, "block_table");
    same_device_as(c, q, "q", {{k_cache, "k_cache"}, {block_table, "block_table"}});
    if (c.ok()) c.require(q->ndim == 3 || q->ndim == 4, AITER_ERR_INVALID_ARGUMENT,
                          "q: expected [B, Hq, D] or [B, Nq, Hq, D], got shape %s", shape_string(q).c_str());
    c.ndim(k_cache, "k_cache", 4).ndim(block_table, "block_table", 2);
    if (!c.ok()) return c.status();
    const aiter_status s = run(kWorkspaceQuery, q, DecodeArgs{}, nullptr);
    if (s != AITER_OK) return s;
    *bytes = decode_workspace_bytes(decode_rows(q), q->shape[q->ndim - 1], table_capacity(k_cache, block_table));
    return AITER_OK;
  });
}

AITER_API aiter_status aiter_reshape_and_cache(DLTensor *k_cache, DLTensor *v_cache, const DLTensor *key,
                                               const DLTensor *value, const DLTensor *slot_mapping, float k_scale,
                                               float v_scale, void *stream) {
  return guard(kCacheWrite.name, [&] {
    ArgCheck c(kCacheWrite.name);
    CacheWriteArgs a{};
    check_cache_write(c, a, k_cache, v_cache, key, value, slot_mapping, k_scale, v_scale);
    return c.ok() ? run(kCacheWrite, key, a, stream) : c.status();
  });
}

}  // extern "C"
