"""Gated activations of feed-forward layers: ``act(x[..., :d]) * x[..., d:]``,
and ``silu_and_mul`` fused with dynamic per-row quantization.  The wrappers
come from the op table (``aiter.spec``); only their docs are here."""
from ._from_spec import table_op

silu_and_mul = table_op("silu_and_mul", """
    ``silu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2*d]``, with
    ``silu(g) = g / (1 + exp(-g))``; returns ``[..., d]`` in ``x``'s dtype
    (float32, float16 or bfloat16).""")

gelu_and_mul = table_op("gelu_and_mul", """
    ``gelu(x[..., :d]) * x[..., d:]`` for ``x`` of shape ``[..., 2*d]``.

    ``approximate="none"`` is the exact ``0.5 g (1 + erf(g / sqrt 2))``;
    ``"tanh"`` is ``0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))``.""")

silu_and_mul_quant = table_op("silu_and_mul_quant", """
    ``silu(x[..., :d]) * x[..., d:]`` computed in float32 and quantized per row
    with a dynamic scale; returns ``(out, scale)``.

    ``out`` is ``[..., d]`` of ``dtype`` (int8, float8_e4m3fn, float8_e4m3fnuz or
    float8_e5m2); ``scale`` is float32 of shape ``x.shape[:-1] + (1,)``, ``amax / qmax``
    of the row's products (1 where they are all 0), so that ``y ~= out * scale``.
    The products are not rounded to ``x``'s dtype before they are quantized.""")
