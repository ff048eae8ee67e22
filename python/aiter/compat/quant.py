"""AITER's quantization entry points (aiter/ops/quant.py): the output's dtype
(int8 or fp8) is the target format, scales are float32 with ``x ~= out * scale``."""
from typing import Optional

import torch
from torch import Tensor

from ._common import refuse, refuse_tensor, row_scale_view

_ops = torch.ops.aiter


def static_per_tensor_quant(out: Tensor, input: Tensor, scale: Tensor) -> None:
    """AITER ``static_per_tensor_quant(out, input, scale) -> None``; ``scale`` float32 [1]."""
    _ops.quant_per_tensor_static.out(input, scale, out.dtype, out=out)


def dynamic_per_tensor_quant(out: Tensor, input: Tensor, scale: Tensor) -> None:
    """AITER ``dynamic_per_tensor_quant(out, input, scale) -> None``; writes ``scale`` float32 [1]."""
    _ops.quant_per_tensor.out(input, out.dtype, out=out, scale=scale)


def dynamic_per_token_scaled_quant(out: Tensor, input: Tensor, scales: Tensor, scale_ub: Optional[Tensor] = None,
                                   shuffle_scale: bool = False, num_rows: Optional[Tensor] = None,
                                   num_rows_factor: int = 1) -> None:
    """AITER ``dynamic_per_token_scaled_quant(out, input, scales, scale_ub=None,
    shuffle_scale=False, num_rows=None, num_rows_factor=1) -> None``; ``scales``
    float32 [M] or [M, 1]."""
    refuse_tensor("dynamic_per_token_scaled_quant", "scale_ub", scale_ub)
    refuse("dynamic_per_token_scaled_quant", "shuffle_scale", shuffle_scale, False)
    refuse_tensor("dynamic_per_token_scaled_quant", "num_rows", num_rows)
    refuse("dynamic_per_token_scaled_quant", "num_rows_factor", num_rows_factor, 1)
    _ops.quant_per_token.out(input, out.dtype, out=out, scale=row_scale_view(scales, input))
