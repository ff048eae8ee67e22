// The CPU backend's worker threads.  parallel_for splits [0, n) into chunks of
// at least `grain` and runs them on a process-wide pool (AITER_NUM_THREADS
// workers, default: the hardware's threads).  A call made while the pool is busy
// (from another thread, or nested inside a chunk) runs inline: correct, serial.
#pragma once

#include <cstdint>
#include <functional>

namespace aiter {

int cpu_threads();

// fn(begin, end) is called on disjoint ranges covering [0, n).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

// The same in up to max_chunks chunks (parallel_for: 4 per thread).  Where the
// work is a few dozen long items, chunks of one item keep the threads even:
// 44 items of a GEMM in 8 chunks of 6 left one thread 4 items (9%) behind.
void parallel_for(int64_t n, int64_t grain, int64_t max_chunks, const std::function<void(int64_t, int64_t)> &fn);

}  // namespace aiter
