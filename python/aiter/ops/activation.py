"""Gated activations of feed-forward layers: ``act(x[..., :d]) * x[..., d:]``."""
from .._call import Call
from ..errors import InvalidArgumentError

_GELU_APPROX = {"none": 0, "tanh": 1}  # aiter_gelu_approx


def _gated(symbol, x, out, *extra):
    c = Call(symbol, like=x)
    x_ = c.input(x, "x")
    # An odd or missing last dim is left for the library to report.
    shape = x_.shape[:-1] + (x_.shape[-1] // 2,) if x_.shape else ()
    out_ = c.output(out, "out", shape, x_.dtype)
    c.run(out_.c, x_.c, *extra)
    return c.result(out_)


def silu_and_mul(x, *, out=None):
    """``silu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2*d]``, with
    ``silu(g) = g / (1 + exp(-g))``; returns ``[..., d]`` in ``x``'s dtype
    (float32, float16 or bfloat16)."""
    return _gated("aiter_silu_and_mul", x, out)


def gelu_and_mul(x, approximate="none", *, out=None):
    """``gelu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2*d]``.

    ``approximate="none"`` is the exact ``0.5 g (1 + erf(g / sqrt 2))``;
    ``"tanh"`` is ``0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))``."""
    if approximate not in _GELU_APPROX:
        raise InvalidArgumentError(f'approximate: expected "none" or "tanh", got {approximate!r}')
    return _gated("aiter_gelu_and_mul", x, out, _GELU_APPROX[approximate])
