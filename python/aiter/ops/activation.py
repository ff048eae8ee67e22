"""Gated activations of feed-forward layers: ``act(x[..., :d]) * x[..., d:]``,
and ``silu_and_mul`` fused with dynamic per-row quantization."""
from .._call import Call
from .._route import via_torch
from ..errors import InvalidArgumentError
from .quant import _quant_dtype

_GELU_APPROX = {"none": 0, "tanh": 1}  # aiter_gelu_approx


def _half_shape(x_):
    # An odd or missing last dim is left for the library to report.
    return x_.shape[:-1] + (x_.shape[-1] // 2,) if x_.shape else ()


def _gated(symbol, x, out, *extra):
    c = Call(symbol, like=x)
    x_ = c.input(x, "x")
    out_ = c.output(out, "out", _half_shape(x_), x_.dtype)
    c.run(out_.c, x_.c, *extra)
    return c.result(out_)


@via_torch("silu_and_mul")
def silu_and_mul(x, *, out=None):
    """``silu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2*d]``, with
    ``silu(g) = g / (1 + exp(-g))``; returns ``[..., d]`` in ``x``'s dtype
    (float32, float16 or bfloat16)."""
    return _gated("aiter_silu_and_mul", x, out)


@via_torch("gelu_and_mul")
def gelu_and_mul(x, approximate="none", *, out=None):
    """``gelu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2*d]``.

    ``approximate="none"`` is the exact ``0.5 g (1 + erf(g / sqrt 2))``;
    ``"tanh"`` is ``0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))``."""
    if approximate not in _GELU_APPROX:
        raise InvalidArgumentError(f'approximate: expected "none" or "tanh", got {approximate!r}')
    return _gated("aiter_gelu_and_mul", x, out, _GELU_APPROX[approximate])


@via_torch("silu_and_mul_quant")
def silu_and_mul_quant(x, dtype="float8_e4m3fn", *, out=None, scale=None):
    """``silu(x[..., :d]) * x[..., d:]`` computed in float32 and quantized per row
    with a dynamic scale; returns ``(out, scale)``.

    ``out`` is ``[..., d]`` of ``dtype`` (int8, float8_e4m3fn, float8_e4m3fnuz or
    float8_e5m2); ``scale`` is float32 of shape ``x.shape[:-1] + (1,)``, ``amax / qmax``
    of the row's products (1 where they are all 0), so that ``y ~= out * scale``.
    The products are not rounded to ``x``'s dtype before they are quantized."""
    name = _quant_dtype(dtype)
    c = Call("aiter_silu_and_mul_quant", like=x)
    x_ = c.input(x, "x")
    out_ = c.output(out, "out", _half_shape(x_), name)
    if out_.dtype != name:
        raise InvalidArgumentError(f"out: expected dtype {name} (the dtype argument), got {out_.dtype}")
    scale_ = c.output(scale, "scale", x_.shape[:-1] + (1,) if x_.shape else (1,), "float32")
    c.run(out_.c, scale_.c, x_.c)
    return c.result(out_), c.result(scale_)
