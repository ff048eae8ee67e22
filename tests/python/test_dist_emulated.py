"""The push all-reduce and fused kernels (kernels/allreduce/allreduce.cu) on the
CPU: the kernel source compiled for the host against a stand-in for
kernels/common/vendor.h, each rank a process (fork) over shared memory, each GPU
thread a std::thread.  This checks the protocol (slots, stages by call parity,
emptying, sendable words, two-shot row ownership, the grid's call counter) over
calls of mixed kinds and sizes while the ranks drift apart, against sums
computed here in rank order: not the GPU's memory model, which the multi-GPU
tests (test_dist.py, marked gpu) check.  Skips without a C++20 compiler or the
kernel sources (an installed package)."""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "..", "..", "kernels")
SOURCES = {"common": ["numeric.h", "quant_kind.h", "quant_store.h"],
           "allreduce": ["allreduce.cu", "allreduce_params.h", "ar_sync.h"]}

# kernels/common/vendor.h for the host: the AMD branch's names (numeric.h then
# takes its portable paths), threads, barriers and atomics of the host.
VENDOR_SHIM = r"""
// kernels/common/vendor.h for the host (tests/python/test_dist_emulated.py).
#pragma once
#include <cstdint>
#include <cmath>
#include <sched.h>
#include <time.h>
#include <barrier>
#include <algorithm>
#define AITER_AMD 1
#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
#define AITER_LAUNCH_BOUNDS(threads)
#define AITER_LAUNCH_BOUNDS_MIN(threads, blocks)
#define AITER_KERNEL extern "C"
struct alignas(16) uint4 { uint32_t x, y, z, w; };
struct alignas(8) uint2 { uint32_t x, y; };

struct EmuThread {
  unsigned tid, bid;
  std::barrier<> *block_bar;
  std::barrier<> *warp_bar;
  float *warp_slots;  // 32 per warp
};
extern thread_local EmuThread emu;
extern unsigned emu_block_dim, emu_grid_dim;

inline unsigned thread_x() { return emu.tid; }
inline unsigned block_x() { return emu.bid; }
inline unsigned block_y() { return 0; }
inline unsigned block_z() { return 0; }
inline unsigned block_dim_x() { return emu_block_dim; }
inline int warp_size() { return 32; }
inline void sync_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); emu.block_bar->arrive_and_wait(); __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline float shfl_xor(float v, int mask) {
  const unsigned lane = emu.tid % 32;
  emu.warp_slots[lane] = v;
  emu.warp_bar->arrive_and_wait();
  const float r = emu.warp_slots[lane ^ mask];
  emu.warp_bar->arrive_and_wait();
  return r;
}
inline float fast_exp(float x) { return expf(x); }
inline float fast_rsqrt(float x) { return 1.0f / sqrtf(x); }
inline float fast_rint(float x) { return rintf(x); }
inline float fast_div(float a, float b) { return a / b; }
inline void atomic_max_u32(uint32_t *p, uint32_t v) { uint32_t o = __atomic_load_n(p, 0); while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, 0, 0)) {} }
inline void enter_stream_order() {}
#define __hip_atomic_load(p, o, s) __atomic_load_n(p, o)
#define __hip_atomic_store(p, v, o, s) __atomic_store_n(p, v, o)
#define __hip_atomic_fetch_add(p, v, o, s) __atomic_fetch_add(p, v, o)
#define __hip_atomic_fetch_max(p, v, o, s) atomic_max_u32(p, v)
#define __HIP_MEMORY_SCOPE_SYSTEM 0
#define __HIP_MEMORY_SCOPE_AGENT 0
inline unsigned long long emu_clock10ns() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (t.tv_sec * 1000000000ull + t.tv_nsec) / 10; }
#define __builtin_readsteadycounter() emu_clock10ns()
#define __builtin_amdgcn_s_sleep(n) sched_yield()
#define __builtin_amdgcn_grid_size_x() (emu_grid_dim * emu_block_dim)
#define __builtin_amdgcn_workgroup_size_x() emu_block_dim

#define AITER_ENTRY(name, threads, Params, ...) \
  AITER_KERNEL void name(Params p) { __VA_ARGS__(p); }

inline float block_sum(float v, float *scratch) {
  const int ws = warp_size();
  for (int m = ws / 2; m > 0; m >>= 1) v += shfl_xor(v, m);
  const unsigned warp = thread_x() / ws, lane = thread_x() % ws, warps = (block_dim_x() + ws - 1) / ws;
  if (lane == 0) scratch[warp] = v;
  sync_block();
  v = lane < warps ? scratch[lane] : 0.0f;
  for (int m = ws / 2; m > 0; m >>= 1) v += shfl_xor(v, m);
  sync_block();
  return v;
}
inline float block_max(float v, float *scratch) {
  const int ws = warp_size();
  for (int m = ws / 2; m > 0; m >>= 1) v = fmaxf(v, shfl_xor(v, m));
  const unsigned warp = thread_x() / ws, lane = thread_x() % ws, warps = (block_dim_x() + ws - 1) / ws;
  if (lane == 0) scratch[warp] = v;
  sync_block();
  v = lane < warps ? scratch[lane] : 0.0f;
  for (int m = ws / 2; m > 0; m >>= 1) v = fmaxf(v, shfl_xor(v, m));
  sync_block();
  return v;
}
"""

# Runs argv[1] ranks through calls of the three kernels (seed argv[2]) and checks them.
DRIVER = r"""
// W ranks (processes, fork) over shared buffers laid out as libaiter/dist/custom_ar.cpp
// lays them out, each making the same calls of the push kernels; then every call's
// results are checked against sums in rank order and across the ranks.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "kernels/allreduce/allreduce.cu"

thread_local EmuThread emu;
unsigned emu_block_dim, emu_grid_dim;

// A kernel's grid: a thread per GPU thread, a barrier per block and per warp.
template <class P>
void launch(void (*kernel)(P), const P &p, unsigned grid, unsigned block) {
  emu_block_dim = block;
  emu_grid_dim = grid;
  const unsigned warps = (block + 31) / 32;
  std::vector<std::unique_ptr<std::barrier<>>> block_bars, warp_bars;
  std::vector<std::vector<float>> slots(grid * warps, std::vector<float>(32));
  for (unsigned b = 0; b < grid; ++b) {
    block_bars.emplace_back(new std::barrier<>(block));
    for (unsigned w = 0; w < warps; ++w) warp_bars.emplace_back(new std::barrier<>(32));
  }
  std::vector<std::thread> threads;
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned t = 0; t < block; ++t)
      threads.emplace_back([&, b, t] {
        const unsigned w = b * warps + t / 32;
        emu = EmuThread{t, b, block_bars[b].get(), warp_bars[w].get(), slots[w].data()};
        kernel(p);
      });
  for (auto &t : threads) t.join();
}

// Push areas of 16 KiB: messages up to 8192 bf16 elements; 3 "multiprocessors".
constexpr size_t kPushMax = 16384, kSlotBytes = (kPushMax + 16 + 255) / 256 * 256;
constexpr size_t kAreaBytes = 65536 + 256, kPushOffset = kArDataOffset + 2 * kAreaBytes;
constexpr unsigned kSms = 3;
constexpr int kCalls = 40;
constexpr long long kMaxElems = 8192;
constexpr long long kStride = 2 * kMaxElems;  // a call's results: out, then residual_out

enum CallKind { kAllReduce, kFusedOne, kFusedTwo };
struct Call { CallKind kind; bool f32; long long n, rows, cols; };

std::vector<Call> make_calls(unsigned seed) {
  std::mt19937 g(seed);
  const long long sizes[] = {1, 2, 7, 8, 9, 100, 1000, 2049, 4096, 4099, 8192};
  std::vector<Call> calls;
  for (int c = 0; c < kCalls; ++c) {
    const CallKind kind = CallKind(g() % 3);
    const bool f32 = g() % 2;
    if (kind == kAllReduce) {
      const long long n = sizes[g() % 11];
      calls.push_back({kind, f32, f32 ? std::min(n, kMaxElems / 2) : n, 0, 0});  // 16 KiB at most
      continue;
    }
    const long long cols = (f32 ? 4 : 8) * (1 + g() % 40);
    long long rows = 1 + g() % 9;
    while (rows * cols > kMaxElems / 2) --rows;
    calls.push_back({kind, f32, rows * cols, rows, cols});
  }
  return calls;
}

// Element i of rank r's x in call c (rank 99: the residual): multiples of 1/64, some -0.0.
float input(int c, int r, long long i) {
  std::mt19937 h(c * 1000003 + r * 7919 + i);
  return i % 97 == 5 ? -0.0f : (int(h() % 2001) - 1000) / 64.0f;
}
float rounded(float v, bool f32) { return f32 ? v : to_f32(from_f32<bf16_t>(v)); }
float weight(long long j) { return 0.5f + (j % 5) * 0.25f; }

template <class P>
void fill_common(P &p, char **bufs, int rank, int world) {
  for (int q = 0; q < kArMaxRanks; ++q) p.bufs[q] = q < world ? bufs[q] : bufs[rank];
  p.push = PushLayout{(long long)kPushOffset, (long long)kSlotBytes};
  p.rank = rank;
  p.world = world;
}

// Rank r's part of call c; its results into dst.
template <class T>
void run_call(const Call &k, int c, char **bufs, int rank, int world, float *dst) {
  std::vector<T> x(k.n), res(k.n), out(k.n), res_out(k.n);
  std::vector<float> w(k.cols);
  for (long long i = 0; i < k.n; ++i) x[i] = from_f32<T>(input(c, rank, i)), res[i] = from_f32<T>(input(c, 99, i));
  for (long long j = 0; j < k.cols; ++j) w[j] = weight(j);
  constexpr bool f32 = sizeof(T) == 4;
  constexpr int N = 16 / sizeof(T);
  if (k.kind == kAllReduce) {
    AllReduceParams p{};
    fill_common(p, bufs, rank, world);
    p.x = x.data(), p.out = out.data(), p.n = k.n, p.x_aligned = p.out_aligned = 1;
    const unsigned blocks = unsigned(std::min<long long>(kSms, ((k.n + N - 1) / N + 255) / 256));
    launch(f32 ? aiter_allreduce_f32_push : aiter_allreduce_bf16_push, p, blocks, 256);
  } else {
    AllReduceNormParams p{};
    fill_common(p, bufs, rank, world);
    p.x = x.data(), p.residual = res.data(), p.residual_out = res_out.data(), p.out = out.data();
    p.weight = w.data(), p.params_f32 = !f32, p.quant = kQuantNone;
    p.rows = k.rows, p.cols = k.cols, p.eps = 1e-6f, p.inv_cols = 1.0f / k.cols;
    const unsigned threads = unsigned((k.cols / N + 31) / 32 * 32);
    // One block a rank: the stand-in's __shared__ is one per process.
    if (k.kind == kFusedOne) launch(f32 ? aiter_allreduce_norm_f32 : aiter_allreduce_norm_bf16, p, 1, threads);
    else launch(f32 ? aiter_allreduce_norm_f32_two_shot : aiter_allreduce_norm_bf16_two_shot, p, 1, threads);
  }
  for (long long i = 0; i < k.n; ++i) dst[i] = to_f32(out[i]), dst[kMaxElems + i] = to_f32(res_out[i]);
}

// Mismatches of call c: the sum (fp32 in rank order, rounded) and the new
// residual exactly, out within 1% of a float64 norm, every rank as rank 0 bitwise.
long long check_call(const Call &k, int c, int world, const float *results) {
  long long bad = 0;
  const float *first = results + size_t(c) * world * kStride;
  for (long long i = 0; i < k.n; ++i) {
    float acc = 0.0f;
    for (int q = 0; q < world; ++q) acc = q == 0 ? rounded(input(c, q, i), k.f32) : acc + rounded(input(c, q, i), k.f32);
    const float sum = rounded(acc, k.f32);
    const float stored = rounded(sum + rounded(input(c, 99, i), k.f32), k.f32);
    for (int r = 0; r < world; ++r) {
      const float *got = first + size_t(r) * kStride;
      bad += memcmp(&got[i], &first[i], 4) != 0 || memcmp(&got[kMaxElems + i], &first[kMaxElems + i], 4) != 0;
      bad += k.kind == kAllReduce ? !(got[i] == sum) : !(got[kMaxElems + i] == stored);
    }
  }
  for (long long row = 0; row < k.rows; ++row) {
    const float *r_out = first + kMaxElems + row * k.cols, *out = first + row * k.cols;
    double squares = 0;
    for (long long j = 0; j < k.cols; ++j) squares += double(r_out[j]) * r_out[j];
    const double inv = 1.0 / std::sqrt(squares / k.cols + 1e-6);
    for (long long j = 0; j < k.cols; ++j) {
      const double e = r_out[j] * inv * weight(j);
      bad += !(std::fabs(out[j] - e) <= 1e-2 * std::fabs(e) + 1e-3);
    }
  }
  return bad;
}

int main(int argc, char **argv) {
  const int world = argc > 1 ? atoi(argv[1]) : 2;
  const std::vector<Call> calls = make_calls(argc > 2 ? atoi(argv[2]) : 1);
  const size_t push_bytes = 2 * world * kSlotBytes, buf_bytes = kPushOffset + push_bytes;
  char *bufs[kArMaxRanks];
  for (int r = 0; r < world; ++r) {  // mapped before fork: the same addresses in every rank
    bufs[r] = (char *)mmap(nullptr, buf_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint32_t *words = (uint32_t *)(bufs[r] + kPushOffset);
    for (size_t i = 0; i < push_bytes / 4; ++i) words[i] = kArPushEmpty;
  }
  float *results = (float *)mmap(nullptr, sizeof(float) * kCalls * world * kStride, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  for (int r = 0; r < world; ++r) {
    if (fork() != 0) continue;
    for (int c = 0; c < kCalls; ++c) {  // no barrier between calls: the ranks drift apart
      float *dst = results + (size_t(c) * world + r) * kStride;
      if (calls[c].f32) run_call<float>(calls[c], c, bufs, r, world, dst);
      else run_call<bf16_t>(calls[c], c, bufs, r, world, dst);
    }
    _exit(0);
  }
  int failed = 0, status = 0;
  for (int r = 0; r < world; ++r) failed += wait(&status) < 0 || status != 0;
  for (int c = 0; c < kCalls; ++c) {
    const long long bad = check_call(calls[c], c, world, results);
    if (bad) printf("call %d kind %d %s n %lld rows %lld: %lld BAD\n", c, int(calls[c].kind), calls[c].f32 ? "f32" : "bf16", calls[c].n, calls[c].rows, bad);
    failed += bad != 0;
  }
  long long left = 0;  // every slot empty again
  for (int r = 0; r < world; ++r)
    for (size_t i = 0; i < push_bytes / 4; ++i) left += ((uint32_t *)(bufs[r] + kPushOffset))[i] != kArPushEmpty;
  printf("world %d: %d bad calls, %lld push words not empty at the end, push_calls %u\n", world, failed, left,
         ((ArSignals *)bufs[0])->push_calls);
  return failed || left;
}
"""


def _compiler():
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            probe = subprocess.run([path, "-std=c++20", "-x", "c++", "-fsyntax-only", "-"], input="#include <barrier>\n",
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return path
    return None


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    if not all(os.path.exists(os.path.join(KERNELS, d, f)) for d, fs in SOURCES.items() for f in fs):
        pytest.skip("no kernel sources (an installed package)")
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++20 compiler with <barrier>")
    root = tmp_path_factory.mktemp("dist_emu")
    for d, files in SOURCES.items():
        os.makedirs(root / "kernels" / d)
        for f in files:
            shutil.copy(os.path.join(KERNELS, d, f), root / "kernels" / d / f)
    (root / "kernels" / "common" / "vendor.h").write_text(VENDOR_SHIM)
    (root / "emu_main.cpp").write_text(DRIVER)
    exe = root / "emu"
    r = subprocess.run([cxx, "-std=c++20", "-O1", "-I", str(root), str(root / "emu_main.cpp"), "-o", str(exe),
                        "-lpthread"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return exe


@pytest.mark.parametrize("world,seed", [(2, 1), (3, 2), (4, 3)])
def test_push_kernels_emulated(emulator, world, seed):
    r = subprocess.run([str(emulator), str(world), str(seed)], capture_output=True, text=True, timeout=240)
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-2000:]
    assert r.returncode == 0, "\n".join(l for l in r.stdout.splitlines() if "BAD" in l)[:4000] + "\n" + summary
    assert f"world {world}: 0 bad calls, 0 push words not empty" in summary
