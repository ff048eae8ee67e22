"""AITER's GEMM entry points (aiter/ops/gemm_op_a8w8.py, aiter/tuned_gemm.py):
``Y = X @ W.T`` with W stored [N, K]."""
from typing import Optional

import torch
from torch import Tensor

from ._common import refuse, refuse_tensor

_ops = torch.ops.aiter


def gemm_a8w8_CK(XQ: Tensor, WQ: Tensor, x_scale: Tensor, w_scale: Tensor, bias: Optional[Tensor] = None,
                 dtype: torch.dtype = torch.bfloat16, splitK: Optional[int] = None) -> Tensor:
    """AITER ``gemm_a8w8_CK(XQ, WQ, x_scale, w_scale, bias=None, dtype=torch.bfloat16,
    splitK=None) -> Tensor``: int8 or fp8 XQ [M, K] and WQ [N, K], x_scale [M, 1],
    w_scale [1, N] (or [N]); ``splitK`` is a tuning hint and is ignored (the
    library picks its kernel)."""
    return _ops.gemm_a8w8(XQ, WQ, x_scale, w_scale.view(1, -1), bias, dtype)


def gemm_a8w8_blockscale(XQ: Tensor, WQ: Tensor, x_scale: Tensor, w_scale: Tensor,
                         dtype: torch.dtype = torch.bfloat16, isBpreshuffled: bool = False) -> Tensor:
    """AITER ``gemm_a8w8_blockscale(XQ, WQ, x_scale, w_scale, dtype=torch.bfloat16,
    isBpreshuffled=False) -> Tensor``: fp8 XQ [M, K], WQ [N, K]; x_scale [M, K/128]
    (row-major), w_scale [N/128, K/128]."""
    refuse("gemm_a8w8_blockscale", "isBpreshuffled", isBpreshuffled, False)
    return _ops.gemm_a8w8_blockscale(XQ, WQ, x_scale, w_scale, dtype)


def gemm_a16w16(A: Tensor, B: Tensor, bias: Optional[Tensor] = None, otype: Optional[torch.dtype] = None,
                scale_a: Optional[Tensor] = None, scale_b: Optional[Tensor] = None,
                scale_c: Optional[Tensor] = None) -> Tensor:
    """AITER ``gemm_a16w16(A, B, bias=None, otype=None, scale_a=None, scale_b=None,
    scale_c=None) -> Tensor`` (tuned_gemm): A [..., K], B [N, K]; returns [..., N]."""
    for name, value in (("scale_a", scale_a), ("scale_b", scale_b), ("scale_c", scale_c)):
        refuse_tensor("gemm_a16w16", name, value)
    rows = A.reshape(-1, A.shape[-1])
    out = _ops.gemm_a16w16(rows, B, bias, otype)
    return out.view(tuple(A.shape[:-1]) + (B.shape[0],))
