// GPU launcher of the paged-KV-cache write (kernels/cache/kv_cache.cu): a
// thread per (token, head, chunk), writing that chunk of the key and the value.
#include <cstdint>
#include <string>

#include "gpu/launch.hpp"
#include "gpu/token_grid.hpp"
#include "kernels/cache/kv_cache_params.h"
#include "kernels/common/quant_kind.h"
#include "ops/attention.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int kMaxThreads = 512;  // the kernels' launch bound
constexpr int kFp8Chunk = 16;     // elements a thread quantizes: one 16-byte store

QuantKind quant_kind(DType cache) {
  switch (cache) {
    case DType::e4m3fn: return kQuantE4m3fn;
    case DType::e4m3fnuz: return kQuantE4m3fnuz;
    case DType::e5m2: return kQuantE5m2;
    default: return kQuantNone;
  }
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Every head row of key or value starts on a 16-byte boundary (the stride of a
// dim of extent 1 is never used, so it may be anything).
bool rows_aligned(const void *data, const TokenHeadStrides &s, const CacheWriteArgs &a, int per_vector) {
  return aligned16(data) && (a.tokens <= 1 || s.token % per_vector == 0) &&
         (a.kv_heads <= 1 || s.head % per_vector == 0);
}

// The caches are compact with head_dim 64 or 128, so their rows start on
// 16-byte boundaries when the caches do, and a row holds whole chunks.
bool can_vectorize(const CacheWriteArgs &a, int per_vector, int chunk) {
  return a.head_dim % chunk == 0 && aligned16(a.k_cache) && aligned16(a.v_cache) &&
         rows_aligned(a.key, a.key_strides, a, per_vector) && rows_aligned(a.value, a.value_strides, a, per_vector);
}

}  // namespace

aiter_status reshape_and_cache(const CacheWriteArgs &a, const GpuCall &call) {
  if (a.tokens == 0) return AITER_OK;
  const bool fp8 = is_fp8(a.cache_dtype);
  const int per_vector = 16 / dtype_size(a.dtype);  // source elements in 16 bytes
  const int chunk = fp8 ? kFp8Chunk : per_vector;
  const bool vec = can_vectorize(a, per_vector, chunk);
  const int64_t chunks = vec ? a.head_dim / chunk : a.head_dim;
  TokenLaunch plan{};
  const aiter_status s = plan_token_grid("reshape_and_cache", a.tokens, a.kv_heads * chunks, kMaxThreads, &plan);
  if (s != AITER_OK) return s;

  CacheWriteParams p{};
  p.grid = plan.g;
  p.key = a.key;
  p.value = a.value;
  p.k_cache = a.k_cache;
  p.v_cache = a.v_cache;
  p.slot_mapping = a.slot_mapping;
  p.key_token_stride = a.key_strides.token;
  p.key_head_stride = a.key_strides.head;
  p.value_token_stride = a.value_strides.token;
  p.value_head_stride = a.value_strides.head;
  p.num_slots = a.num_slots;
  p.k_scale = a.k_scale;
  p.v_scale = a.v_scale;
  p.slots_int64 = a.slots_are_int64;
  p.kv_heads = int(a.kv_heads);
  p.head_dim = int(a.head_dim);
  p.chunks_per_head = int(chunks);
  p.quant = quant_kind(a.cache_dtype);

  const std::string variant =
      std::string(dtype_tag(a.dtype)) + (fp8 ? ".fp8" : ".copy") + (vec ? ".vec" : ".scalar");
  return launch(call, "reshape_and_cache", variant, plan.grid, plan.threads, p);
}

}  // namespace gpu
}  // namespace aiter
