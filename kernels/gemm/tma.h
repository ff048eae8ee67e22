// Hopper's asynchronous copies (sm_90a): TMA tile copies from global to shared
// memory that complete on a shared-memory barrier (mbarrier), and the barrier
// operations the producer and consumer warps of a pipeline use.
#pragma once

#include "../common/vendor.h"
#include "gemm_params.h"

#if defined(AITER_NVIDIA) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 900)

// A barrier that completes a phase when `count` threads arrived and the bytes
// they announced landed.
__device__ __forceinline__ void barrier_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Makes initialized barriers visible to the TMA unit (the async proxy).
__device__ __forceinline__ void barrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrives and announces `bytes` of copies that will complete on this phase.
__device__ __forceinline__ void barrier_arrive_expect(uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void barrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrives on `bar` when this thread's earlier cp.async copies have landed; the
// arrival is one of the barrier's `count` (.noinc).
__device__ __forceinline__ void barrier_arrive_on_copies(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

// Waits until the phase of parity `parity` completed.  A fresh barrier is in
// phase 0, so waiting for parity 1 returns at once: a ring's empty slots.
__device__ __forceinline__ void barrier_wait(uint32_t bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "retry:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra retry;\n}" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// Copies the box at (c0, c1, c2) of a 3-D tensor map into shared memory at
// `dst`; its bytes complete on `bar` (out-of-range elements arrive as zeros).
__device__ __forceinline__ void tma_copy_3d(uint32_t dst, const TensorMap *map, uint32_t bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
      "[%2];" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// The same box copied into shared memory at `dst` of every block of the
// cluster in `blocks` (a bit mask of ranks), completing on the barrier at `bar`
// of each of them.
__device__ __forceinline__ void tma_copy_3d_multicast(uint32_t dst, const TensorMap *map, uint32_t bar, int c0,
                                                      int c1, int c2, unsigned blocks) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "h"(static_cast<unsigned short>(blocks))
      : "memory");
}

// Stores the box at (c0, c1, c2) of a 3-D tensor map from shared memory at `src`
// (elements out of range are not written), as one bulk group of this thread.
// Writes to `src` must be fenced for the async proxy first; tma_store_read_wait
// keeps the shared memory until the copy has read it.
__device__ __forceinline__ void tma_store_3d(uint32_t src, const TensorMap *map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(map), "r"(src),
               "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void tma_store_read_wait() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }

// Arrives on the barrier at the same shared-memory offset in block `rank` of the
// cluster.  Default (CTA-scope) release: a hand-back of a slot whose reads are
// done needs no more, and `.release.cluster` here made the clustered GEMM
// 1.4-1.8x slower (H100, measured).
__device__ __forceinline__ void barrier_arrive_remote(uint32_t bar, unsigned rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

// Every thread of every block of the cluster waits here for all the others.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ void tma_prefetch_map(const TensorMap *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// Hands registers from the copying warpgroup to the multiplying ones.
template <int N>
__device__ __forceinline__ void registers_shrink() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_grow() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

#endif
