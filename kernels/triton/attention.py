"""Prefill attention in Triton: the tensor-core path of aiter_prefill_attention
on sm_90a (wgmma through Triton) and the AMD targets (MFMA / WMMA), compiled
ahead of time by build.py, never at run time.

Same contract as kernels/attention/prefill_mma.cu (attention_params.h's
PrefillParams): packed sequences, q [Tq, Hq, D], k [Tk, Hkv, D], v [Tk, Hkv, DV],
out [Tq, Hq, DV], lse [Tq, Hq] fp32 or none.  A program takes BM consecutive
query tokens of one query head.  Rows are numbered over the whole batch: each
finds its sequence in cu_seqlens_q and turns its visible keys (causal
bottom-right, window) into a range [lo, hi) of global key rows, so a tile that
straddles sequences needs no special case and a row of impossible bounds sees
no key (zeros, lse -inf).  The program walks the union of its rows' ranges;
tiles inside every row's range skip the mask.
Grid: (Hq, row tiles), heads fastest and the last row tiles (the longest causal
ranges) first.
"""
import triton
import triton.language as tl

@triton.jit
def _row_ranges(cu_q, cu_k, rows, total_q, total_k, batch, search_steps, causal, window_left):
    """[lo, hi) of the global key rows each query row sees (prefill_mma.cu's
    row_range, for a vector of rows)."""
    a = tl.zeros_like(rows)
    z = tl.zeros_like(rows) + (batch - 1)
    for _ in range(search_steps):  # binary search: the last b with cu_q[b] <= row (ceil(log2(batch)) steps)
        mid = (a + z + 1) // 2
        right = tl.load(cu_q + mid) <= rows
        active = a < z
        a = tl.where(active & right, mid, a)
        z = tl.where(active & ~right, mid - 1, z)
    qa = tl.load(cu_q + a)
    qb = tl.load(cu_q + a + 1)
    ka = tl.load(cu_k + a)
    kb = tl.load(cu_k + a + 1)
    ok = (rows < total_q) & (0 <= qa) & (qa <= rows) & (rows < qb) & (qb <= total_q) & (0 <= ka) & (ka <= kb) \
        & (kb <= total_k)
    lk = (kb - ka).to(tl.int64)
    pos = (rows - qa).to(tl.int64) + lk - (qb - qa)
    hi = tl.where(causal != 0, tl.minimum(tl.maximum(pos + 1, 0), lk), lk)
    lo = tl.where(window_left >= 0, tl.minimum(tl.maximum(pos - window_left, 0), lk), 0)
    ok = ok & (lo < hi)
    return tl.where(ok, ka + lo, 0).to(tl.int32), tl.where(ok, ka + hi, 0).to(tl.int32)


@triton.jit
def _load_rows(ptr, keys, stride, first_col, stop, COLS: tl.constexpr, MASKED: tl.constexpr):
    """[keys, COLS] of a [tokens, ...] tensor; keys past `stop` read as zeros."""
    at = ptr + keys.to(tl.int64)[:, None] * stride + first_col + tl.arange(0, COLS)[None, :]
    if MASKED:
        return tl.load(at, mask=(keys < stop)[:, None], other=0.0)
    return tl.load(at)


@triton.jit
def _scores(q1, q2, k_ptr, keys, stop, k_stride, qk_scale, softcap,
            D1: tl.constexpr, D2: tl.constexpr, MASKED: tl.constexpr, SOFTCAP: tl.constexpr):
    """Logits of a key tile in the log2 domain: q . k scaled (and soft-capped)."""
    s = tl.dot(q1, tl.trans(_load_rows(k_ptr, keys, k_stride, 0, stop, D1, MASKED)))
    if D2 > 0:
        s = tl.dot(q2, tl.trans(_load_rows(k_ptr, keys, k_stride, D1, stop, D2, MASKED)), s)
    if SOFTCAP:  # softcap * tanh(x / softcap), tanh by exp2: portable to every target
        x = s * (qk_scale / softcap)
        s = (1.0 - 2.0 / (tl.exp2(x * (2.0 * 1.4426950408889634)) + 1.0)) * (softcap * 1.4426950408889634)
    else:
        s = s * (qk_scale * 1.4426950408889634)
    return s


@triton.jit
def _key_tiles(acc, m, l, q1, q2, k_ptr, v_ptr, k_stride, v_stride, lo, hi, start, stop, qk_scale, softcap,
               BN: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, DV: tl.constexpr,
               MASKED: tl.constexpr, SOFTCAP: tl.constexpr):
    """The online softmax over key tiles [start, stop), BN keys each."""
    for first in range(start, stop, BN):
        keys = first + tl.arange(0, BN)
        s = _scores(q1, q2, k_ptr, keys, stop, k_stride, qk_scale, softcap, D1, D2, MASKED, SOFTCAP)
        if MASKED:
            s = tl.where((keys[None, :] >= lo[:, None]) & (keys[None, :] < hi[:, None]), s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet: p = 0, not NaN
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m - m_safe)
        l = l * alpha + tl.sum(p, 1)
        v = _load_rows(v_ptr, keys, v_stride, 0, stop, DV, MASKED)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    return acc, m, l


@triton.jit
def _attend(acc, m, l, q1, q2, k_ptr, v_ptr, k_stride, v_stride, lo, hi, row_ok, qk_scale, softcap,
            BN: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, DV: tl.constexpr, SOFTCAP: tl.constexpr):
    """The key range of the tile's rows in three parts: masked, then the tiles
    every row sees whole (no mask), then masked again (the causal diagonal).
    A row of the tensor that sees no key leaves no tile unmasked."""
    has = hi > lo
    blind = tl.sum((row_ok & ~has).to(tl.int32)) > 0
    start = tl.min(tl.where(has, lo, 2147483647))
    stop = tl.max(tl.where(has, hi, 0))
    stop = tl.maximum(stop, start)
    inner_lo = tl.max(tl.where(has, lo, 0))
    inner_hi = tl.min(tl.where(has, hi, 2147483647))
    full_lo = start + tl.cdiv(tl.maximum(inner_lo - start, 0), BN) * BN
    full_lo = tl.minimum(full_lo, stop)
    full_hi = full_lo + tl.maximum(inner_hi - full_lo, 0) // BN * BN
    full_hi = tl.where(blind, full_lo, full_hi)
    acc, m, l = _key_tiles(acc, m, l, q1, q2, k_ptr, v_ptr, k_stride, v_stride, lo, hi, start, full_lo,
                           qk_scale, softcap, BN, D1, D2, DV, True, SOFTCAP)
    acc, m, l = _key_tiles(acc, m, l, q1, q2, k_ptr, v_ptr, k_stride, v_stride, lo, hi, full_lo, full_hi,
                           qk_scale, softcap, BN, D1, D2, DV, False, SOFTCAP)
    acc, m, l = _key_tiles(acc, m, l, q1, q2, k_ptr, v_ptr, k_stride, v_stride, lo, hi, full_hi, stop,
                           qk_scale, softcap, BN, D1, D2, DV, True, SOFTCAP)
    return acc, m, l


@triton.jit
def prefill_kernel(q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k,
                   q_token_stride, q_head_stride, k_token_stride, k_head_stride,
                   v_token_stride, v_head_stride, out_token_stride, out_head_stride,
                   total_q, total_k, batch, search_steps, q_heads, group, causal, window_left,
                   scale, softcap, has_lse,
                   BM: tl.constexpr, BN: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr, DV: tl.constexpr):
    head = tl.program_id(0)
    tile = tl.num_programs(1) - 1 - tl.program_id(1)
    rows = tile * BM + tl.arange(0, BM)
    lo, hi = _row_ranges(cu_seqlens_q, cu_seqlens_k, rows, total_q, total_k, batch, search_steps, causal,
                         window_left)
    row_ok = rows < total_q
    q_rows = q + head.to(tl.int64) * q_head_stride + rows.to(tl.int64)[:, None] * q_token_stride
    q1 = tl.load(q_rows + tl.arange(0, D1)[None, :], mask=row_ok[:, None], other=0.0)
    q2 = q1
    if D2 > 0:
        q2 = tl.load(q_rows + D1 + tl.arange(0, D2)[None, :], mask=row_ok[:, None], other=0.0)
    kvh = (head // group).to(tl.int64)
    k_ptr = k + kvh * k_head_stride
    v_ptr = v + kvh * v_head_stride
    acc = tl.zeros((BM, DV), dtype=tl.float32)
    m = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l = tl.zeros((BM,), dtype=tl.float32)
    if softcap > 0:
        acc, m, l = _attend(acc, m, l, q1, q2, k_ptr, v_ptr, k_token_stride, v_token_stride, lo, hi, row_ok, scale,
                            softcap, BN, D1, D2, DV, True)
    else:
        acc, m, l = _attend(acc, m, l, q1, q2, k_ptr, v_ptr, k_token_stride, v_token_stride, lo, hi, row_ok, scale,
                            softcap, BN, D1, D2, DV, False)
    seen = l > 0
    o = acc / tl.where(seen, l, 1.0)[:, None]
    dv = tl.arange(0, DV)
    o_rows = out + head.to(tl.int64) * out_head_stride + rows.to(tl.int64)[:, None] * out_token_stride
    tl.store(o_rows + dv[None, :], o.to(out.dtype.element_ty), mask=row_ok[:, None])
    if has_lse != 0:
        value = tl.where(seen, (m + tl.log2(tl.where(seen, l, 1.0))) * 0.6931471805599453, float("-inf"))
        tl.store(lse + rows.to(tl.int64) * q_heads + head, value, mask=row_ok)
