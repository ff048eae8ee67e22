"""Attention: prefill over packed variable-length sequences, decode over a paged
KV cache, and the write of new keys and values into that cache.

Layouts: q ``[tokens, Hq, D]``, k ``[tokens, Hkv, D]``, v ``[tokens, Hkv, Dv]`` (Hq a
multiple of Hkv; D 64 or 128, for prefill also 256, and 192 with Dv 128; token and
head strides free, so views into a fused QKV buffer work); caches
``[num_blocks, page_size, Hkv, D]``, compact, in q's dtype or fp8.
"""
from .._call import Call
from .._lib import check, ffi, lib
from .._route import via_torch
from ..errors import InvalidArgumentError


def _int32(value, name):
    value = int(value)
    if not -2**31 <= value < 2**31:
        raise InvalidArgumentError(f"{name}: expected a 32-bit integer, got {value}")
    return value


def _params(softmax_scale=None, causal=True, window_left=-1, k_scale=1.0, v_scale=1.0, softcap=0.0, lse=None):
    """An ``aiter_attention_params *`` with the library's defaults, then these values
    (``lse``: an Arg or None)."""
    p = ffi.new("aiter_attention_params *")
    lib.aiter_attention_params_init(p)
    p.softmax_scale = 0.0 if softmax_scale is None else float(softmax_scale)
    p.causal = 1 if causal else 0
    p.window_left = _int32(window_left, "window_left")
    p.k_scale, p.v_scale = float(k_scale), float(v_scale)
    p.softcap = float(softcap)
    p.lse = ffi.NULL if lse is None else lse.c
    return p


@via_torch("prefill_attention")
def prefill_attention(q, k, v, cu_seqlens_q, cu_seqlens_k=None, *, softmax_scale=None, causal=True,
                      window_left=-1, softcap=0.0, return_lse=False, lse=None, out=None):
    """Attention of packed sequences: sequence ``b`` owns query rows
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
    scaled logits (-inf for a row that sees no key): ``(out, lse)``."""
    c = Call("aiter_prefill_attention", like=q)
    q_, k_, v_ = c.input(q, "q"), c.input(k, "k"), c.input(v, "v")
    cu_q = c.input(cu_seqlens_q, "cu_seqlens_q")
    cu_k = cu_q if cu_seqlens_k is None else c.input(cu_seqlens_k, "cu_seqlens_k")
    out_ = c.output(out, "out", tuple(q_.shape[:2]) + (v_.shape[-1],), q_.dtype)
    want_lse = return_lse or lse is not None
    lse_ = c.output(lse, "lse", tuple(q_.shape[:2]), "float32") if want_lse else None
    params = _params(softmax_scale, causal, window_left, softcap=softcap, lse=lse_)
    c.run(out_.c, q_.c, k_.c, v_.c, cu_q.c, cu_k.c, params)
    return (c.result(out_), c.result(lse_)) if want_lse else c.result(out_)


def paged_decode_workspace_size(q, k_cache, block_table):
    """Bytes of workspace ``paged_decode_attention(..., workspace=...)`` needs for
    arrays of these shapes (their contents are not read)."""
    c = Call("aiter_paged_decode_attention_workspace_size", like=q)
    q_, kc, table = c.input(q, "q"), c.input(k_cache, "k_cache"), c.input(block_table, "block_table")
    size = ffi.new("size_t *")
    check(lib.aiter_paged_decode_attention_workspace_size(size, q_.c, kc.c, table.c))
    return int(size[0])


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
    split = split_kv or workspace is not None or len(getattr(q, "shape", ())) == 4
    c = Call("aiter_paged_decode_attention_split_kv" if split else "aiter_paged_decode_attention", like=q)
    q_ = c.input(q, "q")
    kc, vc = c.input(k_cache, "k_cache"), c.input(v_cache, "v_cache")
    table, lens = c.input(block_table, "block_table"), c.input(context_lens, "context_lens")
    out_ = c.output(out, "out", q_.shape, q_.dtype)
    params = _params(softmax_scale, True, window_left, k_scale, v_scale, softcap)
    if not split:
        c.run(out_.c, q_.c, kc.c, vc.c, table.c, lens.c, params)
        return c.result(out_)
    if workspace is None:
        size = ffi.new("size_t *")
        check(lib.aiter_paged_decode_attention_workspace_size(size, q_.c, kc.c, table.c))
        workspace = c.adapter.empty((max(int(size[0]) // 4, 1),), "float32", q)
    ws = c.inplace(workspace, "workspace")
    c.run(out_.c, q_.c, kc.c, vc.c, table.c, lens.c, ws.c, params)
    return c.result(out_)


@via_torch("paged_prefill_attention")
def paged_prefill_attention(q, k_cache, v_cache, block_table, context_lens, cu_seqlens_q, *, softmax_scale=None,
                            causal=True, window_left=-1, softcap=0.0, k_scale=1.0, v_scale=1.0, return_lse=False,
                            lse=None, out=None):
    """Prefill over a paged cache (chunked prefill, prefix caching): sequence ``b``'s
    new tokens are q rows ``cu_seqlens_q[b]:cu_seqlens_q[b+1]``, the last positions
    of its context of ``context_lens[b]`` positions, all read from the caches (write
    the new keys and values first with reshape_and_cache).  q ``[Tq, Hq, D]``;
    other arguments as paged_decode_attention and prefill_attention.  Returns
    ``out`` (and the fp32 ``[Tq, Hq]`` log-sum-exp with ``return_lse``)."""
    c = Call("aiter_paged_prefill_attention", like=q)
    q_ = c.input(q, "q")
    kc, vc = c.input(k_cache, "k_cache"), c.input(v_cache, "v_cache")
    table, lens = c.input(block_table, "block_table"), c.input(context_lens, "context_lens")
    cu_q = c.input(cu_seqlens_q, "cu_seqlens_q")
    out_ = c.output(out, "out", q_.shape, q_.dtype)
    want_lse = return_lse or lse is not None
    lse_ = c.output(lse, "lse", tuple(q_.shape[:2]), "float32") if want_lse else None
    params = _params(softmax_scale, causal, window_left, k_scale, v_scale, softcap, lse_)
    c.run(out_.c, q_.c, kc.c, vc.c, table.c, lens.c, cu_q.c, params)
    return (c.result(out_), c.result(lse_)) if want_lse else c.result(out_)


@via_torch("reshape_and_cache")
def reshape_and_cache(key, value, k_cache, v_cache, slot_mapping, *, k_scale=1.0, v_scale=1.0):
    """Writes ``key[t]`` and ``value[t]`` (``[T, Hkv, D]``) to cache slot
    ``slot_mapping[t] = block * page_size + row``, in place; a negative slot skips
    the token.  A slot past the cache raises InvalidArgumentError for CPU arrays
    (nothing is written); on a GPU that token is skipped too.  An fp8 cache
    stores ``key / k_scale`` (``value / v_scale``), rounded to nearest and
    saturated.  Returns ``(k_cache, v_cache)``."""
    c = Call("aiter_reshape_and_cache", like=key)
    key_, value_ = c.input(key, "key"), c.input(value, "value")
    kc, vc = c.inplace(k_cache, "k_cache"), c.inplace(v_cache, "v_cache")
    slots = c.input(slot_mapping, "slot_mapping")
    c.run(kc.c, vc.c, key_.c, value_.c, slots.c, float(k_scale), float(v_scale))
    return c.result(kc), c.result(vc)
