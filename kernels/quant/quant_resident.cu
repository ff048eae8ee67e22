// Per-tensor dynamic quantization in one kernel whose blocks are all resident at
// once (launched cooperatively by libaiter/gpu/quant.cpp): each block reads its
// stretch of x once, keeping as much of it as fits in shared memory, and finds
// its amax; the blocks exchange their amaxes; each then quantizes its stretch
// from shared memory, reading only the rest again (from L2, mostly).  The
// four-step op (quant.cu) reads all of x twice: where x is larger than the L2,
// 5 bytes move for every 3 an ideal kernel moves.
//
// The blocks meet at the grid barrier of cooperative groups, which the driver
// provides to cooperative launches (no memset, nothing allocated).  Their amaxes
// sit side by side in the first 4G bytes of out (G: the blocks), in block 0's
// stretch, so that each block reads them in a few cache lines:
//   1. block b writes its amax to word b of out, block 0 zeroes the scale slot,
//      and all wait at the grid barrier;
//   2. each reads the G amaxes, adds 1 to the slot (it has read them) and
//      quantizes its stretch, block 0 all but the pieces under the amaxes;
//   3. block 0 stores those once the slot reaches G (nobody reads the amaxes any
//      more); the block whose addition brought it to G writes the scale there,
//      whose bits are at least 0x00800000 (dynamic_scale's least), more than any count.
// NVIDIA only (kernels/meson.build): libaiter's HIP driver has no cooperative
// launch, and AMD GPUs take the four-step op.
#include <cooperative_groups.h>

#include "../common/numeric.h"
#include "../common/phase_clock.h"
#include "../common/quant_store.h"
#include "quant_params.h"

// Phase clock (benchmarks/profile_resident_phases.py): stamp_phase, common/phase_clock.h.

namespace {

constexpr int kThreads = 1024;
constexpr int kInFlight = 4;  // pieces a thread loads at once: 64 KiB an SM in flight

// 16 bytes of x: 8 bf16 / fp16 elements, 4 fp32; out gets one byte an element.
template <class T>
using Piece = Vec<T, 16 / int(sizeof(T))>;

// The block's stretch of pieces, walked in steps of blockDim pieces: thread t
// takes piece begin + k * blockDim + t at step k.  Never empty (the host sizes it).
struct Stretch {
  long long begin, end, steps;
};

__device__ __forceinline__ Stretch stretch_of(const QuantParams &p) {
  const long long begin = block_x() * p.block_pieces;
  const long long end = begin + p.block_pieces < p.pieces ? begin + p.block_pieces : p.pieces;
  return {begin, end, (end - begin + block_dim_x() - 1) / block_dim_x()};
}

template <class T>
__device__ __forceinline__ float amax_of(float m, const Piece<T> &v) {
#pragma unroll
  for (int i = 0; i < int(sizeof(v.v) / sizeof(T)); ++i) m = fmaxf(m, fabsf(to_f32(v.v[i])));
  return m;
}

// Block b's amax: word b of out.  Block 0's stretch covers the words (the host
// sees to it), in the pieces before slot_pieces(), all in its step 0.
__device__ __forceinline__ uint32_t *amax_slot(const QuantParams &p, unsigned b) {
  return static_cast<uint32_t *>(p.out) + b;
}

template <class T>
__device__ __forceinline__ long long slot_pieces(const QuantParams &p) {
  constexpr int kOutBytes = 16 / int(sizeof(T));
  return (4ll * p.grid_cols + kOutBytes - 1) / kOutBytes;
}

// Phase 1: the thread's pieces, kInFlight loads at once (pieces past the end
// load the stretch's first and are dropped); those of the first held_steps
// steps are kept in `held`.  Returns the thread's amax.  (Copying the held
// steps with cp.async, all issued at once, then loading the rest, was slower:
// H100, graph replays, bf16 4096 x 4096 31.6-31.7 against 29.7-29.9 us.)
template <class T>
__device__ __forceinline__ float read_stretch(const QuantParams &p, const Stretch &s, Piece<T> *held) {
  const Piece<T> *x = static_cast<const Piece<T> *>(p.x);
  const unsigned t = thread_x(), threads = block_dim_x();
  float amax = 0.0f;
  for (long long k0 = 0; k0 < s.steps; k0 += kInFlight) {
    Piece<T> v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const long long i = s.begin + (k0 + u) * threads + t;
      v[u] = x[i < s.end ? i : s.begin];
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const long long k = k0 + u;
      if (s.begin + k * threads + t >= s.end) continue;
      amax = amax_of<T>(amax, v[u]);
      if (k < p.held_steps) held[k * threads + t] = v[u];
    }
  }
  return amax;
}

template <int K, class T>
__device__ __forceinline__ void store_piece(const QuantParams &p, long long i, const Piece<T> &v, float inv_scale) {
  constexpr int kElems = 16 / int(sizeof(T));
  float f[kElems];
#pragma unroll
  for (int j = 0; j < kElems; ++j) f[j] = to_f32(v.v[j]);
  store_quantized<K, kElems>(static_cast<uint8_t *>(p.out) + i * kElems, f, inv_scale);
}

// Phase 2: the pieces not held first, last step first (the likeliest still in
// L2), then the held ones, but for those under the amaxes (block 0's first).
template <int K, class T>
__device__ __forceinline__ void write_stretch(const QuantParams &p, const Stretch &s, const Piece<T> *held,
                                              float inv_scale) {
  const Piece<T> *x = static_cast<const Piece<T> *>(p.x);
  const unsigned t = thread_x(), threads = block_dim_x();
  for (long long k0 = s.steps - 1; k0 >= p.held_steps; k0 -= kInFlight) {
    Piece<T> v[kInFlight];
    bool inside[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const long long i = s.begin + (k0 - u) * threads + t;
      inside[u] = k0 - u >= p.held_steps && i < s.end;
      v[u] = x[inside[u] ? i : s.begin];
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      if (inside[u]) store_piece<K, T>(p, s.begin + (k0 - u) * threads + t, v[u], inv_scale);
  }
  const long long held_here = s.steps < p.held_steps ? s.steps : p.held_steps;
  for (long long k = 0; k < held_here; ++k) {
    const long long i = s.begin + k * threads + t;
    if (i < s.end && i >= slot_pieces<T>(p)) store_piece<K, T>(p, i, held[k * threads + t], inv_scale);
  }
}

__device__ __forceinline__ void wait_for(const uint32_t *count, uint32_t at_least) {
  while (load_acquire(count) < at_least) spin_pause();
}

template <class T>
__device__ void tensor_resident(const QuantParams &p) {
  extern __shared__ uint4 held_bytes[];  // [held_steps][blockDim] pieces
  Piece<T> *held = reinterpret_cast<Piece<T> *>(held_bytes);
  __shared__ float scratch[32];
  stamp_phase(0);
  const Stretch s = stretch_of(p);
  uint32_t *readers = reinterpret_cast<uint32_t *>(p.scale);
  const unsigned blocks = p.grid_cols, t = thread_x();
  const float mine = block_max(read_stretch<T>(p, s, held), scratch);
  stamp_phase(1);
  if (t == 0) {
    store_relaxed(amax_slot(p, block_x()), f32_bits(mine));
    if (block_x() == 0) store_relaxed(readers, 0);
  }
  // (Our own count in the scale slot, which the host had to memset, took 1.6-1.9 us
  // longer under graph replay on an H100: 20.9 / 30.8 / 55.2 against 19.3 / 28.9 /
  // 53.3 us at 2048 / 4096 / 8192 x 4096 bf16.)
  cooperative_groups::this_grid().sync();
  stamp_phase(2);
  float amax = 0.0f;
  for (unsigned b = t; b < blocks; b += block_dim_x()) amax = fmaxf(amax, bits_f32(load_relaxed(amax_slot(p, b))));
  amax = block_max(amax, scratch);
  const uint32_t read_before = t == 0 ? arrive_release(readers) : 0;  // waited for only at the end
  const float scale = dynamic_scale(amax, p.quant), inv_scale = 1.0f / scale;
  with_kind(p.quant, [&](auto kind) {
    constexpr int K = decltype(kind)::value;
    stamp_phase(3);
    write_stretch<K, T>(p, s, held, inv_scale);
    stamp_phase(4);
    if (block_x() == 0) {
      if (t == 0) wait_for(readers, blocks);
      sync_block();
      if (t < slot_pieces<T>(p)) store_piece<K, T>(p, t, held[t], inv_scale);
    }
    if (t == 0 && read_before == blocks - 1) p.scale[0] = scale;
    stamp_phase(5);
  });
}

}  // namespace

#define AITER_QUANT_RESIDENT_KERNEL(name, T) AITER_ENTRY(name, kThreads, QuantParams, tensor_resident<T>)
// aiter-kernel: op=quant variant=resident.f32 symbol=aiter_quant_resident_f32 block=1024 smem=0
AITER_QUANT_RESIDENT_KERNEL(aiter_quant_resident_f32, float)
// aiter-kernel: op=quant variant=resident.f16 symbol=aiter_quant_resident_f16 block=1024 smem=0
AITER_QUANT_RESIDENT_KERNEL(aiter_quant_resident_f16, half_t)
// aiter-kernel: op=quant variant=resident.bf16 symbol=aiter_quant_resident_bf16 block=1024 smem=0
AITER_QUANT_RESIDENT_KERNEL(aiter_quant_resident_bf16, bf16_t)
