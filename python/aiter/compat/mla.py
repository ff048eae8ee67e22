"""AITER's MLA entry points (aiter/mla.py ``mla_decode_fwd``, aiter/ops/cache.py
``concat_and_cache_mla``) over libaiter's mla_decode and concat_and_cache_mla.

AITER describes each sequence's pages CSR-style (``kv_indptr`` into
``kv_indices``, the last page's fill in ``kv_last_page_lens``); libaiter reads a
block table and context lengths, which are built here with tensor ops (no host
synchronization, so the call can be captured into a CUDA graph).  The table is
as wide as ``kv_indices`` (any one sequence may own every page), so the split
plan spans that width: the native ``aiter.mla_decode`` with a tight block table
is the faster path for split-KV."""
from typing import Optional

import torch
from torch import Tensor

from .. import mla_decode_workspace_size
from ..errors import InvalidArgumentError
from ._common import refuse, refuse_tensor

_ops = torch.ops.aiter
_D, _DV = 576, 512
_KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3")


def _scale_value(scale):
    # AITER passes fp8 scales as one-element tensors; the library takes a number.
    return 1.0 if scale is None else float(scale)


def _block_table(kv_indptr, kv_indices, kv_last_page_lens, page_size):
    """CSR pages -> (block table [B, W] int32, context lengths [B] int32)."""
    pages = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int64)
    lens = torch.where(pages > 0, (pages - 1) * page_size + kv_last_page_lens.to(torch.int64), 0)
    width = max(kv_indices.numel(), 1)
    cols = torch.arange(width, device=kv_indices.device)
    where = (kv_indptr[:-1, None].to(torch.int64) + cols[None]).clamp(max=max(kv_indices.numel() - 1, 0))
    source = kv_indices if kv_indices.numel() else torch.zeros(1, dtype=torch.int32, device=kv_indices.device)
    table = torch.where(cols[None] < pages[:, None], source[where], 0)
    return table.to(torch.int32).contiguous(), lens.to(torch.int32).contiguous()


def mla_decode_fwd(q: Tensor, kv_buffer: Tensor, o: Tensor, qo_indptr: Tensor, kv_indptr: Tensor,
                   kv_indices: Tensor, kv_last_page_lens: Tensor, max_seqlen_q: int, page_size: int = 1,
                   nhead_kv: int = 1, sm_scale: Optional[float] = None, logit_cap: float = 0.0,
                   num_kv_splits: Optional[int] = None, num_kv_splits_indptr: Optional[Tensor] = None,
                   work_meta_data: Optional[Tensor] = None, work_indptr: Optional[Tensor] = None,
                   work_info_set: Optional[Tensor] = None, reduce_indptr: Optional[Tensor] = None,
                   reduce_final_map: Optional[Tensor] = None, reduce_partial_map: Optional[Tensor] = None,
                   q_scale: Optional[Tensor] = None, kv_scale: Optional[Tensor] = None,
                   intra_batch_mode: bool = False, return_logits: bool = False, return_lse: bool = False):
    """AITER ``mla_decode_fwd(q, kv_buffer, o, qo_indptr, kv_indptr, kv_indices,
    kv_last_page_lens, max_seqlen_q, page_size=1, nhead_kv=1, sm_scale=None,
    logit_cap=0.0, num_kv_splits=None, ..., q_scale=None, kv_scale=None, ...,
    return_logits=False, return_lse=False)``.

    q [total_s, H, 576] with ``max_seqlen_q`` new tokens every sequence (total_s =
    B * max_seqlen_q); kv_buffer [num_pages, page_size, 1, 576] (or 3-dim), bf16 /
    fp16 or fp8 e4m3 with ``kv_scale``; o [total_s, H, 512], written in place.
    ``sm_scale=None`` is 1/sqrt(576), as AITER's.  AITER's persistent-kernel
    metadata (work_*, reduce_*) is accepted and not needed.  Returns ``(o, lse)``
    with lse [total_s, H] fp32 when ``return_lse``, else ``(o, None)``."""
    name = "mla_decode_fwd"
    refuse(name, "logit_cap", logit_cap, 0.0)
    refuse(name, "nhead_kv", nhead_kv, 1)
    refuse(name, "return_logits", return_logits, False)
    refuse_tensor(name, "q_scale", q_scale)
    batch, s_q = qo_indptr.numel() - 1, int(max_seqlen_q)
    if q.dim() != 3 or q.shape[0] != batch * s_q:
        raise InvalidArgumentError(f"aiter.compat.{name}: q: expected [B * max_seqlen_q, H, 576] = "
                                   f"[{batch * s_q}, H, 576] (the same new tokens every sequence), "
                                   f"got {tuple(q.shape)}")
    cache = kv_buffer.view(kv_buffer.shape[0], kv_buffer.shape[1], -1) if kv_buffer.dim() == 4 else kv_buffer
    if page_size not in (1, cache.shape[1]):
        raise InvalidArgumentError(f"aiter.compat.{name}: page_size={page_size} differs from kv_buffer's "
                                   f"{cache.shape[1]}")
    table, lens = _block_table(kv_indptr, kv_indices, kv_last_page_lens, cache.shape[1])
    heads = q.shape[1]
    q4, o4 = q.view(batch, s_q, heads, q.shape[2]), o.view(batch, s_q, heads, o.shape[2])
    splits = 0 if num_kv_splits is None else min(int(num_kv_splits), 128)
    size = mla_decode_workspace_size(q4, cache, table, splits)
    workspace = torch.empty((size + 3) // 4, dtype=torch.float32, device=q.device) if size else None
    lse = torch.empty(batch, s_q, heads, dtype=torch.float32, device=q.device)
    scale = 1.0 / _D ** 0.5 if sm_scale is None else float(sm_scale)
    _ops.mla_decode.out(q4, cache, table, lens, scale, workspace, _scale_value(kv_scale), splits, out=o4, lse=lse)
    return o, (lse.view(batch * s_q, heads) if return_lse else None)


def concat_and_cache_mla_kernel(kv_c: Tensor, k_pe: Tensor, kv_cache: Tensor, slot_mapping: Tensor,
                                kv_cache_dtype: str, scale: Optional[Tensor] = None) -> None:
    """The body of ``torch.ops.aiter_compat.concat_and_cache_mla`` (opaque: it
    reads ``scale`` as a number)."""
    if kv_cache_dtype not in _KV_CACHE_DTYPES:
        raise InvalidArgumentError(f"aiter.compat.concat_and_cache_mla: kv_cache_dtype: expected one of "
                                   f"{_KV_CACHE_DTYPES}, got {kv_cache_dtype!r}")
    _ops.concat_and_cache_mla(kv_c, k_pe.reshape(k_pe.shape[0], -1), kv_cache, slot_mapping, _scale_value(scale))


def concat_and_cache_mla(kv_c: Tensor, k_pe: Tensor, kv_cache: Tensor, slot_mapping: Tensor, kv_cache_dtype: str,
                         scale: Optional[Tensor] = None) -> None:
    """AITER / vLLM ``concat_and_cache_mla(kv_c, k_pe, kv_cache, slot_mapping,
    kv_cache_dtype, scale) -> None``: kv_c [T, 512], k_pe [T, 64] (or [T, 1, 64])
    into kv_cache [num_blocks, block_size, 576] in place."""
    torch.ops.aiter_compat.concat_and_cache_mla(kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale)
