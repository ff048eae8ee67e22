// Prefill attention over packed variable-length sequences, on every target (no
// tensor-core instructions).  Rows (query token, query head) are numbered
// token-major over the whole batch, the query heads of kv head blockIdx.y
// consecutive; a block takes R of them.  Each row finds its own sequence in
// cu_seqlens_q and sees its own key range, in global key rows, so a block whose
// rows straddle sequences needs no special case.
//
// cu_seqlens live in device memory, unchecked by the host: a row whose
// sequence bounds are inconsistent (out of [0, Tq] / [0, Tk], decreasing) sees
// no key and gets zeros, so no index leads outside q, k, v or out.
#include "attend.h"

namespace {

using attn::kThreads;

struct DenseSource {
  long long k_token_stride, k_head_offset, v_token_stride, v_head_offset;
  __device__ bool row(int pos, long long *k_off, long long *v_off) const {
    *k_off = pos * k_token_stride + k_head_offset;
    *v_off = pos * v_token_stride + v_head_offset;
    return true;
  }
};

// The sequence of query token t: the last b with cu_q[b] <= t (binary search),
// then its bounds read once and checked.  Returns false for a token no valid
// sequence owns.
__device__ __forceinline__ bool find_sequence(const PrefillParams &p, int t, int *q0, int *lq, int *k0, int *lk) {
  int lo = 0, hi = p.batch - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.cu_seqlens_q[mid] <= t) lo = mid; else hi = mid - 1;
  }
  const int qa = p.cu_seqlens_q[lo], qb = p.cu_seqlens_q[lo + 1];
  const int ka = p.cu_seqlens_k[lo], kb = p.cu_seqlens_k[lo + 1];
  if (!(0 <= qa && qa <= t && t < qb && qb <= p.total_q && 0 <= ka && ka <= kb && kb <= p.total_k)) return false;
  *q0 = qa, *lq = qb - qa, *k0 = ka, *lk = kb - ka;
  return true;
}

// Row r of the block: its query token (-1 past the last), head and visible global key rows.
template <int DK, int DV, int R>
__device__ __forceinline__ void set_row(const PrefillParams &p, attn::Smem<DK, DV, R> &s, int r, int *token) {
  const int group = p.q_heads / p.kv_heads;
  const long long n = (long long)block_x() * R + r;
  int lo = 0, hi = 0;
  *token = -1;
  if (n >= (long long)p.total_q * group) return s.lo[r] = s.hi[r] = 0, void();
  *token = int(n / group);  // its row of out is written, with zeros if it has no valid sequence
  int q0, lq, k0, lk;
  if (find_sequence(p, *token, &q0, &lq, &k0, &lk)) {
    const long long pos = (*token - q0) + (long long)lk - lq;  // ends aligned
    const long long h = p.causal ? (pos + 1 < 0 ? 0 : pos + 1 > lk ? lk : pos + 1) : lk;
    long long l = 0;
    if (p.sm.window_left >= 0) l = pos - p.sm.window_left < 0 ? 0 : pos - p.sm.window_left > lk ? lk : pos - p.sm.window_left;
    lo = k0 + int(l), hi = k0 + int(h);
  }
  s.lo[r] = lo;
  s.hi[r] = hi;
}

template <class T, int DK, int DV, int R>
__device__ __forceinline__ void prefill_block(const PrefillParams &p) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
  auto &s = *reinterpret_cast<attn::Smem<DK, DV, R> *>(smem_raw);
  __shared__ int row_token[R];
  const int kvh = int(block_y()), group = p.q_heads / p.kv_heads, t = int(thread_x());
  if (t < R) set_row(p, s, t, &row_token[t]);
  sync_block();
  for (int e = t; e < R * DK; e += kThreads) {
    const int r = e / DK, token = row_token[r];
    const long long n = (long long)block_x() * R + r;
    const T *q_row = token < 0 ? nullptr
                               : static_cast<const T *>(p.q) + (long long)token * p.q_token_stride +
                                     (long long)(kvh * group + int(n % group)) * p.q_head_stride;
    attn::load_query_elem(s, r, e % DK, q_row, p.sm.scale);
  }
  sync_block();
  int first, end;
  attn::key_range(s, 0, p.total_k, &first, &end);
  const DenseSource src{p.k_token_stride, (long long)kvh * p.k_head_stride, p.v_token_stride,
                        (long long)kvh * p.v_head_stride};
  using L = attn::PvLayout<DV, R>;
  attn::attend(s, static_cast<const T *>(p.k), static_cast<const T *>(p.v), first, end, src, p.sm, p.vec != 0,
               [&](int r, int col, const float (&o)[4], float lse) {
                 const int token = row_token[r];
                 if (token < 0) return;
                 const int h = kvh * group + int(((long long)block_x() * R + r) % group);
                 T *dst = static_cast<T *>(p.out) + (long long)token * p.out_token_stride +
                          (long long)h * p.out_head_stride + col;
                 attn::store_cols<T, L::kW>(dst, o);
                 if (p.lse != nullptr && col == 0) p.lse[(long long)token * p.q_heads + h] = lse;
               });
}

}  // namespace

#define AITER_PREFILL_KERNEL(name, T, DK, DV) AITER_ENTRY(name, kThreads, PrefillParams, prefill_block<T, DK, DV, 16>)

// Variants: dtype . (q/k head dim, v head dim), 16 rows a block.  smem =
// sizeof(attn::Smem<DK, DV, 16>), checked below.
// aiter-kernel-family: op=prefill_attention variant=generic.{dt}.{shape} symbol=aiter_prefill_generic_{dt}_{sym} block=128 smem={smem} dt=f32,f16,bf16 shape=d64:d64:23556,d128:d128:44036,d256:d256:84996,d192v128:d192v128:56324
AITER_PREFILL_KERNEL(aiter_prefill_generic_f32_d64, float, 64, 64)
AITER_PREFILL_KERNEL(aiter_prefill_generic_f32_d128, float, 128, 128)
AITER_PREFILL_KERNEL(aiter_prefill_generic_f32_d256, float, 256, 256)
AITER_PREFILL_KERNEL(aiter_prefill_generic_f32_d192v128, float, 192, 128)
AITER_PREFILL_KERNEL(aiter_prefill_generic_f16_d64, half_t, 64, 64)
AITER_PREFILL_KERNEL(aiter_prefill_generic_f16_d128, half_t, 128, 128)
AITER_PREFILL_KERNEL(aiter_prefill_generic_f16_d256, half_t, 256, 256)
AITER_PREFILL_KERNEL(aiter_prefill_generic_f16_d192v128, half_t, 192, 128)
AITER_PREFILL_KERNEL(aiter_prefill_generic_bf16_d64, bf16_t, 64, 64)
AITER_PREFILL_KERNEL(aiter_prefill_generic_bf16_d128, bf16_t, 128, 128)
AITER_PREFILL_KERNEL(aiter_prefill_generic_bf16_d256, bf16_t, 256, 256)
AITER_PREFILL_KERNEL(aiter_prefill_generic_bf16_d192v128, bf16_t, 192, 128)

// The manifest's smem figures above are these structs' sizes.
static_assert(sizeof(attn::Smem<64, 64, 16>) == 23556, "update smem of d64");
static_assert(sizeof(attn::Smem<128, 128, 16>) == 44036, "update smem of d128");
static_assert(sizeof(attn::Smem<256, 256, 16>) == 84996, "update smem of d256");
static_assert(sizeof(attn::Smem<192, 128, 16>) == 56324, "update smem of d192v128");
