// Rotary position embedding in place: a thread per (token, head, chunk) item,
// q's heads then k's, laid out over the grid by TokenGrid.  A chunk is N pairs:
// one pass, each element read and written once, 16-byte accesses in the vector
// variants.
#include "../common/numeric.h"
#include "rope_params.h"

namespace {

constexpr int kMaxThreads = 512;

// N elements of the cos/sin cache as fp32, in accesses of at most 16 bytes (an
// fp32 cache holds 8 bf16 pairs' worth of cos in 32 bytes).
template <class C, int N>
__device__ __forceinline__ void load_cache(const C *p, float (&out)[N]) {
  constexpr int kPer = int(16 / sizeof(C)) < N ? int(16 / sizeof(C)) : N;
#pragma unroll
  for (int j = 0; j < N; j += kPer) {
    float part[kPer];
    load_f32<C, kPer>(p + j, part);
#pragma unroll
    for (int i = 0; i < kPer; ++i) out[j + i] = part[i];
  }
}

__device__ __forceinline__ int64_t position_of(const RopeParams &p, int64_t token) {
  const int64_t at = token * p.pos_stride;
  return p.pos_int64 ? static_cast<const int64_t *>(p.positions)[at]
                     : int64_t(static_cast<const int32_t *>(p.positions)[at]);
}

// The thread's chunk is pairs [i0, i0 + N) of its head, held as two N-element
// spans v[0], v[1] at element offsets off[0], off[1] of the head:
//   NeoX:  v[0] = x[i0 ...] (first elements), v[1] = x[half + i0 ...] (second);
//   GPT-J: v[0], v[1] = x[2 i0 ... 2 i0 + 2N), pair j at flat elements 2j, 2j + 1.
template <bool Neox, int N>
__device__ __forceinline__ float &first_of(float (&v)[2][N], int j) {
  return Neox ? v[0][j] : v[(2 * j) / N][(2 * j) % N];
}
template <bool Neox, int N>
__device__ __forceinline__ float &second_of(float (&v)[2][N], int j) {
  return Neox ? v[1][j] : v[(2 * j + 1) / N][(2 * j + 1) % N];
}

template <class T, class C, int N, bool Neox>
__device__ __forceinline__ void rope_item(const RopeParams &p) {
  int64_t token;
  int item;
  if (!token_item(p.grid, &token, &item)) return;
  const int head_item = item / p.chunks_per_head;
  const int i0 = (item - head_item * p.chunks_per_head) * N;
  // Fields picked one by one (not a reference to p.q or p.k), so the params
  // stay in the kernel-argument space instead of being copied to local memory.
  const bool in_q = head_item < p.q.heads;
  const int head = in_q ? head_item : head_item - p.q.heads;
  T *x = static_cast<T *>(in_q ? p.q.data : p.k.data) + token * (in_q ? p.q.token_stride : p.k.token_stride) +
         head * (in_q ? p.q.head_stride : p.k.head_stride);
  const int off[2] = {Neox ? i0 : 2 * i0, Neox ? p.half + i0 : 2 * i0 + N};

  float v[2][N];
  load_f32<T, N>(x + off[0], v[0]);  // issued before the position arrives
  load_f32<T, N>(x + off[1], v[1]);
  const int64_t pos = position_of(p, token);
  // Positions live in device memory, unchecked by the host: an out-of-range
  // one leaves the token untouched (and its cache row unread).
  if (pos < 0 || pos >= p.max_position) return;
  const C *row = static_cast<const C *>(p.cache) + pos * (2 * int64_t(p.half));
  float cos[N], sin[N];
  load_cache<C, N>(row + i0, cos);
  load_cache<C, N>(row + p.half + i0, sin);
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const float a = first_of<Neox>(v, j), b = second_of<Neox>(v, j);
    first_of<Neox>(v, j) = a * cos[j] - b * sin[j];
    second_of<Neox>(v, j) = b * cos[j] + a * sin[j];
  }
  store_f32<T, N>(x + off[0], v[0]);
  store_f32<T, N>(x + off[1], v[1]);
}

}  // namespace

// Vector variants (N = 16 bytes of T) need rotary_dim / 2 to be a multiple of N
// and 16-byte aligned heads and cache; scalar ones (N = 1) take anything.
#define AITER_ROPE_KERNEL(name, T, C, N, NEOX) \
  AITER_ENTRY(name, kMaxThreads, RopeParams, rope_item<T, C, N, NEOX>)

// aiter-kernel: op=rope variant=f32.f32.neox.vec symbol=aiter_rope_f32_f32_neox_vec4 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f32_f32_neox_vec4, float, float, 4, true)
// aiter-kernel: op=rope variant=f32.f32.gptj.vec symbol=aiter_rope_f32_f32_gptj_vec4 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f32_f32_gptj_vec4, float, float, 4, false)
// aiter-kernel: op=rope variant=f32.f32.neox.scalar symbol=aiter_rope_f32_f32_neox_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f32_f32_neox_scalar, float, float, 1, true)
// aiter-kernel: op=rope variant=f32.f32.gptj.scalar symbol=aiter_rope_f32_f32_gptj_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f32_f32_gptj_scalar, float, float, 1, false)

// aiter-kernel: op=rope variant=f16.f16.neox.vec symbol=aiter_rope_f16_f16_neox_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f16_neox_vec8, half_t, half_t, 8, true)
// aiter-kernel: op=rope variant=f16.f16.gptj.vec symbol=aiter_rope_f16_f16_gptj_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f16_gptj_vec8, half_t, half_t, 8, false)
// aiter-kernel: op=rope variant=f16.f16.neox.scalar symbol=aiter_rope_f16_f16_neox_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f16_neox_scalar, half_t, half_t, 1, true)
// aiter-kernel: op=rope variant=f16.f16.gptj.scalar symbol=aiter_rope_f16_f16_gptj_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f16_gptj_scalar, half_t, half_t, 1, false)
// aiter-kernel: op=rope variant=f16.f32.neox.vec symbol=aiter_rope_f16_f32_neox_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f32_neox_vec8, half_t, float, 8, true)
// aiter-kernel: op=rope variant=f16.f32.gptj.vec symbol=aiter_rope_f16_f32_gptj_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f32_gptj_vec8, half_t, float, 8, false)
// aiter-kernel: op=rope variant=f16.f32.neox.scalar symbol=aiter_rope_f16_f32_neox_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f32_neox_scalar, half_t, float, 1, true)
// aiter-kernel: op=rope variant=f16.f32.gptj.scalar symbol=aiter_rope_f16_f32_gptj_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_f16_f32_gptj_scalar, half_t, float, 1, false)

// aiter-kernel: op=rope variant=bf16.bf16.neox.vec symbol=aiter_rope_bf16_bf16_neox_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_bf16_neox_vec8, bf16_t, bf16_t, 8, true)
// aiter-kernel: op=rope variant=bf16.bf16.gptj.vec symbol=aiter_rope_bf16_bf16_gptj_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_bf16_gptj_vec8, bf16_t, bf16_t, 8, false)
// aiter-kernel: op=rope variant=bf16.bf16.neox.scalar symbol=aiter_rope_bf16_bf16_neox_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_bf16_neox_scalar, bf16_t, bf16_t, 1, true)
// aiter-kernel: op=rope variant=bf16.bf16.gptj.scalar symbol=aiter_rope_bf16_bf16_gptj_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_bf16_gptj_scalar, bf16_t, bf16_t, 1, false)
// aiter-kernel: op=rope variant=bf16.f32.neox.vec symbol=aiter_rope_bf16_f32_neox_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_f32_neox_vec8, bf16_t, float, 8, true)
// aiter-kernel: op=rope variant=bf16.f32.gptj.vec symbol=aiter_rope_bf16_f32_gptj_vec8 block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_f32_gptj_vec8, bf16_t, float, 8, false)
// aiter-kernel: op=rope variant=bf16.f32.neox.scalar symbol=aiter_rope_bf16_f32_neox_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_f32_neox_scalar, bf16_t, float, 1, true)
// aiter-kernel: op=rope variant=bf16.f32.gptj.scalar symbol=aiter_rope_bf16_f32_gptj_scalar block=512 smem=0
AITER_ROPE_KERNEL(aiter_rope_bf16_f32_gptj_scalar, bf16_t, float, 1, false)
