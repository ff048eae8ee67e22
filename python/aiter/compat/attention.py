"""AITER's attention entry points (aiter/ops/mha.py, aiter/ops/attention.py) over
libaiter's prefill and paged attention.  Paged caches are [num_blocks,
block_size, num_kv_heads, head_size] ("NHD")."""
from typing import Optional, Sequence

import torch
from torch import Tensor

from ..errors import InvalidArgumentError
from ._common import refuse, refuse_tensor

_ops = torch.ops.aiter


def _window_left(function, window_size, causal):
    left, right = (tuple(window_size) + (-1, -1))[:2]
    if right not in (-1, 0) or (right == 0 and not causal):
        raise InvalidArgumentError(f"aiter.compat.{function}: window_size: a right window is not supported "
                                   f"(got {tuple(window_size)})")
    if left >= 0 and not causal:
        raise InvalidArgumentError(f"aiter.compat.{function}: window_size: a left window needs causal=True")
    return left


def _refuse_varlen_options(dropout_p, bias, alibi_slopes, return_attn_probs):
    refuse("flash_attn_varlen_func", "dropout_p", dropout_p, 0.0)
    refuse_tensor("flash_attn_varlen_func", "bias", bias)
    refuse_tensor("flash_attn_varlen_func", "alibi_slopes", alibi_slopes)
    refuse("flash_attn_varlen_func", "return_attn_probs", return_attn_probs, False)


def flash_attn_varlen_func(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor,
                           max_seqlen_q: int, max_seqlen_k: int, min_seqlen_q: int = 0, dropout_p: float = 0.0,
                           softmax_scale: Optional[float] = None, logits_soft_cap: float = 0.0, causal: bool = False,
                           window_size: Sequence[int] = (-1, -1), bias: Optional[Tensor] = None,
                           alibi_slopes: Optional[Tensor] = None, deterministic: bool = False,
                           return_lse: bool = False, return_attn_probs: bool = False,
                           block_table: Optional[Tensor] = None, out: Optional[Tensor] = None):
    """AITER ``flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k,
    max_seqlen_q, max_seqlen_k, min_seqlen_q=0, dropout_p=0.0, softmax_scale=None,
    logits_soft_cap=0.0, causal=False, window_size=(-1, -1), bias=None,
    alibi_slopes=None, deterministic=False, return_lse=False,
    return_attn_probs=False, block_table=None, out=None)``.

    q [total_q, Hq, D]; k, v [total_k, Hkv, D] packed, or with ``block_table``
    paged caches [num_blocks, block_size, Hkv, D] holding each sequence's
    ``cu_seqlens_k[b+1] - cu_seqlens_k[b]`` positions.  Causal masks align at the
    ends of the sequences.  Returns ``out`` or ``(out, softmax_lse)`` with the
    log-sum-exp as [Hq, total_q] float32.  ``max_seqlen_*``, ``min_seqlen_q``
    and ``deterministic`` are hints the library does not need."""
    _refuse_varlen_options(dropout_p, bias, alibi_slopes, return_attn_probs)
    left = _window_left("flash_attn_varlen_func", window_size, causal)
    if block_table is None:
        result, lse = _ops.prefill_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, softmax_scale, causal, left,
                                             logits_soft_cap)
    else:
        lens = (cu_seqlens_k[1:] - cu_seqlens_k[:-1]).to(torch.int32)
        result, lse = _ops.paged_prefill_attention(q, k, v, block_table, lens, cu_seqlens_q, softmax_scale, causal,
                                                   left, logits_soft_cap)
    if out is not None:
        out.copy_(result)
        result = out
    return (result, lse.t().contiguous()) if return_lse else result


def paged_attention_v1(out: Tensor, workspace_buffer: Tensor, query: Tensor, key_cache: Tensor, value_cache: Tensor,
                       scale: float, block_tables: Tensor, cu_query_lens: Optional[Tensor], context_lens: Tensor,
                       max_context_len: int, alibi_slopes: Optional[Tensor], kv_cache_dtype: str,
                       kv_cache_layout: str, logits_soft_cap: float, k_scale: Tensor, v_scale: Tensor,
                       fp8_out_scale: Optional[Tensor] = None, partition_size: int = 256, mtp: int = 1,
                       sliding_window: int = 0) -> Tensor:
    """AITER ``paged_attention_v1(out, workspace_buffer, query, key_cache,
    value_cache, scale, block_tables, cu_query_lens, context_lens,
    max_context_len, alibi_slopes, kv_cache_dtype, kv_cache_layout,
    logits_soft_cap, k_scale, v_scale, fp8_out_scale=None, partition_size=256,
    mtp=1, sliding_window=0) -> Tensor``.

    ``kv_cache_layout`` must be "NHD".  Without ``cu_query_lens``: one query
    token per sequence (query [B, Hq, D]); with it, sequence b's new tokens are
    query rows ``cu_query_lens[b]:cu_query_lens[b+1]``, the last positions of its
    context.  ``sliding_window = W > 0`` lets a query see its last W positions.
    The workspace, ``partition_size`` and ``max_context_len`` are AITER tuning
    inputs the library does not need; ``out`` is written and returned."""
    torch.ops.aiter_compat.paged_attention_v1(
        out, workspace_buffer, query, key_cache, value_cache, scale, block_tables, cu_query_lens, context_lens,
        max_context_len, alibi_slopes, kv_cache_dtype, kv_cache_layout, logits_soft_cap, k_scale, v_scale,
        fp8_out_scale, partition_size, mtp, sliding_window)
    return out


def paged_attention_v1_into(out: Tensor, workspace_buffer: Tensor, query: Tensor, key_cache: Tensor,
                            value_cache: Tensor, scale: float, block_tables: Tensor, cu_query_lens: Optional[Tensor],
                            context_lens: Tensor, max_context_len: int, alibi_slopes: Optional[Tensor],
                            kv_cache_dtype: str, kv_cache_layout: str, logits_soft_cap: float, k_scale: Tensor,
                            v_scale: Tensor, fp8_out_scale: Optional[Tensor] = None, partition_size: int = 256,
                            mtp: int = 1, sliding_window: int = 0) -> None:
    """paged_attention_v1 as registered (``torch.ops.aiter_compat.paged_attention_v1``):
    a schema may not return an alias of an argument, so this one returns nothing."""
    refuse("paged_attention_v1", "kv_cache_layout", kv_cache_layout, "NHD")
    refuse_tensor("paged_attention_v1", "alibi_slopes", alibi_slopes)
    refuse_tensor("paged_attention_v1", "fp8_out_scale", fp8_out_scale)
    refuse("paged_attention_v1", "mtp", mtp, 1)
    left = sliding_window - 1 if sliding_window > 0 else -1
    ks, vs = float(k_scale), float(v_scale)
    if cu_query_lens is None:
        _ops.paged_decode_attention.out(query, key_cache, value_cache, block_tables, context_lens, scale, left, ks, vs,
                                        logits_soft_cap, out=out)
    else:
        lse = torch.empty(query.shape[:2], dtype=torch.float32, device=query.device)
        _ops.paged_prefill_attention.out(query, key_cache, value_cache, block_tables, context_lens, cu_query_lens,
                                         scale, True, left, logits_soft_cap, ks, vs, out=out, lse=lse)
