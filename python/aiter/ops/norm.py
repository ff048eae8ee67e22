"""RMSNorm, fused residual-add + RMSNorm, LayerNorm over the last dimension.
The wrappers come from the op table (``aiter.spec``); only their docs are here."""
from ._from_spec import table_op

rmsnorm = table_op("rmsnorm", """``x / sqrt(mean(x**2) + eps) * weight`` over the last dim of ``x``.""")

add_rmsnorm = table_op("add_rmsnorm", """
    ``residual_out = x + residual``; returns ``(rmsnorm(residual_out) * weight, residual_out)``.

    Pass ``residual_out=residual`` to update the residual in place.""")

layernorm = table_op("layernorm", """
    ``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim of ``x``.""")

rmsnorm_quant = table_op("rmsnorm_quant", """
    RMSNorm fused with per-row dynamic quantization, one pass over ``x``:
    returns ``(out, scale)`` with ``out ~= rmsnorm(x, weight) / scale`` in ``dtype``
    (int8 or an fp8 type) and ``scale`` float32 of shape ``x.shape[:-1] + (1,)``.""")

add_rmsnorm_quant = table_op("add_rmsnorm_quant", """
    ``residual_out = x + residual``, then :func:`rmsnorm_quant` of it; returns
    ``(out, scale, residual_out)``.""")
