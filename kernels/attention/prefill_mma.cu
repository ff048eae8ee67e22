// Prefill attention on NVIDIA tensor cores (mma.sync m16n8k16, ldmatrix,
// cp.async; sm_80 and up), FlashAttention-2 order: a block of 4 warps takes 64
// consecutive query tokens of one query head, each warp 16 of them, and streams
// the key range through shared memory 64 keys at a time (two buffers, the next
// tile's copy in flight during the math).  Scores stay in registers: the C
// fragments of S = Q K^T become, rounded to 16 bits, the A fragments of O += P V.
//
// Rows are numbered over the whole batch, as in prefill.cu: a row finds its own
// sequence in cu_seqlens_q and masks by its own key range (global key rows), so
// a block straddling sequences needs no special case, and rows of a sequence
// with impossible bounds get zeros.  AMD targets use prefill.cu.
#include "../common/numeric.h"
#include "mma16.h"
#include "attention_params.h"

namespace {

constexpr int kThreads = 128, kRows = 64, kKeys = 64;
constexpr float kNegInf = -__builtin_huge_valf();

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
// 16 bytes global -> shared without passing through registers; zeros when !valid.
__device__ __forceinline__ void copy16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;"); }
__device__ __forceinline__ void copies_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// A [rows][D] tile of 16-bit elements in shared memory, its 16-byte chunks
// XOR-swizzled by row so that the 8 rows an ldmatrix reads hit different banks.
template <int D>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// Copies rows [first, first + count) of a [tokens, heads, D] tensor (head fixed
// by `base`) into a swizzled tile; rows past `end` become zeros.
template <class T, int D, int Rows>
__device__ __forceinline__ void copy_tile(T *tile, const T *base, long long token_stride, int first, int end) {
  constexpr int kChunks = D / 8;
  for (int c = int(thread_x()); c < Rows * kChunks; c += kThreads) {
    const int r = c / kChunks, chunk = c % kChunks, token = first + r;
    const bool valid = token < end;
    copy16(tile + swizzled<D>(r, chunk), base + (long long)(valid ? token : first) * token_stride + chunk * 8, valid);
  }
}

// The sequence of query token t and its visible global key rows (prefill.cu's
// rules); lo = hi = 0 when no valid sequence owns t.
__device__ __forceinline__ void row_range(const PrefillParams &p, int t, int *lo, int *hi) {
  *lo = *hi = 0;
  if (t >= p.total_q) return;
  int a = 0, z = p.batch - 1;
  while (a < z) {
    const int mid = (a + z + 1) / 2;
    if (p.cu_seqlens_q[mid] <= t) a = mid; else z = mid - 1;
  }
  const int qa = p.cu_seqlens_q[a], qb = p.cu_seqlens_q[a + 1];
  const int ka = p.cu_seqlens_k[a], kb = p.cu_seqlens_k[a + 1];
  if (!(0 <= qa && qa <= t && t < qb && qb <= p.total_q && 0 <= ka && ka <= kb && kb <= p.total_k)) return;
  const long long lk = kb - ka, pos = (long long)(t - qa) + lk - (qb - qa);
  const long long h = p.causal ? (pos + 1 < 0 ? 0 : pos + 1 > lk ? lk : pos + 1) : lk;
  long long l = 0;
  if (p.sm.window_left >= 0) l = pos - p.sm.window_left < 0 ? 0 : pos - p.sm.window_left > lk ? lk : pos - p.sm.window_left;
  if (l < h) *lo = ka + int(l), *hi = ka + int(h);
}

template <class T, int D>
struct Tiles {
  T q[kRows * D];
  T k[2][kKeys * D];
  T v[2][kKeys * D];
};

template <class T, int D>
__device__ __forceinline__ void prefill_mma(const PrefillParams &p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<Tiles<T, D> *>(smem_raw);
  __shared__ int range_lo, range_hi;
  const int warp = int(thread_x()) / 32, lane = int(thread_x()) % 32, g = lane / 4, tq = lane % 4;
  const int head = int(block_y()), kvh = head / (p.q_heads / p.kv_heads), row0 = int(block_x()) * kRows;
  // This thread's two rows: warp * 16 + g and + 8.
  int lo[2], hi[2];
  row_range(p, row0 + warp * 16 + g, &lo[0], &hi[0]);
  row_range(p, row0 + warp * 16 + g + 8, &lo[1], &hi[1]);
  if (thread_x() == 0) range_lo = 0x7fffffff, range_hi = 0;
  sync_block();
  for (int r = 0; r < 2; ++r)
    if (lo[r] < hi[r]) atomicMin(&range_lo, lo[r]), atomicMax(&range_hi, hi[r]);
  const T *q_base = static_cast<const T *>(p.q) + (long long)head * p.q_head_stride;
  copy_tile<T, D, kRows>(s.q, q_base, p.q_token_stride, row0, p.total_q);
  sync_block();
  const int first = range_lo, end = range_hi > range_lo ? range_hi : range_lo;
  const T *k_base = static_cast<const T *>(p.k) + (long long)kvh * p.k_head_stride;
  const T *v_base = static_cast<const T *>(p.v) + (long long)kvh * p.v_head_stride;
  if (first < end) {
    copy_tile<T, D, kKeys>(s.k[0], k_base, p.k_token_stride, first, end);
    copy_tile<T, D, kKeys>(s.v[0], v_base, p.v_token_stride, first, end);
  }
  copies_commit();
  copies_wait();
  sync_block();
  // Q fragments of the warp's 16 rows, all of D (A operand, k = head dim).
  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int r = warp * 16 + (lane % 8) + 8 * ((lane / 8) % 2), chunk = kk * 2 + lane / 16;
    ldmatrix_x4(qf[kk], s.q + swizzled<D>(r, chunk));
  }
  float o[D / 8][4] = {};
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.0f, 0.0f};
  const float scale = p.sm.scale, cap = p.sm.softcap;
  int buf = 0;
  for (int tile = first; tile < end; tile += kKeys, buf ^= 1) {
    if (tile > first) {
      copies_wait();
      sync_block();  // tile's copy landed; every warp is done with the other buffer
    }
    if (end - tile > kKeys) {
      copy_tile<T, D, kKeys>(s.k[buf ^ 1], k_base, p.k_token_stride, tile + kKeys, end);
      copy_tile<T, D, kKeys>(s.v[buf ^ 1], v_base, p.v_token_stride, tile + kKeys, end);
    }
    copies_commit();
    // S = Q K^T: 8 n-tiles of 8 keys.
    float sc[kKeys / 8][4] = {};
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk += 2) {  // one ldmatrix.x4: b0, b1 of two k-steps
        uint32_t b[4];
        ldmatrix_x4(b, s.k[buf] + swizzled<D>(nt * 8 + lane % 8, kk * 2 + lane / 8));
        Mma<T>::run(sc[nt], qf[kk], b[0], b[1]);
        Mma<T>::run(sc[nt], qf[kk + 1], b[2], b[3]);
      }
    }
    // Mask, online softmax per row (a row's 64 scores live in the 4 lanes of a quad).
    float top[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, key = tile + nt * 8 + tq * 2 + e % 2;
        float x = sc[nt][e] * scale;
        if (cap > 0.0f) {
          const float ex = fast_exp(2.0f * x / cap);
          x = cap * (1.0f - 2.0f / (ex + 1.0f));
        }
        x = lo[r] <= key && key < hi[r] ? x : kNegInf;
        sc[nt][e] = x;
        top[r] = fmaxf(top[r], x);
      }
    float corr[2], base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      top[r] = fmaxf(top[r], shfl_xor(top[r], 1));
      top[r] = fmaxf(top[r], shfl_xor(top[r], 2));
      const float m_new = fmaxf(m[r], top[r]);
      base[r] = m_new == kNegInf ? 0.0f : m_new;
      corr[r] = fast_exp(m[r] - base[r]);
      m[r] = m_new;
      l[r] *= corr[r];
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[dt][e] *= corr[e / 2];
    // P (16 bits) as A fragments: k-chunk kc covers n-tiles 2kc and 2kc + 1.
#pragma unroll
    for (int kc = 0; kc < kKeys / 16; ++kc) {
      uint32_t a[4];
      float pr[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          pr[h][e] = fast_exp(sc[2 * kc + h][e] - base[e / 2]);
          l[e / 2] += pr[h][e];
        }
      a[0] = Mma<T>::pack(pr[0][0], pr[0][1]);
      a[1] = Mma<T>::pack(pr[0][2], pr[0][3]);
      a[2] = Mma<T>::pack(pr[1][0], pr[1][1]);
      a[3] = Mma<T>::pack(pr[1][2], pr[1][3]);
      // O += P V: V [keys][D] read transposed, two d-tiles an ldmatrix.x4.
#pragma unroll
      for (int dt = 0; dt < D / 8; dt += 2) {
        uint32_t b[4];
        const int key = kc * 16 + (lane % 8) + 8 * ((lane / 8) % 2), chunk = dt + lane / 16;
        ldmatrix_x4_trans(b, s.v[buf] + swizzled<D>(key, chunk));
        Mma<T>::run(o[dt], a, b[0], b[1]);
        Mma<T>::run(o[dt + 1], a, b[2], b[3]);
      }
    }
  }
  // Rows' sums over the quad, then out (and lse) for the rows that exist.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += shfl_xor(l[r], 1);
    l[r] += shfl_xor(l[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int token = row0 + warp * 16 + g + 8 * r;
    if (token >= p.total_q) continue;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    T *dst = static_cast<T *>(p.out) + (long long)token * p.out_token_stride + (long long)head * p.out_head_stride;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      const uint32_t pair = Mma<T>::pack(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
      *reinterpret_cast<uint32_t *>(dst + dt * 8 + tq * 2) = pair;
    }
    if (p.lse != nullptr && tq == 0)
      p.lse[(long long)token * p.q_heads + head] = l[r] > 0.0f ? m[r] + logf(l[r]) : kNegInf;
  }
}

}  // namespace

#define AITER_PREFILL_MMA_KERNEL(name, T, D) AITER_ENTRY(name, kThreads, PrefillParams, prefill_mma<T, D>)

// smem = sizeof(Tiles<T, D>): (64 + 4 * 64) rows of D 16-bit elements.
// aiter-kernel-family: op=prefill_attention variant=mma.{dt}.{shape} symbol=aiter_prefill_mma_{dt}_{sym} block=128 smem={smem} dt=f16,bf16 shape=d64:d64:40960,d128:d128:81920
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_f16_d64, half_t, 64)
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_f16_d128, half_t, 128)
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_bf16_d64, bf16_t, 64)
AITER_PREFILL_MMA_KERNEL(aiter_prefill_mma_bf16_d128, bf16_t, 128)
static_assert(sizeof(Tiles<bf16_t, 64>) == 40960 && sizeof(Tiles<bf16_t, 128>) == 81920, "update smem above");
