"""Quantization of float arrays to int8 or fp8, with float32 scales such that
``x ~= out * scale``.

Dynamic scales are ``amax / qmax`` (qmax: 127 for int8, 448 for float8_e4m3fn,
240 for float8_e4m3fnuz, 57344 for float8_e5m2; 1 where amax is 0).  Values are
``x * (1 / scale)`` rounded to nearest, ties to even, saturated at +-qmax.
The wrappers come from the op table (``aiter.spec``); only their docs are here.
"""
from ..errors import InvalidArgumentError
from ..spec.table import QUANT_TYPES, quant_dtype as _quant_dtype  # noqa: F401  (QUANT_TYPES: public)
from ._from_spec import table_op


def quantized_output(c, x_, dtype, out):
    """The quantized output of a Call (for hand-written calls, e.g. aiter.dist),
    allocated or the caller's, which must be of ``dtype``."""
    name = _quant_dtype(dtype)
    out_ = c.output(out, "out", x_.shape, name)
    if out_.dtype != name:
        raise InvalidArgumentError(f"out: expected dtype {name} (the dtype argument), got {out_.dtype}")
    return out_


def row_scales(c, x_, scale):
    """The per-row scales of a Call: float32 of ``x.shape[:-1] + (1,)``."""
    return c.output(scale, "scale", x_.shape[:-1] + (1,), "float32")


quant_per_tensor = table_op("quant_per_tensor", """
    Quantize ``x`` with one dynamic scale; returns ``(out, scale)``, scale of
    shape ``(1,)`` float32 (a caller's ``scale`` may also be ``(1, 1)``).""")

quant_per_token = table_op("quant_per_token", """
    Quantize each row of ``x`` (over its last dim) with its own dynamic scale;
    returns ``(out, scale)``, scale of shape ``x.shape[:-1] + (1,)`` float32.""")

quant_per_tensor_static = table_op("quant_per_tensor_static", """
    Quantize ``x`` with a given scale, a float32 array of shape ``(1,)`` or
    ``(1, 1)`` holding a finite value >= FLT_MIN; returns ``out``.""")
