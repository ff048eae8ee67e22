"""Attention: prefill over packed variable-length sequences, decode over a paged
KV cache, and the write of new keys and values into that cache.

Layouts: q ``[tokens, Hq, D]``, k ``[tokens, Hkv, D]``, v ``[tokens, Hkv, Dv]`` (Hq a
multiple of Hkv; D 64 or 128, for prefill also 256, and 192 with Dv 128; token and
head strides free, so views into a fused QKV buffer work); caches
``[num_blocks, page_size, Hkv, D]``, compact, in q's dtype or fp8.

The wrappers come from the op table (``aiter.spec``); paged_decode_attention
adds the choice of the split-KV op and the allocation of its workspace.
"""
from .._call import Call, arg_type
from .._lib import check, ffi, lib
from .._route import via_torch
from ._from_spec import table_op

# The params struct's type and init function, at import (spec/attention.py's _params).
arg_type("aiter_attention_params_init", "aiter_attention_params *")

prefill_attention = table_op("prefill_attention", """
    Attention of packed sequences: sequence ``b`` owns query rows
    ``cu_seqlens_q[b]:cu_seqlens_q[b+1]`` and key rows ``cu_seqlens_k[b]:cu_seqlens_k[b+1]``.

    q ``[Tq, Hq, D]``, k and v ``[Tk, Hkv, D]``; ``cu_seqlens_*`` int32 ``[B + 1]``
    (``cu_seqlens_k=None``: the same as ``cu_seqlens_q``).  ``softmax_scale=None``
    means ``1/sqrt(D)`` (as does 0).  ``causal`` aligns the query and key sequences
    at their ends (a query sees the keys up to its own position, so a longer key
    sequence acts as a cached prefix); ``window_left >= 0`` also hides keys more
    than ``window_left`` positions before the query.  A query that sees no key gets
    zeros.  ``softcap > 0`` caps the logits at ``softcap * tanh(logits / softcap)``.
    Returns ``out`` ``[Tq, Hq, Dv]`` in q's dtype; with ``return_lse`` (or an
    ``lse`` array given) also the fp32 ``[Tq, Hq]`` log-sum-exp of each row's
    scaled logits (-inf for a row that sees no key): ``(out, lse)``.""")


def paged_decode_workspace_size(q, k_cache, block_table):
    """Bytes of workspace ``paged_decode_attention(..., workspace=...)`` needs for
    arrays of these shapes (their contents are not read)."""
    c = Call("aiter_paged_decode_attention_workspace_size", like=q)
    q_, kc, table = c.input(q, "q"), c.input(k_cache, "k_cache"), c.input(block_table, "block_table")
    size = ffi.new(arg_type("aiter_paged_decode_attention_workspace_size", "size_t *"))
    check(lib.aiter_paged_decode_attention_workspace_size(size, q_.c, kc.c, table.c))
    return int(size[0])


_paged_decode = table_op("paged_decode_attention", "paged_decode_attention, one pass.", route=False)
_paged_decode_split_kv = table_op("paged_decode_attention_split_kv", "paged_decode_attention, split-KV.",
                                  route=False)


@via_torch("paged_decode_attention")
def paged_decode_attention(q, k_cache, v_cache, block_table, context_lens, *, softmax_scale=None,
                           window_left=-1, k_scale=1.0, v_scale=1.0, softcap=0.0, workspace=None,
                           split_kv=False, out=None):
    """One new query token per sequence over its paged context.

    q ``[B, Hq, D]``; caches ``[num_blocks, page_size, Hkv, D]``; token ``t`` of
    sequence ``b`` lives at ``cache[block_table[b, t // page_size], t % page_size]``.
    ``block_table`` int32 ``[B, max_blocks]``, ``context_lens`` int32 ``[B]``.  The
    query is the last position of its context; ``window_left`` counts back from it.
    An fp8 cache holds ``value / scale``: ``k_scale`` and ``v_scale`` dequantize it
    (they are ignored for a cache in q's dtype).  A context of 0 gives zeros.

    Split-KV (several blocks per sequence, their results merged: for few long
    sequences on a GPU) runs when ``workspace`` is given (a compact array of at
    least ``paged_decode_workspace_size(q, k_cache, block_table)`` bytes), or with
    ``split_kv=True`` (a workspace is then allocated like q).  q may then also be
    ``[B, Nq, Hq, D]``: Nq (1 to 8) new tokens a sequence, the last positions of
    its context, each seeing the positions up to its own."""
    scalars = dict(softmax_scale=softmax_scale, window_left=window_left, k_scale=k_scale, v_scale=v_scale,
                   softcap=softcap, out=out)
    if not (split_kv or workspace is not None or len(getattr(q, "shape", ())) == 4):
        return _paged_decode(q, k_cache, v_cache, block_table, context_lens, **scalars)
    if workspace is None:
        size = paged_decode_workspace_size(q, k_cache, block_table)
        workspace = Call("aiter_paged_decode_attention", like=q).adapter.empty((max(size // 4, 1),), "float32", q)
    return _paged_decode_split_kv(q, k_cache, v_cache, block_table, context_lens, workspace=workspace, **scalars)


paged_prefill_attention = table_op("paged_prefill_attention", """
    Prefill over a paged cache (chunked prefill, prefix caching): sequence ``b``'s
    new tokens are q rows ``cu_seqlens_q[b]:cu_seqlens_q[b+1]``, the last positions
    of its context of ``context_lens[b]`` positions, all read from the caches (write
    the new keys and values first with reshape_and_cache).  q ``[Tq, Hq, D]``;
    other arguments as paged_decode_attention and prefill_attention.  Returns
    ``out`` (and the fp32 ``[Tq, Hq]`` log-sum-exp with ``return_lse``).""")

reshape_and_cache = table_op("reshape_and_cache", """
    Writes ``key[t]`` and ``value[t]`` (``[T, Hkv, D]``) to cache slot
    ``slot_mapping[t] = block * page_size + row``, in place; a negative slot skips
    the token.  A slot past the cache raises InvalidArgumentError for CPU arrays
    (nothing is written); on a GPU that token is skipped too.  An fp8 cache
    stores ``key / k_scale`` (``value / v_scale``), rounded to nearest and
    saturated.  Returns ``(k_cache, v_cache)``.""")
