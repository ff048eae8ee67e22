"""AITER's RMSNorm / LayerNorm entry points (aiter/ops/rmsnorm.py, norm.py)."""
from typing import Optional

import torch
from torch import Tensor

from ._common import refuse, refuse_tensor, row_scale_view

_ops = torch.ops.aiter


def rms_norm(input: Tensor, weight: Tensor, epsilon: float, use_model_sensitive_rmsnorm: int = 0) -> Tensor:
    """AITER ``rms_norm(input, weight, epsilon, use_model_sensitive_rmsnorm=0) -> Tensor``."""
    refuse("rms_norm", "use_model_sensitive_rmsnorm", use_model_sensitive_rmsnorm, 0)
    return _ops.rmsnorm(input, weight, epsilon)


def rmsnorm2d_fwd(input: Tensor, weight: Tensor, epsilon: float, use_model_sensitive_rmsnorm: int = 0) -> Tensor:
    """AITER ``rmsnorm2d_fwd(input, weight, epsilon, use_model_sensitive_rmsnorm=0) -> Tensor``."""
    refuse("rmsnorm2d_fwd", "use_model_sensitive_rmsnorm", use_model_sensitive_rmsnorm, 0)
    return _ops.rmsnorm(input, weight, epsilon)


def rmsnorm2d_fwd_with_add(out: Tensor, input: Tensor, residual_in: Tensor, residual_out: Tensor, weight: Tensor,
                           epsilon: float, gemma_norm: bool = False, use_model_sensitive_rmsnorm: int = 0) -> None:
    """AITER ``rmsnorm2d_fwd_with_add(out, input, residual_in, residual_out, weight,
    epsilon, gemma_norm=False, use_model_sensitive_rmsnorm=0) -> None``:
    ``residual_out = input + residual_in``, ``out = rmsnorm(residual_out) * weight``."""
    refuse("rmsnorm2d_fwd_with_add", "gemma_norm", gemma_norm, False)
    refuse("rmsnorm2d_fwd_with_add", "use_model_sensitive_rmsnorm", use_model_sensitive_rmsnorm, 0)
    _ops.add_rmsnorm.out(input, residual_in, weight, epsilon, out=out, residual_out=residual_out)


def _quant_options(function, use_model_sensitive_rmsnorm, group_size, shuffle_scale):
    refuse(function, "use_model_sensitive_rmsnorm", use_model_sensitive_rmsnorm, 0)
    refuse(function, "group_size", group_size, 0)
    refuse(function, "shuffle_scale", shuffle_scale, False)


def rmsnorm2d_fwd_with_dynamicquant(out: Tensor, input: Tensor, yscale: Tensor, weight: Tensor, epsilon: float,
                                    use_model_sensitive_rmsnorm: int = 0, group_size: int = 0,
                                    shuffle_scale: bool = False) -> None:
    """AITER ``rmsnorm2d_fwd_with_dynamicquant(out, input, yscale, weight, epsilon,
    use_model_sensitive_rmsnorm=0, group_size=0, shuffle_scale=False) -> None``:
    per-row dynamic quantization to ``out``'s dtype (int8 or fp8), ``yscale`` [M] or [M, 1]."""
    _quant_options("rmsnorm2d_fwd_with_dynamicquant", use_model_sensitive_rmsnorm, group_size, shuffle_scale)
    _ops.rmsnorm_quant.out(input, weight, epsilon, out.dtype, out=out, scale=row_scale_view(yscale, input))


def rmsnorm2d_fwd_with_add_dynamicquant(out: Tensor, input: Tensor, residual_in: Tensor, residual_out: Tensor,
                                        yscale: Tensor, weight: Tensor, epsilon: float,
                                        use_model_sensitive_rmsnorm: int = 0, group_size: int = 0,
                                        shuffle_scale: bool = False) -> None:
    """AITER ``rmsnorm2d_fwd_with_add_dynamicquant(out, input, residual_in,
    residual_out, yscale, weight, epsilon, use_model_sensitive_rmsnorm=0,
    group_size=0, shuffle_scale=False) -> None``."""
    _quant_options("rmsnorm2d_fwd_with_add_dynamicquant", use_model_sensitive_rmsnorm, group_size, shuffle_scale)
    _ops.add_rmsnorm_quant.out(input, residual_in, weight, epsilon, out.dtype, out=out,
                               scale=row_scale_view(yscale, input), residual_out=residual_out)


def layernorm2d_fwd(input: Tensor, weight: Tensor, bias: Tensor, epsilon: float = 1e-5,
                    x_bias: Optional[Tensor] = None) -> Tensor:
    """AITER ``layernorm2d_fwd(input, weight, bias, epsilon=1e-5, x_bias=None) -> Tensor``."""
    refuse_tensor("layernorm2d_fwd", "x_bias", x_bias)
    return _ops.layernorm(input, weight, bias, epsilon)
