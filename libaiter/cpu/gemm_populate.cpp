// The output's untouched pages mapped before the kernels write (Linux); also
// the packed A of cpu.avx512 when it grows.
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
// Only whole pages inside a contiguous output, which the GEMM overwrites
// entirely: the contents the caller sees are the same, and no page is
// populated that the GEMM would not have written.  Errors (kernels before
// 5.14, mappings that refuse it) leave the pages to fault as before.
#include "cpu/gemm_plan.hpp"

#include <cstdint>
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
namespace gemm {
namespace {

// Below this the output is most often heap memory already mapped, and the
// system calls would cost more than the faults they save.
constexpr int64_t kPopulateFromBytes = 128 << 10;
// Pages per madvise call: the threads share the calls.
constexpr int64_t kPagesPerCall = 64;

// The output's bytes as one range, or 0 where its rows or matrices have gaps
// (pages there may hold what is not the GEMM's to write).
int64_t contiguous_bytes(const Plan &p) {
  const int64_t row = p.n * p.out_elem_bytes, matrix = p.m * row;
  if (p.m > 1 && p.out_row_bytes != row) return 0;
  if (p.batch > 1 && p.out_batch_bytes != matrix) return 0;
  return p.batch * matrix;
}

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

void populate_output(const Plan &p) { populate_range(p.out, contiguous_bytes(p)); }

}  // namespace gemm
}  // namespace cpu
}  // namespace aiter
