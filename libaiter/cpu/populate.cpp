// An output's untouched pages mapped before the kernels write (Linux): the
// GEMMs' outputs and cpu.avx512's packed A (cpu/gemm_populate.cpp), and the
// large outputs of the norms and gated activations.
//
// A GEMM writing into memory the process never touched (NumPy's np.empty of a
// few MB: malloc hands out fresh pages) takes a page fault at the first store
// to each 4 KB page.  Inside the kernels those faults cost 2.9 us each on the
// 2-core EPYC of docs/performance_cpu.md (the demo's prefill gate_up, 240 x
// 5632 bf16: 6.6 ms into a reused output, 9.2 ms into a fresh one): both
// threads fault at once into the same page tables and every fault stops a
// thread in the middle of its tile.  Mapped up front, by madvise
// (MADV_POPULATE_WRITE: zeroed pages where none is mapped, present ones left
// alone), the same pages take 0.6-0.9 ms.  mincore says first which pages are
// there (3 us for 660 pages), so a reused output costs no more than that.
//
// The norms and gated activations (the demo's add_rmsnorm, 240 x 1024 bf16
// and its residual: 240 faults; silu_and_mul, 240 x 2816: 332) fault the same
// way inside their row loops; docs/performance_cpu.md has their numbers.
//
// Only whole pages inside a contiguous output, which the op overwrites
// entirely: the contents the caller sees are the same, and no page is
// populated that the op would not have written.  Errors (kernels before
// 5.14, mappings that refuse it) leave the pages to fault as before.
#include "cpu/populate.hpp"

#include <cstdint>
#include <utility>
#include <vector>

#include "core/parallel.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#endif

namespace aiter {
namespace cpu {
namespace {

// Below this the output is most often heap memory already mapped, and the
// system calls would cost more than the faults they save.
constexpr int64_t kPopulateFromBytes = 128 << 10;
// Pages per madvise call: the threads share the calls.
constexpr int64_t kPagesPerCall = 64;

}  // namespace

void populate_range(void *data, int64_t bytes) {
#if defined(__linux__)
  if (bytes < kPopulateFromBytes) return;
  static const int64_t page = sysconf(_SC_PAGESIZE);
  const uintptr_t first = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (page <= 0 || last <= first) return;
  const int64_t pages = int64_t(last - first) / page;
  std::vector<unsigned char> resident(size_t(pages), 0);
  if (mincore(reinterpret_cast<void *>(first), size_t(last - first), resident.data()) != 0) return;
  // Runs of absent pages, cut into calls of at most kPagesPerCall.
  std::vector<std::pair<int64_t, int64_t>> calls;  // first page, count
  for (int64_t i = 0; i < pages;) {
    if (resident[size_t(i)] & 1) {
      ++i;
      continue;
    }
    const int64_t start = i;
    while (i < pages && !(resident[size_t(i)] & 1) && i - start < kPagesPerCall) ++i;
    calls.emplace_back(start, i - start);
  }
  parallel_for(int64_t(calls.size()), 1, int64_t(calls.size()), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      madvise(reinterpret_cast<void *>(first + uintptr_t(calls[size_t(c)].first * page)),
              size_t(calls[size_t(c)].second * page), MADV_POPULATE_WRITE);
  });
#else
  (void)data, (void)bytes;
#endif
}

void populate_rows(void *data, const RowView &rows, int64_t elem_bytes) {
  if (rows.rows > 1 && rows.row_stride != rows.cols) return;
  populate_range(data, rows.rows * rows.cols * elem_bytes);
}

}  // namespace cpu
}  // namespace aiter
