"""MLA decode in Triton: the matrix-core path of aiter_mla_decode on the AMD
targets (MFMA / WMMA) and, when forced, on sm_90a; compiled ahead of time by
build.py, never at run time.

Same contract as kernels/mla/mla.cu (mla_params.h's MlaDecodeParams): q
[batch, rows, 576], the latent cache [num_blocks, page_size, 576] (keys: all
576 dims; values: the first 512), out [batch, rows, 512], rows (new token,
query head) consecutive, r = token * q_heads + head.  A program takes BM rows
of one sequence over one split of its context, so each latent byte it loads
serves all its rows: logits as one product of the rows against a tile of
positions (512 + 64 dims), then the probabilities times the tile's first 512.
With one split it writes the output (and the log-sum-exp if asked); with
several, its partial output (in out's dtype) and log-sum-exp (natural log,
-inf where it saw no position) at slot row * splits + split, which mla.cu's
combine kernel reads.
Grid: (batch * splits, row tiles).

A context length is clamped to [0, capacity] and a position whose block id
lies outside [0, num_blocks) is masked (never read), as in mla.cu.
"""
import triton
import triton.language as tl

LATENT = tl.constexpr(512)  # the value dims; the key has ROPE more
ROPE = tl.constexpr(64)


@triton.jit
def _latent_rows(table_row, keys, end, page_size, num_blocks):
    """Element offsets of the positions' cache rows, and whether each is below
    `end` with a block id inside the cache."""
    inside = keys < end
    block = tl.load(table_row + keys // page_size, mask=inside, other=-1)
    ok = inside & (block >= 0) & (block < num_blocks)
    slot = tl.where(ok, block, 0).to(tl.int64) * page_size + keys % page_size
    return slot * (LATENT + ROPE), ok


@triton.jit
def mla_decode_kernel(q, kv_cache, out, lse, partial_out, partial_lse, block_table, context_lens,
                      table_stride, num_blocks, capacity, page_size, q_tokens, q_heads, rows, splits, split_keys,
                      logit_scale, value_scale, has_lse,
                      BM: tl.constexpr, BN: tl.constexpr):
    b = tl.program_id(0) // splits
    split = tl.program_id(0) % splits
    n = tl.program_id(1) * BM + tl.arange(0, BM)
    used = n < rows
    length = tl.minimum(tl.maximum(tl.load(context_lens + b), 0), capacity)
    hi = tl.where(used, length - q_tokens + n // q_heads + 1, 0)  # row n sees positions [0, hi)
    # The launcher keeps capacity + 4 BN within int32 (no overflow of a tile's
    # positions, nor of those the software pipeliner computes ahead).
    first = tl.minimum(split.to(tl.int64) * split_keys, capacity).to(tl.int32)
    end = tl.minimum(tl.minimum(first.to(tl.int64) + split_keys, length).to(tl.int32), tl.max(hi))

    row = b.to(tl.int64) * rows + n
    latent = tl.arange(0, LATENT)
    rope = tl.arange(0, ROPE)
    q_at = q + row[:, None] * (LATENT + ROPE)
    q_latent = tl.load(q_at + latent[None, :], mask=used[:, None], other=0.0)
    q_rope = tl.load(q_at + LATENT + rope[None, :], mask=used[:, None], other=0.0)
    table_row = block_table + b.to(tl.int64) * table_stride
    acc = tl.zeros((BM, LATENT), dtype=tl.float32)
    m = tl.full((BM,), float("-inf"), dtype=tl.float32)
    l = tl.zeros((BM,), dtype=tl.float32)
    for start in range(first, end, BN):
        keys = start + tl.arange(0, BN)
        at, ok = _latent_rows(table_row, keys, end, page_size, num_blocks)
        kv = tl.load(kv_cache + at[:, None] + latent[None, :], mask=ok[:, None], other=0.0).to(q_latent.dtype)
        pe = tl.load(kv_cache + at[:, None] + LATENT + rope[None, :], mask=ok[:, None], other=0.0).to(q_rope.dtype)
        s = tl.dot(q_rope, tl.trans(pe), tl.dot(q_latent, tl.trans(kv))) * logit_scale  # log2 domain
        s = tl.where(ok[None, :] & (keys[None, :] < hi[:, None]), s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no position yet: p = 0, not NaN
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m - m_safe)
        l = l * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(kv.dtype), kv, acc * alpha[:, None])
        m = m_new
    seen = l > 0
    o = acc * (value_scale / tl.where(seen, l, 1.0))[:, None]
    row_lse = tl.where(seen, (m + tl.log2(tl.where(seen, l, 1.0))) * 0.6931471805599453, float("-inf"))
    if splits == 1:
        tl.store(out + row[:, None] * LATENT + latent[None, :], o.to(out.dtype.element_ty), mask=used[:, None])
        if has_lse != 0:
            tl.store(lse + row, row_lse, mask=used)
    else:
        slot = row * splits + split
        tl.store(partial_out + slot[:, None] * LATENT + latent[None, :], o.to(partial_out.dtype.element_ty),
                 mask=used[:, None])
        tl.store(partial_lse + slot, row_lse, mask=used)
