// Quantization to int8 / fp8 with the CPU backend's rules (libaiter/cpu/quantize.hpp):
// amax skips NaN, scale = dynamic_scale(amax), values x * (1.0f / scale) rounded by
// quantize().
//
// Per token: one block per row.  The row stays in registers between its amax and
// its quantization (x read once) when it fits; longer or unaligned rows are read
// twice, the second time mostly from L2.
// Per tensor, dynamic (where the host does not pick quant_resident.cu's one
// kernel): four steps on one stream, no allocation, no host sync:
//   memset the scale slot to 0 (host), `amax` (atomic max of |x|'s float bits into
//   the slot: non-negative floats order like their bits), `tensor` (quantize with
//   the scale made from the slot), `finalize` (the slot becomes the scale; only
//   after every block of `tensor` has read the amax).
// Per tensor, static: `tensor` alone, with the given scale.
#include "../common/numeric.h"
#include "../common/quant_store.h"
#include "quant_params.h"

namespace {

constexpr int kTokenThreads = 512;   // per-token launch bound
constexpr int kTensorThreads = 256;  // per-tensor launch bound
constexpr int kChunk = 8;            // elements of a vector access: 16-byte loads (two for fp32), 8-byte stores
// Chunks a thread loads at once: 4 for amax (persistent blocks, 48 registers),
// 2 for quantizing (one tile per block; at 4 the 64 registers a thread halve the
// warps an SM holds, and H100 bandwidth drops from 2.93 to 2.65 TB/s).
constexpr int kAmaxUnroll = 4;
constexpr int kQuantizeUnroll = 2;

// N elements of T at p, as fp32: 16-byte loads when N fills them, else single elements.
template <class T, int N>
__device__ __forceinline__ void load_chunk(const T *p, float (&out)[N]) {
  constexpr int kPer16 = 16 / int(sizeof(T));
  if constexpr (N % kPer16 == 0) {
#pragma unroll
    for (int j = 0; j < N; j += kPer16) {
      float part[kPer16];
      load_f32<T, kPer16>(p + j, part);
#pragma unroll
      for (int i = 0; i < kPer16; ++i) out[j + i] = part[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_f32(p[i]);
  }
}

template <int N>
__device__ __forceinline__ void zero(float (&v)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = 0.0f;
}

// fmaxf skips NaN, as std::max(m, |x|) does on the CPU.
template <int N>
__device__ __forceinline__ float amax_of(float m, const float (&v)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) m = fmaxf(m, fabsf(v[i]));
  return m;
}
template <int U, int N>
__device__ __forceinline__ float amax_of(float m, const float (&v)[U][N]) {
#pragma unroll
  for (int u = 0; u < U; ++u) m = amax_of(m, v[u]);
  return m;
}

// A group: U chunks of a thread, `step` columns apart from column c0 on; chunks
// past the row's end read as 0.  All U loads are issued before any is used, with
// no branch around them: a chunk past the end loads the row's first chunk and is
// dropped.  (Loaded in a branch and converted there, each load waited for the
// one before it: 1 x 4096 static quantization took three trips to memory, 4.6 us
// against torch.compile's 3.2 us on an H100, Nsight Compute, caches flushed.)
template <class T, int N, int U>
__device__ __forceinline__ void load_group(const T *x, long long c0, long long step, long long cols,
                                           float (&v)[U][N]) {
  constexpr int kPer16 = 16 / int(sizeof(T));
  constexpr int kPiece = N % kPer16 == 0 ? kPer16 : N % 2 == 0 ? 2 : 1;  // elements a load moves
  Vec<T, kPiece> raw[U][N / kPiece];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const long long c = c0 + u * step;
    const T *chunk = x + (c < cols ? c : 0);
#pragma unroll
    for (int j = 0; j < N / kPiece; ++j) raw[u][j] = *reinterpret_cast<const Vec<T, kPiece> *>(chunk + j * kPiece);
  }
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int i = 0; i < N; ++i) v[u][i] = c0 + u * step < cols ? to_f32(raw[u][i / kPiece].v[i % kPiece]) : 0.0f;
}

// Stores the chunks of a group that lie inside the row, quantized.
template <int K, int N, int U>
__device__ __forceinline__ void store_group(uint8_t *out, long long c0, long long step, long long cols,
                                            const float (&v)[U][N], float inv_scale) {
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (c0 + u * step < cols) store_quantized<K, N>(out + c0 + u * step, v[u], inv_scale);
}

template <class T>
__device__ __forceinline__ const T *x_row(const QuantParams &p, long long row) {
  return static_cast<const T *>(p.x) + row * p.x_stride;
}
__device__ __forceinline__ uint8_t *out_row(const QuantParams &p, long long row) {
  return static_cast<uint8_t *>(p.out) + row * p.out_stride;
}

// ---- per token ------------------------------------------------------------------
// Thread t owns chunks r * blockDim + t (r < R) of N elements; the host picks
// blockDim so that R chunks a thread cover the row.
template <class T, int N, int R>
__device__ void per_token_cached(const QuantParams &p) {
  __shared__ float scratch[32];
  const long long row = block_x();
  const unsigned tid = thread_x(), threads = block_dim_x();
  const T *x = x_row<T>(p, row);
  float v[R][N];
  float amax = 0.0f;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long c = (long long)(r * threads + tid) * N;
    if (c < p.cols)
      load_chunk<T, N>(x + c, v[r]);
    else
      zero(v[r]);
    amax = amax_of(amax, v[r]);
  }
  const float scale = dynamic_scale(block_max(amax, scratch), p.quant);
  if (tid == 0) p.scale[row] = scale;
  const float inv_scale = 1.0f / scale;
  uint8_t *out = out_row(p, row);
  with_kind(p.quant, [&](auto kind) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const long long c = (long long)(r * threads + tid) * N;
      if (c < p.cols) store_quantized<decltype(kind)::value, N>(out + c, v[r], inv_scale);
    }
  });
}

// Rows of any length: amax in one pass over the row, quantization in a second
// (from L2, mostly), kTwoPassUnroll chunks a thread in flight.
constexpr int kTwoPassUnroll = 4;

template <class T, int N>
__device__ void per_token_two_pass(const QuantParams &p) {
  __shared__ float scratch[32];
  const long long row = block_x();
  const long long step = (long long)block_dim_x() * N, tile = step * kTwoPassUnroll;
  const long long first = (long long)thread_x() * N;
  const T *x = x_row<T>(p, row);
  float amax = 0.0f;
  for (long long c0 = first; c0 < p.cols; c0 += tile) {
    float v[kTwoPassUnroll][N];
    load_group<T, N, kTwoPassUnroll>(x, c0, step, p.cols, v);
    amax = amax_of(amax, v);
  }
  const float scale = dynamic_scale(block_max(amax, scratch), p.quant);
  if (thread_x() == 0) p.scale[row] = scale;
  const float inv_scale = 1.0f / scale;
  uint8_t *out = out_row(p, row);
  with_kind(p.quant, [&](auto kind) {
    for (long long c0 = first; c0 < p.cols; c0 += tile) {
      float v[kTwoPassUnroll][N];
      load_group<T, N, kTwoPassUnroll>(x, c0, step, p.cols, v);
      store_group<decltype(kind)::value, N, kTwoPassUnroll>(out, c0, step, p.cols, v, inv_scale);
    }
  });
}

// ---- per tensor -----------------------------------------------------------------
// A grid-stride walk over tiles of blockDim * U chunks, each tile a contiguous
// stretch of one row: blocks (grid_cols x grid_rows) stride over rows with block_y
// and along each row with block_x.  f gets the thread's first column c0 in the
// tile; its U chunks are `step` columns apart.  `last_first` numbers the blocks
// from the grid's end, so that blocks launched first take the tiles at x's end.
template <int N, int U, class F>
__device__ __forceinline__ void for_each_group(const QuantParams &p, F &&f, bool last_first = false) {
  const long long bx = last_first ? p.grid_cols - 1 - block_x() : block_x();
  const long long by = last_first ? p.grid_rows - 1 - block_y() : block_y();
  const long long step = (long long)block_dim_x() * N, tile = step * U;
  const long long first = bx * tile + (long long)thread_x() * N;
  for (long long row = by; row < p.rows; row += p.grid_rows)
    for (long long c0 = first; c0 < p.cols; c0 += p.grid_cols * tile) f(row, c0, step);
}

// max |x| over the block's groups (the whole tensor when the grid is 1 x 1).
template <class T, int N>
__device__ __forceinline__ float groups_amax(const QuantParams &p, float *scratch) {
  float amax = 0.0f;
  for_each_group<N, kAmaxUnroll>(p, [&](long long row, long long c0, long long step) {
    float v[kAmaxUnroll][N];
    load_group<T, N, kAmaxUnroll>(x_row<T>(p, row), c0, step, p.cols, v);
    amax = amax_of(amax, v);
  });
  return block_max(amax, scratch);
}

// Quantizes the block's groups; inv_scale() gives 1 / scale, read after the
// first loads of x are on their way.  The dynamic op's pass (scale_is_amax) runs
// right after the amax pass, whose persistent blocks read x from start to end:
// taking the tiles last first, it finds the end of x still in L2 (H100, bf16,
// in turns: 16384 x 4096 127.9 -> 123.5 us, 4096 x 8192 71.3 -> 67.3 us).
template <class T, int N, int U, class InvScale>
__device__ __forceinline__ void quantize_groups(const QuantParams &p, InvScale &&inv_scale) {
  with_kind(p.quant, [&](auto kind) {
    for_each_group<N, U>(
        p,
        [&](long long row, long long c0, long long step) {
          float v[U][N];
          load_group<T, N, U>(x_row<T>(p, row), c0, step, p.cols, v);
          store_group<decltype(kind)::value, N, U>(out_row(p, row), c0, step, p.cols, v, inv_scale());
        },
        p.scale_is_amax != 0);
  });
}

template <class T, int N>
__device__ void tensor_amax(const QuantParams &p) {
  __shared__ float scratch[32];
  const float amax = groups_amax<T, N>(p, scratch);
  if (thread_x() == 0 && amax > 0.0f) atomic_max_u32(reinterpret_cast<uint32_t *>(p.scale), f32_bits(amax));
}

// The scale to divide by: given, or made from the amax in the slot.
__device__ __forceinline__ float inverse_scale(const QuantParams &p) {
  const float given = *p.scale_in;
  return 1.0f / (p.scale_is_amax ? dynamic_scale(given, p.quant) : given);
}

// Launched with one tile per block, so the scale is read once per block, after
// the block's loads of x are on their way (its latency then hides behind theirs).
template <class T, int N, int U>
__device__ void tensor_quantize(const QuantParams &p) {
  quantize_groups<T, N, U>(p, [&] { return inverse_scale(p); });
}

// Few tiles of one row (contiguous rows folded into one, fewer than 2^31
// elements): a pair of elements a thread, 32-bit indices, the format fixed at
// compile time and no loop, so that x's load issues a dozen instructions after
// the start rather than some sixty (the grid-stride walk's 64-bit set-up and the
// format's branches).  Single-call graph replays of static 1-16 x 4096 on an
// H100 lost 0.2-0.3 us to torch.compile's kernel, which loads after seven.
template <class T, int K>
__device__ void tensor_pairs(const QuantParams &p) {
  const unsigned first = (block_x() * block_dim_x() + thread_x()) * 2u;
  if (first >= unsigned(p.cols)) return;
  const Vec<T, 2> pair = *reinterpret_cast<const Vec<T, 2> *>(static_cast<const T *>(p.x) + first);
  const float v[2] = {to_f32(pair.v[0]), to_f32(pair.v[1])};
  store_quantized<K, 2>(static_cast<uint8_t *>(p.out) + first, v, inverse_scale(p));
}

// One row (contiguous rows folded) that one group of kAmaxUnroll chunks a
// thread covers stays in registers between its amax and its quantization, so
// it is read once: the second read, from L2, cost the 1 x 4096 bf16 kernel
// 2.40 us against torch.compile's 1.86 (kernel durations in a CUDA graph after an
// L2 flush, H100, 2026-11-24).  False, having done nothing, for larger tensors.
template <class T, int N>
__device__ __forceinline__ bool tensor_small_in_registers(const QuantParams &p, float *scratch) {
  const long long step = (long long)block_dim_x() * N, c0 = (long long)thread_x() * N;
  if (p.rows != 1 || p.cols > step * kAmaxUnroll) return false;
  float v[kAmaxUnroll][N];
  load_group<T, N, kAmaxUnroll>(x_row<T>(p, 0), c0, step, p.cols, v);  // chunks past the end read as 0
  const float scale = dynamic_scale(block_max(amax_of(0.0f, v), scratch), p.quant);
  if (thread_x() == 0) p.scale[0] = scale;
  const float inv = 1.0f / scale;
  with_kind(p.quant, [&](auto kind) {
    store_group<decltype(kind)::value, N, kAmaxUnroll>(out_row(p, 0), c0, step, p.cols, v, inv);
  });
  return true;
}

// Small tensors in one launch: a single block (grid 1 x 1, so the grid-stride
// loops cover everything) finds amax, writes the scale and quantizes, the second
// read of x coming from cache.  Same amax, scale and rounding as the
// memset + amax + tensor + finalize sequence, without its three extra launches.
template <class T, int N>
__device__ void tensor_small(const QuantParams &p) {
  __shared__ float scratch[32];
  if (tensor_small_in_registers<T, N>(p, scratch)) return;
  const float scale = dynamic_scale(groups_amax<T, N>(p, scratch), p.quant);
  if (thread_x() == 0) p.scale[0] = scale;
  const float inv = 1.0f / scale;
  quantize_groups<T, N, kQuantizeUnroll>(p, [&] { return inv; });
}

}  // namespace

#define AITER_QUANT_SMALL_KERNEL(name, T, N) \
  AITER_ENTRY(name, kTensorThreads, QuantParams, tensor_small<T, N>)
// aiter-kernel: op=quant variant=small.f32.vec symbol=aiter_quant_small_f32_vec block=256 smem=0
AITER_QUANT_SMALL_KERNEL(aiter_quant_small_f32_vec, float, kChunk)
// aiter-kernel: op=quant variant=small.f16.vec symbol=aiter_quant_small_f16_vec block=256 smem=0
AITER_QUANT_SMALL_KERNEL(aiter_quant_small_f16_vec, half_t, kChunk)
// aiter-kernel: op=quant variant=small.bf16.vec symbol=aiter_quant_small_bf16_vec block=256 smem=0
AITER_QUANT_SMALL_KERNEL(aiter_quant_small_bf16_vec, bf16_t, kChunk)
// aiter-kernel: op=quant variant=small.f32.scalar symbol=aiter_quant_small_f32_scalar block=256 smem=0
AITER_QUANT_SMALL_KERNEL(aiter_quant_small_f32_scalar, float, 1)
// aiter-kernel: op=quant variant=small.f16.scalar symbol=aiter_quant_small_f16_scalar block=256 smem=0
AITER_QUANT_SMALL_KERNEL(aiter_quant_small_f16_scalar, half_t, 1)
// aiter-kernel: op=quant variant=small.bf16.scalar symbol=aiter_quant_small_bf16_scalar block=256 smem=0
AITER_QUANT_SMALL_KERNEL(aiter_quant_small_bf16_scalar, bf16_t, 1)

// Vector variants (N = kChunk) need cols % 8 == 0, 16-byte aligned rows of x and
// 8-byte aligned rows of out; scalar ones (N = 1) take anything.
#define AITER_QUANT_TOKEN_KERNEL(name, T, R) \
  AITER_ENTRY(name, kTokenThreads, QuantParams, per_token_cached<T, kChunk, R>)
#define AITER_QUANT_LOOP_KERNEL(name, T, N) \
  AITER_ENTRY(name, kTokenThreads, QuantParams, per_token_two_pass<T, N>)
#define AITER_QUANT_TENSOR_KERNELS(amax_name, quantize_name, T, N)       \
  AITER_ENTRY(amax_name, kTensorThreads, QuantParams, tensor_amax<T, N>) \
  AITER_ENTRY(quantize_name, kTensorThreads, QuantParams, tensor_quantize<T, N, kQuantizeUnroll>)
// Few tiles: a pair of elements a thread, one group, so that each thread's chain
// of instructions is short and the blocks spread over many SMs.
#define AITER_QUANT_TENSOR_PAIR_KERNEL(name, T) \
  AITER_ENTRY(name, kTensorThreads, QuantParams, tensor_quantize<T, 2, 1>)

// Per token, row in registers: R chunks of 8 a thread, 512 threads, so rows of up
// to 8192 (r2), 16384 (r4) or 32768 (r8) elements.
// aiter-kernel: op=quant variant=token.f32.r2 symbol=aiter_quant_token_f32_r2 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_f32_r2, float, 2)
// aiter-kernel: op=quant variant=token.f32.r4 symbol=aiter_quant_token_f32_r4 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_f32_r4, float, 4)
// aiter-kernel: op=quant variant=token.f32.r8 symbol=aiter_quant_token_f32_r8 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_f32_r8, float, 8)
// aiter-kernel: op=quant variant=token.f16.r2 symbol=aiter_quant_token_f16_r2 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_f16_r2, half_t, 2)
// aiter-kernel: op=quant variant=token.f16.r4 symbol=aiter_quant_token_f16_r4 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_f16_r4, half_t, 4)
// aiter-kernel: op=quant variant=token.f16.r8 symbol=aiter_quant_token_f16_r8 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_f16_r8, half_t, 8)
// aiter-kernel: op=quant variant=token.bf16.r2 symbol=aiter_quant_token_bf16_r2 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_bf16_r2, bf16_t, 2)
// aiter-kernel: op=quant variant=token.bf16.r4 symbol=aiter_quant_token_bf16_r4 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_bf16_r4, bf16_t, 4)
// aiter-kernel: op=quant variant=token.bf16.r8 symbol=aiter_quant_token_bf16_r8 block=512 smem=0
AITER_QUANT_TOKEN_KERNEL(aiter_quant_token_bf16_r8, bf16_t, 8)

// Per token, any row: read twice.
// aiter-kernel: op=quant variant=token.f32.loop.vec symbol=aiter_quant_token_f32_loop_vec block=512 smem=0
AITER_QUANT_LOOP_KERNEL(aiter_quant_token_f32_loop_vec, float, kChunk)
// aiter-kernel: op=quant variant=token.f16.loop.vec symbol=aiter_quant_token_f16_loop_vec block=512 smem=0
AITER_QUANT_LOOP_KERNEL(aiter_quant_token_f16_loop_vec, half_t, kChunk)
// aiter-kernel: op=quant variant=token.bf16.loop.vec symbol=aiter_quant_token_bf16_loop_vec block=512 smem=0
AITER_QUANT_LOOP_KERNEL(aiter_quant_token_bf16_loop_vec, bf16_t, kChunk)
// aiter-kernel: op=quant variant=token.f32.loop.scalar symbol=aiter_quant_token_f32_loop_scalar block=512 smem=0
AITER_QUANT_LOOP_KERNEL(aiter_quant_token_f32_loop_scalar, float, 1)
// aiter-kernel: op=quant variant=token.f16.loop.scalar symbol=aiter_quant_token_f16_loop_scalar block=512 smem=0
AITER_QUANT_LOOP_KERNEL(aiter_quant_token_f16_loop_scalar, half_t, 1)
// aiter-kernel: op=quant variant=token.bf16.loop.scalar symbol=aiter_quant_token_bf16_loop_scalar block=512 smem=0
AITER_QUANT_LOOP_KERNEL(aiter_quant_token_bf16_loop_scalar, bf16_t, 1)

// Per tensor: amax into the slot, and quantization with the slot's or a given scale.
// aiter-kernel: op=quant variant=amax.f32.vec symbol=aiter_quant_amax_f32_vec block=256 smem=0
// aiter-kernel: op=quant variant=tensor.f32.vec symbol=aiter_quant_tensor_f32_vec block=256 smem=0
AITER_QUANT_TENSOR_KERNELS(aiter_quant_amax_f32_vec, aiter_quant_tensor_f32_vec, float, kChunk)
// aiter-kernel: op=quant variant=amax.f16.vec symbol=aiter_quant_amax_f16_vec block=256 smem=0
// aiter-kernel: op=quant variant=tensor.f16.vec symbol=aiter_quant_tensor_f16_vec block=256 smem=0
AITER_QUANT_TENSOR_KERNELS(aiter_quant_amax_f16_vec, aiter_quant_tensor_f16_vec, half_t, kChunk)
// aiter-kernel: op=quant variant=amax.bf16.vec symbol=aiter_quant_amax_bf16_vec block=256 smem=0
// aiter-kernel: op=quant variant=tensor.bf16.vec symbol=aiter_quant_tensor_bf16_vec block=256 smem=0
AITER_QUANT_TENSOR_KERNELS(aiter_quant_amax_bf16_vec, aiter_quant_tensor_bf16_vec, bf16_t, kChunk)
// aiter-kernel: op=quant variant=amax.f32.scalar symbol=aiter_quant_amax_f32_scalar block=256 smem=0
// aiter-kernel: op=quant variant=tensor.f32.scalar symbol=aiter_quant_tensor_f32_scalar block=256 smem=0
AITER_QUANT_TENSOR_KERNELS(aiter_quant_amax_f32_scalar, aiter_quant_tensor_f32_scalar, float, 1)
// aiter-kernel: op=quant variant=amax.f16.scalar symbol=aiter_quant_amax_f16_scalar block=256 smem=0
// aiter-kernel: op=quant variant=tensor.f16.scalar symbol=aiter_quant_tensor_f16_scalar block=256 smem=0
AITER_QUANT_TENSOR_KERNELS(aiter_quant_amax_f16_scalar, aiter_quant_tensor_f16_scalar, half_t, 1)
// aiter-kernel: op=quant variant=amax.bf16.scalar symbol=aiter_quant_amax_bf16_scalar block=256 smem=0
// aiter-kernel: op=quant variant=tensor.bf16.scalar symbol=aiter_quant_tensor_bf16_scalar block=256 smem=0
AITER_QUANT_TENSOR_KERNELS(aiter_quant_amax_bf16_scalar, aiter_quant_tensor_bf16_scalar, bf16_t, 1)

// aiter-kernel: op=quant variant=tensor.f32.vec2 symbol=aiter_quant_tensor_f32_vec2 block=256 smem=0
AITER_QUANT_TENSOR_PAIR_KERNEL(aiter_quant_tensor_f32_vec2, float)
// aiter-kernel: op=quant variant=tensor.f16.vec2 symbol=aiter_quant_tensor_f16_vec2 block=256 smem=0
AITER_QUANT_TENSOR_PAIR_KERNEL(aiter_quant_tensor_f16_vec2, half_t)
// aiter-kernel: op=quant variant=tensor.bf16.vec2 symbol=aiter_quant_tensor_bf16_vec2 block=256 smem=0
AITER_QUANT_TENSOR_PAIR_KERNEL(aiter_quant_tensor_bf16_vec2, bf16_t)

#define AITER_QUANT_PAIRS_KERNEL(name, T, K) AITER_ENTRY(name, kTensorThreads, QuantParams, tensor_pairs<T, K>)
#define AITER_QUANT_PAIRS_KERNELS(tag, T)                                       \
  AITER_QUANT_PAIRS_KERNEL(aiter_quant_pairs_##tag##_i8, T, kQuantInt8)         \
  AITER_QUANT_PAIRS_KERNEL(aiter_quant_pairs_##tag##_e4m3fn, T, kQuantE4m3fn)   \
  AITER_QUANT_PAIRS_KERNEL(aiter_quant_pairs_##tag##_e4m3fnuz, T, kQuantE4m3fnuz) \
  AITER_QUANT_PAIRS_KERNEL(aiter_quant_pairs_##tag##_e5m2, T, kQuantE5m2)
// aiter-kernel-family: op=quant variant=pairs.{dt}.{q} symbol=aiter_quant_pairs_{dt}_{q} block=256 smem=0 dt=f32,f16,bf16 q=i8,e4m3fn,e4m3fnuz,e5m2
AITER_QUANT_PAIRS_KERNELS(f32, float)
AITER_QUANT_PAIRS_KERNELS(f16, half_t)
AITER_QUANT_PAIRS_KERNELS(bf16, bf16_t)

// The amax in the slot becomes the scale.  One thread.
__device__ __forceinline__ void finalize_scale(const QuantParams &p) {
  if (thread_x() == 0 && block_x() == 0) p.scale[0] = dynamic_scale(p.scale[0], p.quant);
}
// aiter-kernel: op=quant variant=finalize symbol=aiter_quant_finalize block=32 smem=0
AITER_ENTRY(aiter_quant_finalize, 32, QuantParams, finalize_scale)
