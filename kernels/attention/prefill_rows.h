// Which keys a query row of the tensor-core prefill kernels (prefill_mma.cu,
// prefill_wgmma.cu) sees, by prefill.cu's rules.  Rows are
// numbered over the whole packed batch: a row finds its own sequence in
// cu_seqlens_q and turns its visible keys (causal bottom-right, window) into a
// range of global key rows, so a block of rows straddling sequences needs no
// special case.
#pragma once

#include "attention_params.h"

// The sequences of N query tokens t[n] and their visible global key rows
// [lo, hi) (prefill.cu's rules); lo = hi = 0 where no valid sequence owns t.
// The N binary searches over cu_seqlens_q run in step, so that a step's N
// loads are in flight together (a block's prologue waits on the searches).
template <int N>
__device__ __forceinline__ void prefill_row_ranges(const PrefillParams &p, const int (&t)[N], int (&lo)[N],
                                                   int (&hi)[N]) {
  int a[N], z[N];
#pragma unroll
  for (int n = 0; n < N; ++n) a[n] = 0, z[n] = p.batch - 1;
  for (bool more = true; more;) {
    more = false;
#pragma unroll
    for (int n = 0; n < N; ++n) {
      if (a[n] >= z[n]) continue;
      const int mid = (a[n] + z[n] + 1) / 2;
      if (p.cu_seqlens_q[mid] <= t[n]) a[n] = mid; else z[n] = mid - 1;
      more |= a[n] < z[n];
    }
  }
#pragma unroll
  for (int n = 0; n < N; ++n) {
    lo[n] = hi[n] = 0;
    if (t[n] >= p.total_q) continue;
    const int qa = p.cu_seqlens_q[a[n]], qb = p.cu_seqlens_q[a[n] + 1];
    const int ka = p.cu_seqlens_k[a[n]], kb = p.cu_seqlens_k[a[n] + 1];
    if (!(0 <= qa && qa <= t[n] && t[n] < qb && qb <= p.total_q && 0 <= ka && ka <= kb && kb <= p.total_k)) continue;
    const long long lk = kb - ka, pos = (long long)(t[n] - qa) + lk - (qb - qa);
    const long long h = p.causal ? (pos + 1 < 0 ? 0 : pos + 1 > lk ? lk : pos + 1) : lk;
    long long l = 0;
    if (p.sm.window_left >= 0) l = pos - p.sm.window_left < 0 ? 0 : pos - p.sm.window_left > lk ? lk : pos - p.sm.window_left;
    if (l < h) lo[n] = ka + int(l), hi[n] = ka + int(h);
  }
}

// One token's (prefill_row_ranges for N = 1).
__device__ __forceinline__ void prefill_row_range(const PrefillParams &p, int t, int *lo, int *hi) {
  int ts[1] = {t}, l[1], h[1];
  prefill_row_ranges<1>(p, ts, l, h);
  *lo = l[0], *hi = h[0];
}
