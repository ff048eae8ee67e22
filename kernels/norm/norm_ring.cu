// RMSNorm + dynamic per-row quantization of many rows on Hopper (sm_90a), with
// persistent blocks: a few an SM, each taking every gridDim-th row.  Each row
// of x arrives in shared memory through one bulk asynchronous copy, issued
// STAGES rows ahead, so an SM keeps reading while its blocks reduce, scale and
// store.  The one-block-a-row tiles (norm.cu) read nothing while a block turns
// its row into output (about a fifth of its life), and their first wave of
// blocks ends all at once.  rmsnorm_quant at 4096 x 4096 bf16 on an H100:
// 25.5-26.1 us with them, 23.7-24.7 with these (docs/performance.md,
// "rmsnorm_quant through a ring of rows").  With 16384 rows these took 79 us
// against 75: the host takes them for rows of 2056-8192 16-bit elements, weights
// stored as x's dtype, up to 2^24 elements (libaiter/gpu/norm.cpp).
#include "../common/async_copy.h"
#include "../common/numeric.h"
#include "norm_params.h"
#include "row_io.h"

#if defined(AITER_NVIDIA) && __CUDA_ARCH__ == 900

namespace {

__device__ __forceinline__ uint32_t shared_address(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One row of `p` a stage: row_bytes of x into stage `s` of the ring, completing
// on the stage's barrier.  Called by one thread.
template <class T>
__device__ __forceinline__ void fetch_row(const NormParams &p, long long row, uint32_t stage, uint32_t bar) {
  const unsigned row_bytes = unsigned(p.cols) * sizeof(T);
  barrier_arrive_expect(bar, row_bytes);
  bulk_copy(stage, static_cast<const T *>(p.x) + row * p.x_stride, row_bytes, bar);
}

// The host guarantees: 16-byte aligned x, rows and weights; cols * sizeof(T) a
// multiple of 16 and at most R * blockDim chunks of N; no more blocks than rows;
// (STAGES + 1) * R * blockDim * 16 bytes of dynamic shared memory: the stages,
// then the weights.  K, the 8-bit format, is fixed for the whole loop: with the
// format picked for each row (store_row), the loop held the code of all four.
template <class T, int N, int R, int STAGES, int K>
__device__ void ring_rms_quant(const NormParams &p) {
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ __align__(8) uint64_t full[STAGES];  // stage s holds its row
  __shared__ float scratch[32];
  const unsigned tid = thread_x(), nthreads = block_dim_x();
  const uint32_t ring_at = shared_address(ring), full_at = shared_address(full);
  const uint32_t stage_bytes = R * nthreads * N * sizeof(T);
  const long long step = gridDim.x;
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) barrier_init(full_at + 8 * s, 1);
    barrier_init_fence();
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      const long long row = block_x() + s * step;
      if (row < p.rows) fetch_row<T>(p, row, ring_at + s * stage_bytes, full_at + 8 * s);
    }
  }
  // The weights, the same for every row, wait in shared memory: held in
  // registers they left too few for the rest (64 a thread, for 2048 threads an
  // SM; bf16 spilled).
  Vec<T, N> *weights_at = reinterpret_cast<Vec<T, N> *>(ring + STAGES * stage_bytes);
  {
    Vec<T, N> weights[R];
    load_chunks<T, N, R>(static_cast<const T *>(p.weight), p.cols, weights);
#pragma unroll
    for (int r = 0; r < R; ++r) weights_at[r * nthreads + tid] = weights[r];
  }
  sync_block();  // the barriers are initialized, the weights stored
  int s = 0;
  unsigned phase = 0;
  for (long long row = block_x(); row < p.rows; row += step) {
    barrier_wait(full_at + 8 * s, phase);
    Vec<T, N> raw[R];
    load_chunks<T, N, R>(reinterpret_cast<const T *>(ring + s * stage_bytes), p.cols, raw);
    float squares = 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool in_row = (long long)(r * nthreads + tid) * N < p.cols;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const float v = to_f32(raw[r].v[i]);
        squares += in_row ? v * v : 0.0f;
      }
    }
    const float inv_std = fast_rsqrt(block_sum(squares, scratch) * p.inv_cols + p.eps);
    if (tid == 0 && row + STAGES * step < p.rows) {  // past block_sum's barriers every thread has read stage s
      fence_async_shared();
      fetch_row<T>(p, row + STAGES * step, ring_at + s * stage_bytes, full_at + 8 * s);
    }
    Vec<T, N> weights[R];
    load_chunks<T, N, R>(reinterpret_cast<const T *>(weights_at), p.cols, weights);
    float y[R][N];  // 0 past the row, as the amax needs
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool in_row = (long long)(r * nthreads + tid) * N < p.cols;
#pragma unroll
      for (int i = 0; i < N; ++i) y[r][i] = in_row ? to_f32(raw[r].v[i]) * inv_std * to_f32(weights[r].v[i]) : 0.0f;
    }
    const float inv_scale = store_row_scale<N, R>(p, row, y, K, scratch);
    store_quantized_row<K, N, R>(p, static_cast<uint8_t *>(p.out) + row * p.out_stride, y, inv_scale);
    if (++s == STAGES) s = 0, phase ^= 1;
  }
}

}  // namespace

// Two stages; blocks of 128 threads for rows of up to 4096 elements (eight
// blocks an SM), of 256 up to 8192 (four).  An experiment (H100, bf16,
// 2026-11-24, fp8 e4m3fn only, weights in registers): at 4096 x 4096 these took
// 23.7 us, 256 threads with four stages 24.2-24.7, 128 threads with four stages
// 25.4; weights kept in registers instead of shared memory, in the
// library: no faster (4096 x 4096 24.5 / 25.3 against 24.7 / 23.7 us).  The
// format picked once a kernel instead of once a row: as fast (25.2 / 24.5
// against 25.2 us, one round of the other disturbed).
#define AITER_NORM_RING(name, T, THREADS, BLOCKS_PER_SM)                                      \
  AITER_KERNEL void AITER_LAUNCH_BOUNDS_MIN(THREADS, BLOCKS_PER_SM) name(NormParams p) {       \
    enter_stream_order();                                                                      \
    with_kind(p.quant, [&](auto kind) { ring_rms_quant<T, 8, 4, 2, decltype(kind)::value>(p); }); \
  }
AITER_NORM_RING(aiter_norm_ring_f16_t128_rms_q, half_t, 128, 8)
AITER_NORM_RING(aiter_norm_ring_f16_t256_rms_q, half_t, 256, 4)
AITER_NORM_RING(aiter_norm_ring_bf16_t128_rms_q, bf16_t, 128, 8)
AITER_NORM_RING(aiter_norm_ring_bf16_t256_rms_q, bf16_t, 256, 4)

#endif

// aiter-kernel-family: op=norm variant={dt}.ring.{tile}.rms_q symbol=aiter_norm_ring_{dt}_{tile}_rms_q block={block} smem={smem} dt=f16,bf16 tile=t128:128:24576,t256:256:49152
