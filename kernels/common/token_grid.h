// Grids for ops that do the same independent work for every token: `items`
// threads a token.  A block holds tokens_per_block whole tokens when a token has
// few items (so small heads still fill blocks), or, with tokens_per_block = 1,
// one token's items spread over grid.y blocks.  Plain data, shared by kernels
// and host launchers (libaiter/gpu/token_grid.hpp plans it).
#pragma once

struct TokenGrid {
  long long tokens;
  int items_per_token;
  int tokens_per_block;
};

#ifdef AITER_KERNEL  // device code: vendor.h came first
// This thread's token and item; false for the threads past the last of either.
__device__ __forceinline__ bool token_item(const TokenGrid &g, int64_t *token, int *item) {
  const unsigned flat = block_y() * block_dim_x() + thread_x();
  const unsigned local = flat / unsigned(g.items_per_token);
  *item = int(flat - local * unsigned(g.items_per_token));
  *token = int64_t(block_x()) * g.tokens_per_block + local;
  return local < unsigned(g.tokens_per_block) && *token < g.tokens;
}
#endif
