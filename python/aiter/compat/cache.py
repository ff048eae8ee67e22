"""AITER's KV-cache write (aiter/ops/cache.py), for the cache layout libaiter
reads: [num_blocks, block_size, num_kv_heads, head_size] ("NHD", the layout of
``reshape_and_cache_flash``)."""
from typing import Optional

import torch
from torch import Tensor

from ..errors import InvalidArgumentError
from ._common import refuse

_ops = torch.ops.aiter
_KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")


def _scale(value):
    # AITER passes the fp8 scales as one-element tensors; the library takes them as numbers.
    return 1.0 if value is None else float(value)


def _write(function, key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale):
    if kv_cache_dtype not in _KV_CACHE_DTYPES:
        raise InvalidArgumentError(f"aiter.compat.{function}: kv_cache_dtype: expected one of {_KV_CACHE_DTYPES}, "
                                   f"got {kv_cache_dtype!r}")
    if key_cache.dim() != 4:
        raise InvalidArgumentError(
            f"aiter.compat.{function}: key_cache: expected the [num_blocks, block_size, num_kv_heads, head_size] "
            f"layout, got {key_cache.dim()} dims (AITER's 5-dim [num_blocks, H, D/x, block_size, x] layout is "
            "not supported)")
    _ops.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, _scale(k_scale), _scale(v_scale))


def reshape_and_cache(key: Tensor, value: Tensor, key_cache: Tensor, value_cache: Tensor, slot_mapping: Tensor,
                      kv_cache_dtype: str, k_scale: Optional[Tensor] = None, v_scale: Optional[Tensor] = None,
                      asm_layout: bool = False) -> None:
    """AITER ``reshape_and_cache(key, value, key_cache, value_cache, slot_mapping,
    kv_cache_dtype, k_scale=None, v_scale=None, asm_layout=False) -> None``, with
    the caches in the NHD layout (see the module)."""
    torch.ops.aiter_compat.reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
                                             k_scale, v_scale, asm_layout)


def reshape_and_cache_flash(key: Tensor, value: Tensor, key_cache: Tensor, value_cache: Tensor,
                            slot_mapping: Tensor, kv_cache_dtype: str, k_scale: Optional[Tensor] = None,
                            v_scale: Optional[Tensor] = None) -> None:
    """AITER ``reshape_and_cache_flash(key, value, key_cache, value_cache,
    slot_mapping, kv_cache_dtype, k_scale, v_scale) -> None``."""
    torch.ops.aiter_compat.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
                                                   k_scale, v_scale)


# The registered kernels (see _register.OPAQUE): they read the scales as numbers.
def reshape_and_cache_kernel(key: Tensor, value: Tensor, key_cache: Tensor, value_cache: Tensor,
                             slot_mapping: Tensor, kv_cache_dtype: str, k_scale: Optional[Tensor] = None,
                             v_scale: Optional[Tensor] = None, asm_layout: bool = False) -> None:
    refuse("reshape_and_cache", "asm_layout", asm_layout, False)
    _write("reshape_and_cache", key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale)


def reshape_and_cache_flash_kernel(key: Tensor, value: Tensor, key_cache: Tensor, value_cache: Tensor,
                                   slot_mapping: Tensor, kv_cache_dtype: str, k_scale: Optional[Tensor] = None,
                                   v_scale: Optional[Tensor] = None) -> None:
    _write("reshape_and_cache_flash", key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale,
           v_scale)
