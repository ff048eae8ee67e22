"""AITER's gated activations (aiter/ops/activation.py): ``out`` first, written in place."""
import torch
from torch import Tensor

_ops = torch.ops.aiter


def silu_and_mul(out: Tensor, input: Tensor) -> None:
    """AITER ``silu_and_mul(out, input) -> None``: ``out = silu(input[..., :d]) * input[..., d:]``."""
    _ops.silu_and_mul.out(input, out=out)


def gelu_and_mul(out: Tensor, input: Tensor) -> None:
    """AITER ``gelu_and_mul(out, input) -> None``, exact (erf) GELU."""
    _ops.gelu_and_mul.out(input, "none", out=out)


def gelu_tanh_and_mul(out: Tensor, input: Tensor) -> None:
    """AITER ``gelu_tanh_and_mul(out, input) -> None``, tanh-approximated GELU."""
    _ops.gelu_and_mul.out(input, "tanh", out=out)
