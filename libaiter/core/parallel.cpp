#include "core/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace aiter {

namespace {

int threads_from_env() {
  if (const char *text = std::getenv("AITER_NUM_THREADS")) {
    const int n = std::atoi(text);
    if (n > 0) return std::min(n, 256);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// A thread that has just finished its part of a job spins this long for the next
// event (a job for a worker, the last chunk's end for the caller) before it
// sleeps: a layer's ops come back to back, and a sleeping thread takes tens of
// microseconds to wake, as long as a small op itself (a 16-row silu_and_mul of
// 28672 columns: 0.24 ms with the worker asleep, half of it on one core; the
// peer, PyTorch's OpenMP pool, spins too).
constexpr std::chrono::microseconds kSpin{200};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The CPU this thread runs on, -1 where unknown.
int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// The CPUs a thread may run on (Linux; elsewhere nothing is moved).
class CpuSet {
 public:
  static CpuSet of_this_thread() {
    CpuSet s;
#if defined(__linux__)
    s.valid_ = sched_getaffinity(0, sizeof(s.set_), &s.set_) == 0;
#endif
    return s;
  }
  // This thread to these CPUs less `cpu`, where that leaves one.
  void move_this_thread_off(int cpu) const {
#if defined(__linux__)
    if (!valid_ || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set_)) return;
    cpu_set_t others = set_;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) > 0) sched_setaffinity(0, sizeof(others), &others);
#else
    (void)cpu;
#endif
  }

 private:
#if defined(__linux__)
  cpu_set_t set_{};
  bool valid_ = false;
#endif
};

// Spins until ready(), kSpin has passed or futile() (the caller then blocks as
// before); futile is asked every 64 turns.
template <class Ready, class Futile>
void spin_until(Ready ready, Futile futile) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0; !ready(); ++i) {
    if (i % 64 == 63 && (std::chrono::steady_clock::now() >= until || futile())) return;
    cpu_relax();
  }
}

// One job at a time: workers and the caller pull chunk indices from `next`.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) std::thread([this] { work(); }).detach();
  }

  // False if another job is running: the caller then runs the work itself.
  bool run(int64_t chunks, const std::function<void(int64_t)> &chunk) {
    std::unique_lock<std::mutex> job_lock(job_mutex_, std::try_to_lock);
    if (!job_lock.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      chunk_ = &chunk;
      chunks_ = chunks;
      next_ = 0;
      done_ = 0;
      finished_flag_.store(false, std::memory_order_relaxed);
      beside_caller_.store(false, std::memory_order_relaxed);
      caller_cpu_.store(current_cpu(), std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    drain();
    spin_until([&] { return finished_flag_.load(std::memory_order_acquire); },
               [&] { return beside_caller_.load(std::memory_order_relaxed); });
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_ == chunks_ && active_ == 0; });
    chunk_ = nullptr;
    return true;
  }

 private:
  void work() {
    const CpuSet allowed = CpuSet::of_this_thread();
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, [&] { return on_callers_cpu(); });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
        seen = generation_.load(std::memory_order_relaxed);
      }
      if (on_callers_cpu()) {
        beside_caller_.store(true, std::memory_order_relaxed);
        allowed.move_this_thread_off(caller_cpu_.load(std::memory_order_relaxed));
      }
      drain();
    }
  }

  // A worker on the CPU of the thread that posted the job: the two share one
  // CPU and the caller runs (nearly) every chunk itself, the "absent worker" of
  // docs/performance_cpu.md.  Linux puts a woken thread on its waker's CPU
  // when it finds no idle one nearby, and then keeps the pair there job after
  // job even once the other CPU idles (seen with /proc/<tid>/schedstat: both
  // threads on one CPU for whole blocks of calls, each waiting 3-7 ms of 12
  // for the other).  So a worker that finds itself there leaves that CPU (its
  // affinity: the CPUs it started with, less the caller's), and neither
  // thread spins meanwhile: a spin would only take time from the other.
  bool on_callers_cpu() const {
    const int cpu = current_cpu();
    return cpu >= 0 && cpu == caller_cpu_.load(std::memory_order_relaxed);
  }

  // Runs chunks until none is left.  `active_` counts threads inside a job so
  // that run() returns only once no thread can still touch this job's chunk.
  void drain() {
    const std::function<void(int64_t)> *chunk;
    int64_t chunks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (chunk_ == nullptr) return;
      chunk = chunk_;
      chunks = chunks_;
      ++active_;
    }
    int64_t finished_here = 0;
    for (int64_t i; (i = next_.fetch_add(1)) < chunks;) {
      (*chunk)(i);
      ++finished_here;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    done_ += finished_here;
    --active_;
    if (done_ == chunks_ && active_ == 0) {
      finished_flag_.store(true, std::memory_order_release);
      finished_.notify_all();
    }
  }

  std::mutex job_mutex_;  // held by the caller whose job is running
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(int64_t)> *chunk_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  int64_t done_ = 0;
  int active_ = 0;
  std::atomic<uint64_t> generation_{0};    // written under mutex_, read by spinning workers too
  std::atomic<bool> finished_flag_{false};  // done_ == chunks_ && active_ == 0, for the spinning caller
  std::atomic<int> caller_cpu_{-1};          // where the last job's caller ran when it posted the job
  std::atomic<bool> beside_caller_{false};   // a worker of this job runs on caller_cpu_
};

// Never destroyed: detached workers may still wait on it at process exit.
Pool &pool() {
  static Pool *instance = new Pool(cpu_threads());
  return *instance;
}

thread_local bool inside_chunk = false;

}  // namespace

int cpu_threads() {
  static const int n = threads_from_env();
  return n;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  parallel_for(n, grain, int64_t(cpu_threads()) * 4, fn);
}

void parallel_for(int64_t n, int64_t grain, int64_t max_chunks, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  max_chunks = std::max<int64_t>(max_chunks, 1);
  const int64_t chunks = std::min(max_chunks, (n + grain - 1) / grain);
  if (chunks <= 1 || inside_chunk) return fn(0, n);
  const int64_t size = (n + chunks - 1) / chunks;
  std::exception_ptr error;
  std::mutex error_mutex;
  const std::function<void(int64_t)> chunk = [&](int64_t i) {
    const int64_t begin = i * size, end = std::min(n, begin + size);
    if (begin >= end) return;
    inside_chunk = true;
    try {
      fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      error = std::current_exception();
    }
    inside_chunk = false;
  };
  if (!pool().run(chunks, chunk)) return fn(0, n);
  if (error) std::rethrow_exception(error);
}

}  // namespace aiter
