// Write of new keys and values into the paged KV cache: a thread per (token,
// head, chunk) item, writing that chunk of the key and of the value, laid out
// over the grid by TokenGrid.  A chunk is N elements: 16 bytes of the source
// when the cache holds the key's dtype (a bit-exact copy, as on the CPU), 16
// bytes of the cache when it is fp8.
#include "../common/numeric.h"
#include "kv_cache_params.h"

namespace {

constexpr int kMaxThreads = 512;

__device__ __forceinline__ int64_t slot_of(const CacheWriteParams &p, int64_t token) {
  return p.slots_int64 ? static_cast<const int64_t *>(p.slot_mapping)[token]
                       : int64_t(static_cast<const int32_t *>(p.slot_mapping)[token]);
}

// The N source elements of a thread, in registers: raw for a copy (bit for bit,
// as the CPU copies), as fp32 for quantizing.  Read 16 bytes at a time.
template <class T, bool Fp8, int N> struct Chunk {
  Vec<T, N> raw;
  __device__ __forceinline__ void load(const T *src) { raw = *reinterpret_cast<const Vec<T, N> *>(src); }
  __device__ __forceinline__ void store(T *dst, float, int) const { *reinterpret_cast<Vec<T, N> *>(dst) = raw; }
};

template <class T, int N> struct Chunk<T, true, N> {
  static constexpr int kPer = int(16 / sizeof(T)) < N ? int(16 / sizeof(T)) : N;  // elements per load
  float x[N];
  __device__ __forceinline__ void load(const T *src) {
#pragma unroll
    for (int j = 0; j < N; j += kPer) {
      float part[kPer];
      load_f32<T, kPer>(src + j, part);
#pragma unroll
      for (int i = 0; i < kPer; ++i) x[j + i] = part[i];
    }
  }
  // x / scale rounded to fp8, as the CPU computes it: a true division (nvcc and
  // clang compile `/` to the correctly rounded one without fast-math flags), not
  // a multiplication by 1 / scale, which can differ in the last bit.
  __device__ __forceinline__ void store(uint8_t *dst, float scale, int kind) const {
    Vec<uint8_t, N> q;
#pragma unroll
    for (int i = 0; i < N; ++i) q.v[i] = quantize(x[i] / scale, kind);
    *reinterpret_cast<Vec<uint8_t, N> *>(dst) = q;
  }
};

// The cache's element: the source's, or a byte of fp8.  (No <type_traits>: the
// AMD build has no standard headers.)
template <class T, bool Fp8> struct CacheElem { using type = T; };
template <class T> struct CacheElem<T, true> { using type = uint8_t; };

template <class T, bool Fp8, int N>
__device__ __forceinline__ void write_item(const CacheWriteParams &p) {
  using C = typename CacheElem<T, Fp8>::type;
  int64_t token;
  int item;
  if (!token_item(p.grid, &token, &item)) return;
  const int head = item / p.chunks_per_head;
  const int d0 = (item - head * p.chunks_per_head) * N;
  Chunk<T, Fp8, N> key, value;  // both loads issued before the slot arrives
  key.load(static_cast<const T *>(p.key) + token * p.key_token_stride + head * p.key_head_stride + d0);
  value.load(static_cast<const T *>(p.value) + token * p.value_token_stride + head * p.value_head_stride + d0);
  const int64_t slot = slot_of(p, token);
  // Slots live in device memory, unchecked by the host: a negative one is
  // padding, one past the cache is skipped rather than written out of bounds.
  if (slot < 0 || slot >= p.num_slots) return;
  const int64_t offset = (slot * p.kv_heads + head) * p.head_dim + d0;
  key.store(static_cast<C *>(p.k_cache) + offset, p.k_scale, p.quant);
  value.store(static_cast<C *>(p.v_cache) + offset, p.v_scale, p.quant);
}

}  // namespace

// Vector variants need 16-byte aligned rows (head_dim is 64 or 128, so whole
// chunks always fit); scalar ones (N = 1) take any alignment.
#define AITER_CACHE_KERNEL(name, T, FP8, N) \
  AITER_ENTRY(name, kMaxThreads, CacheWriteParams, write_item<T, FP8, N>)

// aiter-kernel: op=reshape_and_cache variant=f32.copy.vec symbol=aiter_cache_f32_copy_vec4 block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f32_copy_vec4, float, false, 4)
// aiter-kernel: op=reshape_and_cache variant=f32.copy.scalar symbol=aiter_cache_f32_copy_scalar block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f32_copy_scalar, float, false, 1)
// aiter-kernel: op=reshape_and_cache variant=f32.fp8.vec symbol=aiter_cache_f32_fp8_vec16 block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f32_fp8_vec16, float, true, 16)
// aiter-kernel: op=reshape_and_cache variant=f32.fp8.scalar symbol=aiter_cache_f32_fp8_scalar block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f32_fp8_scalar, float, true, 1)

// aiter-kernel: op=reshape_and_cache variant=f16.copy.vec symbol=aiter_cache_f16_copy_vec8 block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f16_copy_vec8, half_t, false, 8)
// aiter-kernel: op=reshape_and_cache variant=f16.copy.scalar symbol=aiter_cache_f16_copy_scalar block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f16_copy_scalar, half_t, false, 1)
// aiter-kernel: op=reshape_and_cache variant=f16.fp8.vec symbol=aiter_cache_f16_fp8_vec16 block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f16_fp8_vec16, half_t, true, 16)
// aiter-kernel: op=reshape_and_cache variant=f16.fp8.scalar symbol=aiter_cache_f16_fp8_scalar block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_f16_fp8_scalar, half_t, true, 1)

// aiter-kernel: op=reshape_and_cache variant=bf16.copy.vec symbol=aiter_cache_bf16_copy_vec8 block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_bf16_copy_vec8, bf16_t, false, 8)
// aiter-kernel: op=reshape_and_cache variant=bf16.copy.scalar symbol=aiter_cache_bf16_copy_scalar block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_bf16_copy_scalar, bf16_t, false, 1)
// aiter-kernel: op=reshape_and_cache variant=bf16.fp8.vec symbol=aiter_cache_bf16_fp8_vec16 block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_bf16_fp8_vec16, bf16_t, true, 16)
// aiter-kernel: op=reshape_and_cache variant=bf16.fp8.scalar symbol=aiter_cache_bf16_fp8_scalar block=512 smem=0
AITER_CACHE_KERNEL(aiter_cache_bf16_fp8_scalar, bf16_t, true, 1)
