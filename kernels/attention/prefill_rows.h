// Which keys a query row of the tensor-core prefill kernels (prefill_mma.cu,
// prefill_wgmma.cu) sees, by prefill.cu's rules.  Rows are
// numbered over the whole packed batch: a row finds its own sequence in
// cu_seqlens_q and turns its visible keys (causal bottom-right, window) into a
// range of global key rows, so a block of rows straddling sequences needs no
// special case.
#pragma once

#include "attention_params.h"

// The sequence of query token t and its visible global key rows [lo, hi)
// (prefill.cu's rules); lo = hi = 0 when no valid sequence owns t.
__device__ __forceinline__ void prefill_row_range(const PrefillParams &p, int t, int *lo, int *hi) {
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
