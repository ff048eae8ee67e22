// Does this compute-sanitizer's racecheck follow mbarrier synchronization?
// The question decides whether a racecheck report on a warp-specialized kernel
// (a producer warp filling shared-memory slots, consumer warps handing them back
// through mbarriers) is a real hazard.  Two rings of one slot, driven like the
// block-scaled GEMM's scales (kernels/gemm/wgmma_ws.h):
//   correct: every consumer warp arrives on the empty barrier after its lanes'
//            loads (__syncwarp first), so each write is ordered after each read;
//   racy:    one consumer thread arrives for all four warps, so a lagging warp's
//            loads are ordered before nothing the producer waits for.
// A racecheck that models mbarriers reports hazards for `racy` only.
//   nvcc -arch=sm_90a -o probe tools/racecheck/mbarrier_probe.cu
//   compute-sanitizer --tool racecheck ./probe correct   (and: ./probe racy)
#include <cstdio>
#include <cstring>
#include <cstdint>

__device__ __forceinline__ uint32_t smem(const void *p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void init(uint64_t *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(bar)) : "memory");
}
__device__ __forceinline__ void wait(uint64_t *bar, unsigned parity) {
  asm volatile("{\n.reg .pred done;\nretry:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra retry;\n}" ::"r"(smem(bar)), "r"(parity) : "memory");
}

// Warp 0 produces `rounds` values into one 32-word slot; warps 1-4 consume them.
__global__ void ring(int *sum, int rounds, bool per_warp) {
  __shared__ uint64_t full, empty;
  __shared__ int slot[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    init(&full, 32);
    init(&empty, per_warp ? 4 : 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  int total = 0;
  for (int r = 0; r < rounds; ++r) {
    const unsigned parity = r & 1;
    if (warp == 0) {
      wait(&empty, parity ^ 1);
      slot[lane] = r * 32 + lane;
      arrive(&full);
    } else {
      wait(&full, parity);
      total += slot[(lane + warp) % 32];
      if (per_warp) {
        __syncwarp();
        if (lane == 0) arrive(&empty);
      } else if (threadIdx.x == 32) {
        arrive(&empty);
      }
    }
  }
  if (warp > 0) atomicAdd(sum, total);
}

int main(int argc, char **argv) {
  const bool per_warp = argc > 1 && std::strcmp(argv[1], "correct") == 0;
  int *sum;
  cudaMalloc(&sum, sizeof(int));
  cudaMemset(sum, 0, sizeof(int));
  ring<<<1, 160>>>(sum, 64, per_warp);
  int host = 0;
  cudaMemcpy(&host, sum, sizeof(int), cudaMemcpyDeviceToHost);
  std::printf("%s: sum %d, %s\n", per_warp ? "correct" : "racy", host, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
