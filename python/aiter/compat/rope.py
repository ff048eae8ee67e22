"""AITER's rotary embedding entry point (aiter/ops/pos_encoding.py), in place."""
import torch
from torch import Tensor

from ._common import refuse

_ops = torch.ops.aiter


def rotary_embedding_fwd(positions: Tensor, query: Tensor, key: Tensor, head_size: int, cos_cache: Tensor,
                         sin_cache: Tensor, is_neox: bool, is_nope_first: bool) -> None:
    """AITER ``rotary_embedding_fwd(positions, query, key, head_size, cos_cache,
    sin_cache, is_neox, is_nope_first) -> None``.

    ``query`` / ``key``: [T, H * head_size] or [T, H, head_size], rotated in
    place; ``positions`` [T] (or any shape of T elements); ``cos_cache`` and
    ``sin_cache`` [max_position, R/2] (unit dims allowed): the first R elements of
    each head are rotated.  The library reads one [max_position, R] cos|sin table,
    so the two halves are concatenated on each call."""
    refuse("rotary_embedding_fwd", "is_nope_first", is_nope_first, False)
    tokens = positions.numel()
    q = query.view(tokens, -1, head_size)
    k = key.view(tokens, -1, head_size)
    rows = cos_cache.shape[0]
    cos_sin = torch.cat([cos_cache.reshape(rows, -1), sin_cache.reshape(rows, -1)], dim=-1)
    _ops.rope(q, k, positions.reshape(-1), cos_sin, "neox" if is_neox else "gptj")
