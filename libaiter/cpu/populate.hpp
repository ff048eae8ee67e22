// Mapping an output's fresh pages before the kernels write it (Linux); see
// cpu/populate.cpp for why and when it pays.
#pragma once

#include <cstdint>

#include "core/tensor.hpp"

namespace aiter {
namespace cpu {

// Maps the untouched whole pages inside [data, data + bytes), which the caller
// is about to overwrite entirely; contents unchanged, errors ignored, nothing
// below 128 KB or off Linux.
void populate_range(void *data, int64_t bytes);

// The same for a row-major output of `rows` x `cols` elements of `elem_bytes`
// whose rows lie back to back (row_stride == cols); rows with gaps are left alone,
// since the pages in the gaps are not the op's to write.
void populate_rows(void *data, const RowView &rows, int64_t elem_bytes);

}  // namespace cpu
}  // namespace aiter
