"""Prefill over a paged cache in Triton: the matrix-core path of
aiter_paged_prefill_attention on the AMD targets (MFMA / WMMA) and, when
forced, on sm_90a; compiled ahead of time by build.py, never at run time.

Same contract as kernels/attention/paged_prefill.cu (paged_prefill_params.h,
paged_rows.h): q and out [Tq, Hq, D] packed by cu_seqlens_q; sequence b's Lq
new tokens are the last positions of its context, read from the caches
[num_blocks, page_size, Hkv, D] (compact, 16-bit like q or fp8 with scales)
through block-table row b.  A program takes a tile of BM rows (new token,
query head) of one sequence and kv head -- the query heads sharing that kv
head, so each cached byte is read once for all of them -- and streams the
union of its rows' visible keys, BN a tile, through two products.
Tiles as paged_rows.h numbers them (per token: the group's query heads): the
first of sequence b is program floor(cu_q[b] * group / BM) + b, found by a
binary search; a program that is no tile of a sequence, or of a sequence of
impossible bounds, writes nothing.
Grid: (floor(Tq * group / BM) + batch, Hkv).
"""
import triton
import triton.language as tl

from decode import _paged_keys


@triton.jit
def _find_tile(cu_q, block, batch, search_steps, group, total_q, BM: tl.constexpr):
    """(sequence, its first q row, its new tokens, the tile's index in it);
    new tokens 0 when the program has no tile (paged_rows.h's find_tile)."""
    lo = block * 0
    hi = lo + batch - 1
    for _ in range(search_steps):  # the last b with start(b) <= block
        mid = (lo + hi + 1) // 2
        start = tl.load(cu_q + mid) * group // BM + mid  # the launcher keeps Tq * group within int32
        right = start <= block
        active = lo < hi
        lo = tl.where(active & right, mid, lo)
        hi = tl.where(active & ~right, mid - 1, hi)
    qa = tl.load(cu_q + lo)
    qb = tl.load(cu_q + lo + 1)
    valid = (0 <= qa) & (qa <= qb) & (qb <= total_q)
    tile = block - (tl.where(valid, qa, 0) * group // BM + lo)
    valid = valid & (tile >= 0) & (tile * BM < (qb - qa) * group)
    return lo, tl.where(valid, qa, 0), tl.where(valid, qb - qa, 0), tl.where(valid, tile, 0)


@triton.jit
def _visible(n, used, length, lq, group, causal, window_left):
    """[lo, hi) of the keys each row sees (paged_rows.h's visible_keys)."""
    pos = length - lq + n // group
    hi = tl.where(causal != 0, pos + 1, length)
    lo = tl.where((window_left >= 0) & (pos - window_left > 0), pos - window_left, 0)
    sees = used & (pos >= 0) & (lo < hi)
    return tl.where(sees, lo, 0), tl.where(sees, hi, 0)


@triton.jit
def paged_prefill_kernel(q, k_cache, v_cache, out, lse, block_table, context_lens, cu_seqlens_q,
                         q_token_stride, q_head_stride, out_token_stride, out_head_stride, table_stride,
                         num_blocks, capacity, page_size, batch, search_steps, total_q, q_heads, kv_heads, causal,
                         window_left, scale, softcap, k_scale, v_scale, has_lse,
                         BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    kvh = tl.program_id(1)
    group = q_heads // kv_heads
    b, qa, lq, tile = _find_tile(cu_seqlens_q, tl.program_id(0), batch, search_steps, group, total_q, BM)
    n = tile * BM + tl.arange(0, BM)
    used = n < lq * group
    length = tl.minimum(tl.maximum(tl.load(context_lens + b), 0), capacity)
    lo, hi = _visible(n, used, length, lq, group, causal, window_left)
    has = lo < hi
    end = tl.max(tl.where(has, hi, 0))
    first = tl.minimum(tl.min(tl.where(has, lo, 2147483647)), end)  # empty: [end, end), see decode.py

    token = (qa + n // group).to(tl.int64)
    head = (kvh * group + n % group).to(tl.int64)
    dims = tl.arange(0, D)
    qt = tl.load(q + (token * q_token_stride + head * q_head_stride)[:, None] + dims[None, :], mask=used[:, None],
                 other=0.0)
    table_row = block_table + b.to(tl.int64) * table_stride
    acc, m, l = _paged_keys(qt, k_cache, v_cache, table_row, first, end, lo, hi, page_size, num_blocks, kv_heads,
                            kvh, scale * k_scale, softcap, BM, BN, D)
    seen = l > 0
    o = acc * (v_scale / tl.where(seen, l, 1.0))[:, None]
    o_at = out + (token * out_token_stride + head * out_head_stride)[:, None] + dims[None, :]
    tl.store(o_at, o.to(out.dtype.element_ty), mask=used[:, None])
    if has_lse != 0:
        value = tl.where(seen, (m + tl.log2(tl.where(seen, l, 1.0))) * 0.6931471805599453, float("-inf"))
        tl.store(lse + token * q_heads + head, value, mask=used)
