// Split-K inside a thread-block cluster (sm_90a): the SPLIT blocks of a cluster
// take one output tile, each a share of K, and the blocks of rank 1 ... SPLIT-1
// send their sums to rank 0 through distributed shared memory, which adds them
// and stores the tile.  Few rows of A and few columns of W make fewer tiles than
// multiprocessors (4096 x 4096 at M = 32: 64 tiles of 64 x 64 on 132 SMs);
// splitting K keeps every SM streaming W with no workspace in global memory and
// no second kernel.
//
// Each sending thread owns its `kRegs` accumulator registers, so the exchange is
// per thread: it writes them as 16-byte vectors into its own place of rank 0's
// buffer (consecutive threads, consecutive vectors), then arrives on rank 0's
// barrier with cluster-scope release; rank 0's threads wait with cluster-scope
// acquire, add, and hand the buffer back by arriving on the sender's barrier.
#pragma once

#include "tma.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

// The shared-memory address `local` of this block, as seen in block `rank`.
__device__ __forceinline__ uint32_t cluster_address(uint32_t local, unsigned rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}

__device__ __forceinline__ void store_cluster_v4(uint32_t remote, float a, float b, float c, float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(remote), "f"(a), "f"(b), "f"(c), "f"(d)
               : "memory");
}

__device__ __forceinline__ float4 load_shared_v4(uint32_t local) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(local)
               : "memory");
  return v;
}

// Arrival that publishes this thread's earlier writes to the whole cluster.
__device__ __forceinline__ void barrier_arrive_cluster_release(uint32_t local_bar, unsigned rank) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_address(local_bar, rank))
               : "memory");
}

// Waits for the phase of parity `parity`, seeing what the arrivals published.
__device__ __forceinline__ void barrier_wait_cluster_acquire(uint32_t bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "retry_cluster:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra retry_cluster;\n}" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// The exchange of one tile's sums among the SPLIT blocks of a cluster.
// `buffer`: rank 0's (SPLIT - 1) x kSlotBytes receiving slots (same offset in
// every block); `bars`: SPLIT barriers, [0] "my slot is free again" (senders),
// [r] "rank r's sums arrived" (rank 0).  `threads`: the multiplying threads of a
// block, `thread` this one's index among them.
template <int SPLIT, int REGS, int THREADS>
struct SplitExchange {
  static constexpr int kVectors = REGS / 4;
  static constexpr int kSlotBytes = kVectors * THREADS * 16;
  uint32_t buffer, bars;

  __device__ uint32_t slot(unsigned rank) const { return buffer + (rank - 1) * kSlotBytes; }
  __device__ uint32_t bar(int i) const { return bars + 8 * i; }

  __device__ void init() const {
    for (int i = 0; i < SPLIT; ++i) barrier_init(bar(i), THREADS);
  }

  // Rank r > 0: waits until rank 0 read the previous tile's sums, sends these.
  __device__ __forceinline__ void send(unsigned rank, int thread, unsigned parity, const float (&acc)[REGS]) const {
    barrier_wait_cluster_acquire(bar(0), parity ^ 1);
    const uint32_t remote = cluster_address(slot(rank), 0) + thread * 16;
#pragma unroll
    for (int v = 0; v < kVectors; ++v)
      store_cluster_v4(remote + v * THREADS * 16, acc[4 * v], acc[4 * v + 1], acc[4 * v + 2], acc[4 * v + 3]);
    barrier_arrive_cluster_release(bar(int(rank)), 0);
  }

  // Rank 0: adds every other rank's sums into acc and frees their slots.
  __device__ __forceinline__ void gather(int thread, unsigned parity, float (&acc)[REGS]) const {
#pragma unroll 1
    for (unsigned r = 1; r < SPLIT; ++r) {
      barrier_wait_cluster_acquire(bar(int(r)), parity);
      const uint32_t local = slot(r) + thread * 16;
#pragma unroll
      for (int v = 0; v < kVectors; ++v) {
        const float4 s = load_shared_v4(local + v * THREADS * 16);
        acc[4 * v] += s.x, acc[4 * v + 1] += s.y, acc[4 * v + 2] += s.z, acc[4 * v + 3] += s.w;
      }
      barrier_arrive_cluster_release(bar(0), r);
    }
  }
};

#endif
