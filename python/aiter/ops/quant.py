"""Quantization of float arrays to int8 or fp8, with float32 scales such that
``x ~= out * scale``.

Dynamic scales are ``amax / qmax`` (qmax: 127 for int8, 448 for float8_e4m3fn,
240 for float8_e4m3fnuz, 57344 for float8_e5m2; 1 where amax is 0).  Values are
``x * (1 / scale)`` rounded to nearest, ties to even, saturated at +-qmax.
"""
from .. import dtypes
from .._call import Call
from .._route import via_torch
from ..errors import InvalidArgumentError, UnsupportedDtypeError

QUANT_TYPES = ("int8",) + dtypes.FP8_TYPES


def _quant_dtype(dtype):
    name = dtypes.canonical(dtype)
    if name not in QUANT_TYPES:
        raise UnsupportedDtypeError(f"dtype: expected one of {', '.join(QUANT_TYPES)}, got {name}")
    return name


def quantized_output(c, x_, dtype, out):
    """The quantized output of a Call, allocated or the caller's, which must be of ``dtype``."""
    name = _quant_dtype(dtype)
    out_ = c.output(out, "out", x_.shape, name)
    if out_.dtype != name:
        raise InvalidArgumentError(f"out: expected dtype {name} (the dtype argument), got {out_.dtype}")
    return out_


def row_scales(c, x_, scale):
    """The per-row scales of a Call: float32 of ``x.shape[:-1] + (1,)``."""
    return c.output(scale, "scale", x_.shape[:-1] + (1,), "float32")


@via_torch("quant_per_tensor")
def quant_per_tensor(x, dtype="float8_e4m3fn", *, out=None, scale=None):
    """Quantize ``x`` with one dynamic scale; returns ``(out, scale)``, scale of
    shape ``(1,)`` float32 (a caller's ``scale`` may also be ``(1, 1)``)."""
    c = Call("aiter_quant_per_tensor_dynamic", like=x)
    x_ = c.input(x, "x")
    out_ = quantized_output(c, x_, dtype, out)
    scale_ = c.output(scale, "scale", (1,), "float32")
    c.run(out_.c, scale_.c, x_.c)
    return c.result(out_), c.result(scale_)


@via_torch("quant_per_token")
def quant_per_token(x, dtype="float8_e4m3fn", *, out=None, scale=None):
    """Quantize each row of ``x`` (over its last dim) with its own dynamic scale;
    returns ``(out, scale)``, scale of shape ``x.shape[:-1] + (1,)`` float32."""
    c = Call("aiter_quant_per_token_dynamic", like=x)
    x_ = c.input(x, "x")
    out_ = quantized_output(c, x_, dtype, out)
    scale_ = row_scales(c, x_, scale)
    c.run(out_.c, scale_.c, x_.c)
    return c.result(out_), c.result(scale_)


@via_torch("quant_per_tensor_static")
def quant_per_tensor_static(x, scale, dtype="float8_e4m3fn", *, out=None):
    """Quantize ``x`` with a given scale, a float32 array of shape ``(1,)`` or
    ``(1, 1)`` holding a finite value >= FLT_MIN; returns ``out``."""
    c = Call("aiter_quant_per_tensor_static", like=x)
    x_, scale_ = c.input(x, "x"), c.input(scale, "scale")
    out_ = quantized_output(c, x_, dtype, out)
    c.run(out_.c, x_.c, scale_.c)
    return c.result(out_)
