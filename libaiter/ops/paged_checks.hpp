// The checks of a paged KV cache's block table and context lengths that both
// paged attention (ops/attention.cpp) and MLA decode (ops/mla.cpp) make on the host.
#pragma once

#include <cinttypes>
#include <cstdint>

#include "core/tensor.hpp"

namespace aiter {

// Pages a context of `len` tokens occupies: ceil(len / page_size), without overflow.
inline int64_t pages_for(int64_t len, int64_t page_size) { return len / page_size + (len % page_size != 0); }

// Every context length fits its block-table row, and every block id it uses exists.
inline void check_paged_context(ArgCheck &c, const DLTensor *block_table, const DLTensor *context_lens,
                                int64_t num_blocks, int64_t page_size) {
  if (!c.ok()) return;
  const int32_t *lens = data_ptr<const int32_t>(context_lens);
  const int32_t *table = data_ptr<const int32_t>(block_table);
  const int64_t batch = block_table->shape[0], max_blocks = block_table->shape[1];
  const int64_t row_stride = stride(block_table, 0);
  for (int64_t b = 0; b < batch && c.ok(); ++b) {
    const int64_t len = lens[b];
    c.require(len >= 0 && pages_for(len, page_size) <= max_blocks, AITER_ERR_INVALID_ARGUMENT,
              "context_lens[%" PRId64 "] = %" PRId64 " is out of range: expected 0 to max_blocks %" PRId64
              " * page_size %" PRId64,
              b, len, max_blocks, page_size);
    for (int64_t i = 0; c.ok() && i < pages_for(len, page_size); ++i) {
      const int64_t block = table[b * row_stride + i];
      c.require(block >= 0 && block < num_blocks, AITER_ERR_INVALID_ARGUMENT,
                "block_table[%" PRId64 ", %" PRId64 "] = %" PRId64
                " is out of range: expected 0 to num_blocks - 1 = %" PRId64 " (context_lens[%" PRId64 "] = %" PRId64
                " uses %" PRId64 " blocks)",
                b, i, block, num_blocks - 1, b, len, pages_for(len, page_size));
    }
  }
}

}  // namespace aiter
