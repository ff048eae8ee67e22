// MLA kernels for every target: the portable decode (AMD targets run it; NVIDIA
// runs mla_mma.cu), the merge of split-KV partial results, and
// concat_and_cache_mla.
//
// Portable decode: a block of 128 threads takes one row (new token, query head)
// of one sequence over one split of its context, 32 positions at a time: each
// position's logit from four partial dot products (a quarter of the 576 dims
// each), an online softmax, and each thread accumulating 4 of the 512 output
// columns.  Block ids and context lengths come from device memory unchecked: a
// length is clamped to the table's capacity, a position whose block id is out of
// range is skipped.
#include "../common/numeric.h"
#include "mla_params.h"

namespace {

constexpr int kThreads = 128;
constexpr int kKeys = 32;  // positions a tile of the portable decode
constexpr int kDim = 576, kValueDim = 512, kParts = kThreads / kKeys, kPartDim = kDim / kParts;
constexpr int kMaxCombineSplits = 128;  // kMlaMaxSplits (libaiter/ops/mla.hpp)
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();

__device__ __forceinline__ float pow2(float x) {
#if defined(AITER_AMD)
  return __builtin_exp2f(x);
#else
  return exp2f(x);
#endif
}

// A cache element as fp32: 16-bit types directly, fp8 (e4m3fn / e4m3fnuz) bytes
// through their exponent and mantissa bits, 2^-120 (e4m3fn) or 2^-119
// (e4m3fnuz) times their value: fp8_unbias() undoes it (NaN codes are not
// singled out).
__device__ __forceinline__ float latent(const uint8_t *row, int d) {
  const uint32_t b = row[d];
  return bits_f32(((b & 0x80u) << 24) | ((b & 0x7fu) << 20));
}
__device__ __forceinline__ float latent(const half_t *row, int d) { return to_f32(row[d]); }
__device__ __forceinline__ float latent(const bf16_t *row, int d) { return to_f32(row[d]); }

template <class C> __device__ __forceinline__ float fp8_unbias(int) { return 1.0f; }
template <> __device__ __forceinline__ float fp8_unbias<uint8_t>(int quant) {
  return quant == kQuantE4m3fnuz ? 0x1p119f : 0x1p120f;
}

struct TileSmem {
  float q[kDim];
  float part[kParts][kKeys];
  float prob[kKeys];
  long long offset[kKeys];  // element offset of each position's row, -1: skipped
  float scalars[2];         // the tile's rescale factor, the running sum
};

template <class T, class C>
__device__ __forceinline__ void portable_block(const MlaDecodeParams &p) {
  __shared__ TileSmem s;
  const int t = int(thread_x());
  const int b = int(block_x()) / p.splits, split = int(block_x()) % p.splits, n = int(block_y());
  const int capacity = p.max_blocks * p.page_size;
  const int len_raw = p.context_lens[b];
  const int len = len_raw < 0 ? 0 : len_raw > capacity ? capacity : len_raw;
  const int hi_row = len - p.q_tokens + n / p.q_heads + 1;  // positions [0, hi_row) are seen
  const int first = split * p.split_keys;
  int end = first + p.split_keys < len ? first + p.split_keys : len;
  end = end < hi_row ? end : hi_row;
  const long long row = (long long)b * p.rows + n;
  const T *q = static_cast<const T *>(p.q) + row * kDim;
  const float unbias = fp8_unbias<C>(p.quant);
  for (int d = t; d < kDim; d += kThreads) s.q[d] = to_f32(q[d]) * (p.logit_scale * unbias);
  const int *table_row = p.block_table + (long long)b * p.table_stride;
  const C *cache = static_cast<const C *>(p.kv_cache);
  float m = kNegInf, acc[kValueDim / kThreads] = {};
  if (t == 0) s.scalars[1] = 0.0f;
  for (int start = first; start < end; start += kKeys) {
    if (t < kKeys) {
      const int pos = start + t;
      long long off = -1;
      if (pos < end) {
        const int block = table_row[pos / p.page_size];
        if (block >= 0 && block < p.num_blocks) off = ((long long)block * p.page_size + pos % p.page_size) * kDim;
      }
      s.offset[t] = off;
    }
    sync_block();
    {  // partial logits: position t % 32, dims of quarter t / 32
      const int key = t % kKeys, part = t / kKeys;
      float dot = 0.0f;
      if (s.offset[key] >= 0) {
        const C *kv = cache + s.offset[key];
        for (int d = part * kPartDim; d < (part + 1) * kPartDim; ++d) dot += s.q[d] * latent(kv, d);
      }
      s.part[part][key] = dot;
    }
    sync_block();
    if (t == 0) {  // the online softmax of the tile, in the log2 domain
      float top = m;
      for (int k = 0; k < kKeys; ++k) {
        const float logit = s.offset[k] >= 0 ? s.part[0][k] + s.part[1][k] + s.part[2][k] + s.part[3][k] : kNegInf;
        s.prob[k] = logit;
        top = fmaxf(top, logit);
      }
      const float base = top == kNegInf ? 0.0f : top;
      float sum = 0.0f;
      for (int k = 0; k < kKeys; ++k) sum += (s.prob[k] = pow2(s.prob[k] - base));
      s.scalars[0] = pow2(m - base);
      s.scalars[1] = s.scalars[1] * s.scalars[0] + sum;
      s.part[0][0] = top;  // the new maximum, read back below
    }
    sync_block();
    const float alpha = s.scalars[0];
    m = s.part[0][0];
    for (int j = 0; j < kValueDim / kThreads; ++j) acc[j] *= alpha;
    for (int k = 0; k < kKeys; ++k) {
      if (s.offset[k] < 0) continue;
      const C *kv = cache + s.offset[k];
      for (int j = 0; j < kValueDim / kThreads; ++j) acc[j] += s.prob[k] * latent(kv, t + j * kThreads);
    }
    sync_block();
  }
  sync_block();
  const float total = s.scalars[1];
  const float inv = total > 0.0f ? p.value_scale * unbias / total : 0.0f;
  const float lse = total > 0.0f ? (m + __builtin_log2f(total)) * kLn2 : kNegInf;
  if (p.splits == 1) {
    T *out = static_cast<T *>(p.out) + row * kValueDim;
    for (int j = 0; j < kValueDim / kThreads; ++j) out[t + j * kThreads] = from_f32<T>(acc[j] * inv);
    if (t == 0 && p.lse != nullptr) p.lse[row] = lse;
  } else {
    const long long slot = row * p.splits + split;
    T *part = static_cast<T *>(p.partial_out) + slot * kValueDim;
    for (int j = 0; j < kValueDim / kThreads; ++j) part[t + j * kThreads] = from_f32<T>(acc[j] * inv);
    if (t == 0) p.partial_lse[slot] = lse;
  }
}

// A quarter (128 columns) of one row of the output from its splits: each
// weighted by exp(its lse - the largest), a split that saw no position (lse
// -inf) by 0.  Every split's block wrote its partial row (zeros when it saw
// nothing), so the weighted sum reads no unwritten workspace.  The splits are
// shared out over kCombineGroups groups of 16 threads (a group: 8 columns a
// thread, 16 bytes of partial row), so that many loads are in flight at once
// whatever the split count; the groups' sums meet in shared memory.  MAX_SPLITS
// (8, 32 or 128: the launcher takes the smallest that holds the call's splits)
// sizes a thread's loads in registers: sized for 128 at every count, the kernel
// took 168 registers, 3 blocks an SM, and 28.8 us for the 1024 rows x 2 splits
// of B64 (H100, ncu); the decode itself took 114.
constexpr int kCombineGroups = kThreads / 16;

__device__ __forceinline__ void combine_weights(const float *lse, int splits, float *weight, float *stats) {
  const int t = int(thread_x());
  for (int s = t; s < splits; s += kThreads) weight[s] = lse[s];
  sync_block();
  const int ws = warp_size();  // 32 or 64, at most kThreads
  if (t < ws) {                 // the first warp: the largest lse, then the sum of the weights
    float top = kNegInf, total = 0.0f;
    for (int s = t; s < splits; s += ws) top = fmaxf(top, weight[s]);
    for (int m = ws / 2; m > 0; m >>= 1) top = fmaxf(top, shfl_xor(top, m));
    for (int s = t; s < splits; s += ws) total += weight[s] == kNegInf ? 0.0f : fast_exp(weight[s] - top);
    for (int m = ws / 2; m > 0; m >>= 1) total += shfl_xor(total, m);
    if (t == 0) stats[0] = top, stats[1] = total;
  }
  sync_block();
  const float top = stats[0], inv = stats[1] > 0.0f ? 1.0f / stats[1] : 0.0f;
  for (int s = t; s < splits; s += kThreads) weight[s] = weight[s] == kNegInf ? 0.0f : fast_exp(weight[s] - top) * inv;
  sync_block();
}

template <class T, int MAX_SPLITS>
__device__ __forceinline__ void combine_row(const MlaCombineParams &p) {
  static_assert(MAX_SPLITS <= kMaxCombineSplits && MAX_SPLITS % kCombineGroups == 0, "splits a group");
  __shared__ float weight[MAX_SPLITS];
  __shared__ float stats[2];
  __shared__ float sums[kCombineGroups][kThreads];
  constexpr int kPerThread = MAX_SPLITS / kCombineGroups;  // splits a thread, at most
  const long long row = block_x();
  const int t = int(thread_x()), group = t / 16, col0 = int(block_y()) * kThreads + (t % 16) * 8;
  // The thread's partial rows are loaded before the weights are known, so that
  // they and the lse are in flight together: one round trip to L2, where a loop
  // after the weights took one every few splits (B1 at 32k: 9 us for 2 MB).
  const T *part = static_cast<const T *>(p.partial_out) + row * p.splits * kValueDim + col0;
  Vec<T, 8> x[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int s = group + i * kCombineGroups;
    if (s < p.splits) x[i] = load_vec<T, 8>(part + (long long)s * kValueDim);
  }
  combine_weights(p.partial_lse + row * p.splits, p.splits, weight, stats);
  float acc[8] = {};
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int s = group + i * kCombineGroups;
    if (s >= p.splits) break;
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] += weight[s] * to_f32(x[i].v[j]);
  }
  for (int i = 0; i < 8; ++i) sums[group][(t % 16) * 8 + i] = acc[i];
  sync_block();
  float total = 0.0f;
  for (int g = 0; g < kCombineGroups; ++g) total += sums[g][t];
  static_cast<T *>(p.out)[row * kValueDim + int(block_y()) * kThreads + t] = from_f32<T>(total);
  if (block_y() == 0 && t == 0 && p.lse != nullptr)
    p.lse[row] = stats[1] > 0.0f ? stats[0] + __builtin_logf(stats[1]) : kNegInf;
}

// One token's 576-wide row: kv_c then k_pe, copied bit for bit or quantized as
// x / scale (a true division, as the CPU computes it).
template <class T, bool Fp8>
__device__ __forceinline__ void cache_row(const MlaCacheParams &p) {
  const long long token = block_x();
  const long long slot = p.slots_int64 ? static_cast<const long long *>(p.slot_mapping)[token]
                                       : (long long)static_cast<const int *>(p.slot_mapping)[token];
  // Slots come from device memory unchecked: negative is padding, past the cache is skipped.
  if (slot < 0 || slot >= p.num_slots) return;
  const T *kv_c = static_cast<const T *>(p.kv_c) + token * p.kv_c_stride;
  const T *k_pe = static_cast<const T *>(p.k_pe) + token * p.k_pe_stride;
  for (int d = int(thread_x()); d < kDim; d += kThreads) {
    const T x = d < kValueDim ? kv_c[d] : k_pe[d - kValueDim];
    if (Fp8)
      static_cast<uint8_t *>(p.kv_cache)[slot * kDim + d] = quantize(to_f32(x) / p.scale, p.quant);
    else
      static_cast<T *>(p.kv_cache)[slot * kDim + d] = x;
  }
}

}  // namespace

#define AITER_MLA_PORTABLE(name, T, C) AITER_ENTRY(name, kThreads, MlaDecodeParams, portable_block<T, C>)
#define AITER_MLA_COMBINE(name, T, MAX_SPLITS) AITER_ENTRY(name, kThreads, MlaCombineParams, combine_row<T, MAX_SPLITS>)
#define AITER_MLA_CACHE(name, T, FP8) AITER_ENTRY(name, kThreads, MlaCacheParams, cache_row<T, FP8>)

// aiter-kernel: op=mla_decode variant=portable.f16.same symbol=aiter_mla_portable_f16_same block=128 smem=0
AITER_MLA_PORTABLE(aiter_mla_portable_f16_same, half_t, half_t)
// aiter-kernel: op=mla_decode variant=portable.f16.fp8 symbol=aiter_mla_portable_f16_fp8 block=128 smem=0
AITER_MLA_PORTABLE(aiter_mla_portable_f16_fp8, half_t, uint8_t)
// aiter-kernel: op=mla_decode variant=portable.bf16.same symbol=aiter_mla_portable_bf16_same block=128 smem=0
AITER_MLA_PORTABLE(aiter_mla_portable_bf16_same, bf16_t, bf16_t)
// aiter-kernel: op=mla_decode variant=portable.bf16.fp8 symbol=aiter_mla_portable_bf16_fp8 block=128 smem=0
AITER_MLA_PORTABLE(aiter_mla_portable_bf16_fp8, bf16_t, uint8_t)
// aiter-kernel: op=mla_decode variant=combine.f16.s8 symbol=aiter_mla_combine_f16_s8 block=128 smem=0
AITER_MLA_COMBINE(aiter_mla_combine_f16_s8, half_t, 8)
// aiter-kernel: op=mla_decode variant=combine.f16.s32 symbol=aiter_mla_combine_f16_s32 block=128 smem=0
AITER_MLA_COMBINE(aiter_mla_combine_f16_s32, half_t, 32)
// aiter-kernel: op=mla_decode variant=combine.f16.s128 symbol=aiter_mla_combine_f16_s128 block=128 smem=0
AITER_MLA_COMBINE(aiter_mla_combine_f16_s128, half_t, 128)
// aiter-kernel: op=mla_decode variant=combine.bf16.s8 symbol=aiter_mla_combine_bf16_s8 block=128 smem=0
AITER_MLA_COMBINE(aiter_mla_combine_bf16_s8, bf16_t, 8)
// aiter-kernel: op=mla_decode variant=combine.bf16.s32 symbol=aiter_mla_combine_bf16_s32 block=128 smem=0
AITER_MLA_COMBINE(aiter_mla_combine_bf16_s32, bf16_t, 32)
// aiter-kernel: op=mla_decode variant=combine.bf16.s128 symbol=aiter_mla_combine_bf16_s128 block=128 smem=0
AITER_MLA_COMBINE(aiter_mla_combine_bf16_s128, bf16_t, 128)
// aiter-kernel: op=concat_and_cache_mla variant=f16.same symbol=aiter_mla_cache_f16_same block=128 smem=0
AITER_MLA_CACHE(aiter_mla_cache_f16_same, half_t, false)
// aiter-kernel: op=concat_and_cache_mla variant=f16.fp8 symbol=aiter_mla_cache_f16_fp8 block=128 smem=0
AITER_MLA_CACHE(aiter_mla_cache_f16_fp8, half_t, true)
// aiter-kernel: op=concat_and_cache_mla variant=bf16.same symbol=aiter_mla_cache_bf16_same block=128 smem=0
AITER_MLA_CACHE(aiter_mla_cache_bf16_same, bf16_t, false)
// aiter-kernel: op=concat_and_cache_mla variant=bf16.fp8 symbol=aiter_mla_cache_bf16_fp8 block=128 smem=0
AITER_MLA_CACHE(aiter_mla_cache_bf16_fp8, bf16_t, true)
