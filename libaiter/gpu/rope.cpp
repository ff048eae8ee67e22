// GPU launcher of the rotary-embedding kernels (kernels/rope/rope.cu): a thread
// per (token, head, chunk of pairs) of q and k.
#include <cstdint>
#include <string>

#include "gpu/launch.hpp"
#include "gpu/token_grid.hpp"
#include "kernels/rope/rope_params.h"
#include "ops/rope.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int kMaxThreads = 512;  // the kernels' launch bound

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Every head row of q or k starts on a 16-byte boundary (the stride of a dim
// of extent 1 is never used, so it may be anything).
bool rows_aligned(const RopeHeads &h, int64_t tokens, int per_vector) {
  if (h.data == nullptr) return true;  // k absent
  return aligned16(h.data) && (tokens <= 1 || h.token_stride % per_vector == 0) &&
         (h.heads <= 1 || h.head_stride % per_vector == 0);
}

// The 16-byte variant rotates per_vector pairs a thread: both NeoX halves (and
// the GPT-J span of 2 * per_vector elements) must start at vector boundaries.
bool can_vectorize(const RopeArgs &a, int per_vector) {
  return (a.rotary_dim / 2) % per_vector == 0 && aligned16(a.cache) && rows_aligned(a.q, a.tokens, per_vector) &&
         rows_aligned(a.k, a.tokens, per_vector);
}

RopeHeadsParams heads_params(const RopeHeads &h) { return {h.data, int(h.heads), h.token_stride, h.head_stride}; }

}  // namespace

aiter_status rope(const RopeArgs &a, const GpuCall &call) {
  const int64_t heads = a.q.heads + a.k.heads;
  if (a.tokens == 0 || heads == 0) return AITER_OK;
  const int per_vector = 16 / dtype_size(a.dtype);
  const bool vec = can_vectorize(a, per_vector);
  const int64_t half = a.rotary_dim / 2;
  const int64_t chunks = vec ? half / per_vector : half;
  TokenLaunch plan{};
  const aiter_status s = plan_token_grid("rope", a.tokens, heads * chunks, kMaxThreads, &plan);
  if (s != AITER_OK) return s;

  RopeParams p{};
  p.grid = plan.g;
  p.q = heads_params(a.q);
  p.k = heads_params(a.k);
  p.positions = a.positions;
  p.cache = a.cache;
  p.pos_stride = a.pos_stride;
  p.max_position = a.max_position;
  p.pos_int64 = a.pos_dtype == DType::i64;
  p.half = int(half);
  p.chunks_per_head = int(chunks);
  const std::string variant = std::string(dtype_tag(a.dtype)) + "." + dtype_tag(a.cache_dtype) +
                              (a.style == AITER_ROPE_NEOX ? ".neox" : ".gptj") + (vec ? ".vec" : ".scalar");
  return launch(call, "rope", variant, plan.grid, plan.threads, p);
}

}  // namespace gpu
}  // namespace aiter
