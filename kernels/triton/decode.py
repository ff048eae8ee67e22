"""Paged decode attention in Triton: the matrix-core path of
aiter_paged_decode_attention on the AMD targets (MFMA / WMMA) and, when forced,
on sm_90a; compiled ahead of time by build.py, never at run time.

Same contract as kernels/attention/decode.cu (attention_params.h's
DecodeParams): q [batch, q_tokens, Hq, D], caches [num_blocks, page_size, Hkv, D]
compact (16-bit like q, or fp8 with dequantization scales).  A program takes
BM rows (new token, query head) of one sequence and kv head -- the query heads
sharing that kv head, so each cached byte is read once for all of them, as one
product of the rows against a key tile -- over one split of the context.  With
one split it writes the output; with several, its partial output and
log-sum-exp (natural log, -inf where it saw no key) in the workspace layout
that decode.cu's merge kernel reads: slot ((b * q_tokens + i) * Hq + h) *
splits + split, D floats a slot.
Grid: (batch * splits, Hkv * row_blocks).

Indices live in device memory, unchecked by the host: a context length is
clamped to [0, capacity], and a key whose block id lies outside [0, num_blocks)
is masked (never read), as in decode.cu.
"""
import triton
import triton.language as tl


@triton.jit
def _row_bounds(rows, length, q_tokens, group, window_left):
    """[lo, hi) of the key positions each row sees: new token i sits at
    position length - q_tokens + i (decode.cu's rule); unused rows see none."""
    used = rows < q_tokens * group
    pos = length - q_tokens + rows // group
    hi = tl.where(used, tl.maximum(pos + 1, 0), 0)
    lo = tl.where((window_left >= 0) & (pos - window_left > 0), pos - window_left, 0)
    return tl.where(used, lo, 0), hi


@triton.jit
def _key_rows(table_row, keys, end, page_size, num_blocks, kv_heads, kvh, D: tl.constexpr):
    """Element offsets of the keys' rows (this kv head) in the cache, and
    whether each is below `end` with a block id inside the cache."""
    inside = keys < end
    block = tl.load(table_row + keys // page_size, mask=inside, other=-1)
    ok = inside & (block >= 0) & (block < num_blocks)
    slot = tl.where(ok, block, 0).to(tl.int64) * page_size + keys % page_size
    return (slot * kv_heads + kvh) * D, ok


@triton.jit
def _paged_keys(qt, k_cache, v_cache, table_row, first, end, lo, hi, page_size, num_blocks, kv_heads, kvh,
                qk_scale, softcap, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """The online softmax of the rows of qt over the cached keys [first, end),
    BN a tile, read through one block-table row; row r sees keys [lo[r], hi[r]).
    Returns (acc, m, l): P V unnormalized, the rows' maxima (log2 domain) and sums
    (paged_prefill.py runs the same loop)."""
    dims = tl.arange(0, D)
    acc = tl.zeros((BM, D), dtype=tl.float32)
    m = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l = tl.zeros((BM,), dtype=tl.float32)
    for start in range(first, end, BN):
        keys = start + tl.arange(0, BN)
        at, ok = _key_rows(table_row, keys, end, page_size, num_blocks, kv_heads, kvh, D)
        kt = tl.load(k_cache + at[:, None] + dims[None, :], mask=ok[:, None], other=0.0).to(qt.dtype)
        s = tl.dot(qt, tl.trans(kt))
        if softcap > 0:  # softcap * tanh(x / softcap), tanh by exp2 (every target has it); log2 domain
            x = s * (qk_scale / softcap)
            s = (1.0 - 2.0 / (tl.exp2(x * (2.0 * 1.4426950408889634)) + 1.0)) * (softcap * 1.4426950408889634)
        else:
            s = s * (qk_scale * 1.4426950408889634)
        visible = ok[None, :] & (keys[None, :] >= lo[:, None]) & (keys[None, :] < hi[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet: p = 0, not NaN
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m - m_safe)
        l = l * alpha + tl.sum(p, 1)
        vt = tl.load(v_cache + at[:, None] + dims[None, :], mask=ok[:, None], other=0.0).to(qt.dtype)
        acc = tl.dot(p.to(qt.dtype), vt, acc * alpha[:, None])
        m = m_new
    return acc, m, l


@triton.jit
def _store_rows(out, partial_out, partial_lse, acc, m, l, b, split, rows, kvh, q_tokens, q_heads, group, splits,
                out_seq_stride, out_token_stride, out_head_stride, v_scale, D: tl.constexpr):
    """The rows' results: the output (one split) or the split's partial
    output and log-sum-exp (several)."""
    used = rows < q_tokens * group
    token = rows // group
    head = kvh * group + rows % group
    seen = l > 0
    o = acc * (v_scale / tl.where(seen, l, 1.0))[:, None]
    cols = tl.arange(0, D)
    if splits == 1:
        at = out + b.to(tl.int64) * out_seq_stride + token.to(tl.int64) * out_token_stride \
            + head.to(tl.int64) * out_head_stride
        tl.store(at[:, None] + cols[None, :], o.to(out.dtype.element_ty), mask=used[:, None])
    else:
        slot = ((b.to(tl.int64) * q_tokens + token) * q_heads + head) * splits + split
        tl.store(partial_out + slot[:, None] * D + cols[None, :], o, mask=used[:, None])
        lse = tl.where(seen, (m + tl.log2(tl.where(seen, l, 1.0))) * 0.6931471805599453, float("-inf"))
        tl.store(partial_lse + slot, lse, mask=used)


@triton.jit
def decode_kernel(q, k_cache, v_cache, out, partial_out, partial_lse, block_table, context_lens,
                  q_seq_stride, q_token_stride, q_head_stride, out_seq_stride, out_token_stride, out_head_stride,
                  table_stride, num_blocks, capacity, page_size, q_tokens, q_heads, kv_heads, row_blocks,
                  splits, split_keys, window_left, scale, softcap, k_scale, v_scale,
                  BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0) // splits
    split = tl.program_id(0) % splits
    kvh = tl.program_id(1) // row_blocks
    group = q_heads // kv_heads
    rows = (tl.program_id(1) % row_blocks) * BM + tl.arange(0, BM)
    length = tl.minimum(tl.maximum(tl.load(context_lens + b), 0), capacity)
    lo, hi = _row_bounds(rows, length, q_tokens, group, window_left)
    # The union of the rows' ranges, cut to this split's positions.
    has = lo < hi
    # The launcher keeps capacity + 4 BN within int32 (no overflow of a tile's
    # keys, nor of those the pipeliner computes ahead).
    split_lo = tl.minimum(split.to(tl.int64) * split_keys, capacity).to(tl.int32)
    split_hi = tl.minimum(split_lo.to(tl.int64) + split_keys, capacity).to(tl.int32)
    end = tl.minimum(tl.max(tl.where(has, hi, 0)), split_hi)
    # An empty range starts at its end, never at 2^31 - 1: the software
    # pipeliner computes the first iterations' keys (first + BN, first + 2 BN)
    # before it tests them, and those must not wrap around to negative keys.
    first = tl.minimum(tl.maximum(tl.min(tl.where(has, lo, 2147483647)), split_lo), end)

    used = rows < q_tokens * group
    q_at = q + b.to(tl.int64) * q_seq_stride + (rows // group).to(tl.int64) * q_token_stride \
        + (kvh * group + rows % group).to(tl.int64) * q_head_stride
    dims = tl.arange(0, D)
    qt = tl.load(q_at[:, None] + dims[None, :], mask=used[:, None], other=0.0)
    table_row = block_table + b.to(tl.int64) * table_stride
    acc, m, l = _paged_keys(qt, k_cache, v_cache, table_row, first, end, lo, hi, page_size, num_blocks, kv_heads,
                            kvh, scale * k_scale, softcap, BM, BN, D)
    _store_rows(out, partial_out, partial_lse, acc, m, l, b, split, rows, kvh, q_tokens, q_heads, group, splits,
                out_seq_stride, out_token_stride, out_head_stride, v_scale, D)
