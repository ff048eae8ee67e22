// Hopper's asynchronous copies into shared memory (sm_90a) and the shared-memory
// barriers (mbarrier) they complete on: the GEMMs' TMA pipelines (gemm/tma.h)
// and the norms' rows of x (norm/norm_ring.cu) wait on them.
#pragma once

#include "vendor.h"

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

// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global
// memory at `src` into shared memory at `dst`, completing on the barrier at `bar`
// (whose phase must have announced them: barrier_arrive_expect).
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, unsigned bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Orders this thread's earlier accesses to shared memory before later
// asynchronous copies into it.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

#endif
