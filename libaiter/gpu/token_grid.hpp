// Planning a TokenGrid launch (kernels/common/token_grid.h): whole tokens per
// block up to kTargetThreads threads, or one token over several blocks.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/error.hpp"
#include "gpu/driver.hpp"
#include "kernels/common/token_grid.h"

namespace aiter {
namespace gpu {

struct TokenLaunch {
  TokenGrid g;
  Dim3 grid;
  unsigned threads;
};

// For tokens >= 1 of items >= 1 threads each; `max_threads` is the kernels'
// launch bound.  Fails with UNSUPPORTED_SHAPE when the grid would exceed the
// hardware's (2^31 - 1 blocks in x, 65535 in y).
inline aiter_status plan_token_grid(const char *op, int64_t tokens, int64_t items, int max_threads,
                                    TokenLaunch *out) {
  constexpr int64_t kTargetThreads = 256;  // enough warps a block, small enough to keep many blocks in flight
  constexpr int64_t kMaxGridY = 65535;
  const int64_t per_block = items >= kTargetThreads ? 1 : std::min(tokens, kTargetThreads / items);
  const int64_t blocks_x = (tokens + per_block - 1) / per_block;
  const int64_t threads = std::min<int64_t>(max_threads, (per_block * items + 31) / 32 * 32);
  const int64_t blocks_y = (per_block * items + threads - 1) / threads;
  if (blocks_x > INT_MAX || blocks_y > kMaxGridY)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "%s on the GPU: %lld tokens of %lld thread items each exceed the launch grid "
                "(at most %d tokens, %lld items a token)",
                op, (long long)tokens, (long long)items, INT_MAX, (long long)(kMaxGridY * max_threads));
  out->g = TokenGrid{tokens, int(items), int(per_block)};
  out->grid = Dim3{unsigned(blocks_x), unsigned(blocks_y), 1};
  out->threads = unsigned(threads);
  return AITER_OK;
}

}  // namespace gpu
}  // namespace aiter
