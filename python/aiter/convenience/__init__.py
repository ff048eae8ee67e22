"""The convenience API of AITER's user guides, over libaiter's ops:
``aiter.matmul``, ``aiter.linear``, ``aiter.attention`` (SDPA's [B, H, S, D]
layout), ``aiter.quantize`` (a torch model's nn.Linear layers to int8 / fp8
a8w8 layers) and ``aiter.set_log_level``.  Importing it imports no array
library."""
from .attention import attention
from .._log_level import set_log_level
from .matmul import linear, matmul
from .quantize import quantize

__all__ = ["matmul", "linear", "attention", "quantize", "set_log_level"]
