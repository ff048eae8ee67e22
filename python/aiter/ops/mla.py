"""Multi-head latent attention (DeepSeek-V3/R1 MLA): decode over a paged cache of
576-wide latent rows (512 compressed KV + 64 rotated key dims), and the write of
new latents into that cache.

Layouts: q ``[B, s_q, Hq, 576]`` (the query times the absorbed key up-projection,
its rotated part last), out ``[B, s_q, Hq, 512]``, cache ``[num_blocks,
page_size, 576]`` in q's dtype (fp16/bf16) or fp8 (e4m3fn, e4m3fnuz) with a
per-tensor scale.  The wrappers come from the op table (``aiter.spec``);
mla_decode adds the allocation of its workspace.
"""
from .._call import Call, arg_type
from .._lib import check, ffi, lib
from ._from_spec import table_op

# The params struct's type and init function, at import (spec/mla.py's _params).
arg_type("aiter_mla_params_init", "aiter_mla_params *")


def mla_decode_workspace_size(q, kv_cache, block_table, num_splits=0):
    """Bytes of workspace ``mla_decode`` needs for arrays of these shapes (their
    contents are not read) and ``num_splits`` (0: automatic)."""
    c = Call("aiter_mla_decode_workspace_size", like=q)
    q_, kc, table = c.input(q, "q"), c.input(kv_cache, "kv_cache"), c.input(block_table, "block_table")
    size = ffi.new(arg_type("aiter_mla_decode_workspace_size", "size_t *"))
    check(lib.aiter_mla_decode_workspace_size(size, q_.c, kc.c, table.c, int(num_splits)))
    return int(size[0])


_mla_decode = table_op("mla_decode", "mla_decode with its workspace given (or not needed).", route=False)


def mla_decode(q, kv_cache, block_table, context_lens, softmax_scale, *, kv_scale=1.0, num_splits=0,
               workspace=None, return_lse=False, lse=None, out=None):
    """MLA decode: each sequence's ``s_q`` (1 to 4) new tokens, the last positions
    of its context of ``context_lens[b]`` positions, each seeing the positions up to
    its own; keys are the whole latent rows, values their first 512 elements.

    q ``[B, s_q, Hq, 576]``; ``kv_cache`` ``[num_blocks, page_size, 576]``; position
    ``t`` of sequence ``b`` is ``kv_cache[block_table[b, t // page_size], t %
    page_size]``; ``block_table`` int32 ``[B, max_blocks]``, ``context_lens`` int32
    ``[B]``.  ``softmax_scale`` multiplies the logits (the model's, required).  An
    fp8 cache holds ``latent / kv_scale``.  Split-KV: ``num_splits`` (0 chooses
    from the shapes and the device) with ``workspace`` (a compact array of at
    least ``mla_decode_workspace_size(q, kv_cache, block_table, num_splits)``
    bytes; allocated like q when None and needed).  Returns ``out`` ``[B, s_q,
    Hq, 512]``; with ``return_lse`` (or ``lse`` given) also the fp32 ``[B, s_q,
    Hq]`` log-sum-exp (-inf for a row that sees nothing): ``(out, lse)``."""
    if workspace is None:
        size = mla_decode_workspace_size(q, kv_cache, block_table, num_splits)
        if size > 0:
            workspace = Call("aiter_mla_decode", like=q).adapter.empty(((size + 3) // 4,), "float32", q)
    return _mla_decode(q, kv_cache, block_table, context_lens, softmax_scale, kv_scale=kv_scale,
                       num_splits=num_splits, workspace=workspace, return_lse=return_lse, lse=lse, out=out)


concat_and_cache_mla = table_op("concat_and_cache_mla", """
    Writes ``concat(kv_c[t], k_pe[t])`` (``[T, 512]`` and ``[T, 64]``) as the
    576-wide row at slot ``slot_mapping[t] = block * page_size + row`` of
    ``kv_cache``, in place; a negative slot skips the token.  A slot past the cache
    raises InvalidArgumentError for CPU arrays (nothing written); on a GPU that
    token is skipped.  An fp8 cache stores ``x / scale``, rounded to nearest and
    saturated.  Returns ``kv_cache``.""")
