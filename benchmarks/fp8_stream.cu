// Two ways to stream fp8 (e4m3) weight rows W [R, K] against 8 input rows,
// Y [8, R] = X W^T in fp32, for benchmarks/fp8_stream.py (built by nvcc on the
// GPU machine for sm_90a; not part of libaiter).  The question: does the decode
// MoE kernel's fp8 product loop (kernels/moe/moe_decode.cu), which widens every
// weight byte to fp16 for mma.sync, stream slower than fp8 wgmma, which takes
// the codes as they are?
//
//   mma_cvt:   as moe_decode.cu's fp8_rows_times_cols: a warp 16 rows, a lane 16
//              bytes of two rows a 64-byte K step, widened by cvt.rn.f16x2.e4m3x2,
//              four m16n8k16 a step against the inputs decoded to fp16 (global,
//              through L1);
//   wgmma_rs:  a warpgroup 64 rows, the same loads as wgmma's A registers
//              (m64n8k32, e4m3 x e4m3), the inputs' codes in shared memory, each
//              128-byte K stage summed apart and added to fp32 (promotion, as the
//              Triton stages do).
// Both take items (16 or 64 rows) in turn over a grid of two blocks of 256
// threads an SM, and batches of 4 K steps, all loads of a batch at once.
// Both use the library's own pieces (built with -I kernels): load_stream and
// MmaOf (gemm/mma.h), fp8_pairs (attention/fp8_widen.h), smem_descriptor
// (gemm/wgmma_tile.h).
#include "attention/fp8_widen.h"
#include "gemm/mma.h"
#include "gemm/wgmma_tile.h"

namespace {
constexpr int kThreads = 256, kSteps = 4, kStepBytes = 64;
}  // namespace

// w [rows, k] codes, x16 [8, k] fp16 (the inputs' codes decoded), y [8, rows].
extern "C" __global__ void __launch_bounds__(kThreads, 2)
    mma_cvt(const unsigned char *w, const uint16_t *x16, float *y, int rows, int k) {
  const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int warps = gridDim.x * (kThreads / 32), steps = k / kStepBytes;
  for (int item = blockIdx.x * (kThreads / 32) + threadIdx.x / 32; item < rows / 16; item += warps) {
    const unsigned char *w0 = w + (long long)(item * 16 + g) * k, *w8 = w0 + 8LL * k;
    const char *x = reinterpret_cast<const char *>(x16 + (long long)g * k);  // this lane's column: input row g
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int s = 0; s < steps; s += kSteps) {
      uint4 a0[kSteps], a8[kSteps], b[kSteps][2];
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        const int at = (s + u) * kStepBytes + q * 16;
        a0[u] = load_stream(w0 + at), a8[u] = load_stream(w8 + at);
        b[u][0] = __ldg(reinterpret_cast<const uint4 *>(x + 2 * at));
        b[u][1] = __ldg(reinterpret_cast<const uint4 *>(x + 2 * at + 16));
      }
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        const uint32_t r0[4] = {a0[u].x, a0[u].y, a0[u].z, a0[u].w}, r8[4] = {a8[u].x, a8[u].y, a8[u].z, a8[u].w};
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          uint32_t lo0, hi0, lo8, hi8;
          fp8_pairs<kQuantE4m3fn, 0, 1, 2, 3>(r0[m], lo0, hi0);
          fp8_pairs<kQuantE4m3fn, 0, 1, 2, 3>(r8[m], lo8, hi8);
          const uint4 &in = b[u][m / 2];
          MmaOf<half_t>::run(acc, lo0, lo8, hi0, hi8, m % 2 ? in.z : in.x, m % 2 ? in.w : in.y);
        }
      }
    }
    // acc: rows g (0, 1) and g + 8 (2, 3), columns 2q, 2q + 1
    const int r = item * 16 + g;
    y[(2 * q) * (long long)rows + r] = acc[0], y[(2 * q + 1) * (long long)rows + r] = acc[1];
    y[(2 * q) * (long long)rows + r + 8] = acc[2], y[(2 * q + 1) * (long long)rows + r + 8] = acc[3];
  }
}

namespace {

// The byte of an input row's 128-byte K stage that logical K position kb
// (0..127) of the stage's wgmma operands holds.  A thread's 16 loaded bytes of
// a row (bytes 16 q .. 16 q + 15 of a 64-byte step) serve as its A registers
// of the step's two m64n8k32 products as they are: product j's a0 / a1 (rows
// g, g + 8) take bytes 16 q + 8 j + 0..3, its a2 / a3 bytes 16 q + 8 j + 4..7,
// where wgmma reads K positions 4 q + 0..3 and 16 + 4 q + 0..3.  B is stored
// with the same order, so the sums are those of W x.
__device__ __forceinline__ int stage_byte(int kb) {
  const int step = kb / 64, j = (kb % 64) / 32, kk = kb % 32;
  return step * 64 + ((kk % 16) / 4) * 16 + 8 * j + 4 * (kk / 16) + kk % 4;
}

__device__ __forceinline__ void wgmma_rs_e4m3_n8(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                                 uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(b), "r"(accumulate));
}

}  // namespace

// w [rows, k] codes, x8 [8, k] codes, y [8, rows]; k a multiple of 256, 8 x k +
// 1024 bytes of dynamic shared memory (the inputs, stage by stage).
extern "C" __global__ void __launch_bounds__(kThreads, 2)
    wgmma_rs(const unsigned char *w, const unsigned char *x8, float *y, int rows, int k) {
  extern __shared__ __align__(1024) unsigned char raw[];  // (the swizzle's atoms want 1024-byte alignment)
  unsigned char *inputs = raw + ((1024 - (uint32_t(__cvta_generic_to_shared(raw)) & 1023)) & 1023);
  // The inputs in 8 x 128-byte atoms a stage, the 128-byte swizzle (16-byte chunk c of row n at chunk c ^ n).
  for (int i = threadIdx.x; i < 8 * k / 4; i += kThreads) {
    const int n = i / (k / 4), kb4 = (i % (k / 4)) * 4, stage = kb4 / 128, kb = kb4 % 128;
    const uint32_t word = *reinterpret_cast<const uint32_t *>(x8 + (long long)n * k + stage * 128 + stage_byte(kb));
    *reinterpret_cast<uint32_t *>(inputs + stage * 1024 + n * 128 + (((kb / 16) ^ n) * 16) + kb % 16) = word;
  }
  __syncthreads();
  const uint32_t base = uint32_t(__cvta_generic_to_shared(inputs));
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4, g = lane / 4, q = lane % 4;
  const int groups = gridDim.x * (kThreads / 128), steps = k / kStepBytes;
  for (int item = blockIdx.x * (kThreads / 128) + threadIdx.x / 128; item < rows / 64; item += groups) {
    const unsigned char *w0 = w + (long long)(item * 64 + warp * 16 + g) * k, *w8 = w0 + 8LL * k;
    float total[4] = {0.f, 0.f, 0.f, 0.f}, part[2][4] = {};
    for (int s = 0; s < steps; s += kSteps) {  // a batch: two stages
      uint4 a0[kSteps], a8[kSteps];
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        const int at = (s + u) * kStepBytes + q * 16;
        a0[u] = load_stream(w0 + at), a8[u] = load_stream(w8 + at);
      }
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // the batch's two stages, each into its own sums
        const uint64_t desc = smem_descriptor(base + (s / 2 + half) * 1024);
#pragma unroll
        for (int u = 2 * half; u < 2 * half + 2; ++u) {
          const int m = (u % 2) * 2;  // the step's first k32 product within the stage
          wgmma_rs_e4m3_n8(part[half], a0[u].x, a8[u].x, a0[u].y, a8[u].y, desc + 2 * m, m > 0);
          wgmma_rs_e4m3_n8(part[half], a0[u].z, a8[u].z, a0[u].w, a8[u].w, desc + 2 * (m + 1), 1);
        }
      }
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // promoted: each stage's sums added to fp32 (not read before the wait)
        asm volatile("" : "+f"(part[0][i]), "+f"(part[1][i])::"memory");
        total[i] += part[0][i] + part[1][i];
      }
    }
    // total: rows 16 warp + g (0, 1) and + 8 (2, 3), columns 2q, 2q + 1
    const int r = item * 64 + warp * 16 + g;
    y[(2 * q) * (long long)rows + r] = total[0], y[(2 * q + 1) * (long long)rows + r] = total[1];
    y[(2 * q) * (long long)rows + r + 8] = total[2], y[(2 * q + 1) * (long long)rows + r + 8] = total[3];
  }
}
