"""RMSNorm, fused residual-add + RMSNorm, LayerNorm over the last dimension."""
from .._call import Call, c_or_null
from .._route import via_torch
from .quant import quantized_output, row_scales


@via_torch("rmsnorm")
def rmsnorm(x, weight, eps=1e-6, *, out=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last dim of ``x``."""
    c = Call("aiter_rmsnorm", like=x)
    x_, w_ = c.input(x, "x"), c.input(weight, "weight")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    c.run(out_.c, x_.c, w_.c, float(eps))
    return c.result(out_)


@via_torch("add_rmsnorm")
def add_rmsnorm(x, residual, weight, eps=1e-6, *, out=None, residual_out=None):
    """``residual_out = x + residual``; returns ``(rmsnorm(residual_out) * weight, residual_out)``.

    Pass ``residual_out=residual`` to update the residual in place."""
    c = Call("aiter_add_rmsnorm", like=x)
    x_, r_, w_ = c.input(x, "x"), c.input(residual, "residual"), c.input(weight, "weight")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    r_out = c.output(residual_out, "residual_out", x_.shape, x_.dtype)
    c.run(out_.c, r_out.c, x_.c, r_.c, w_.c, float(eps))
    return c.result(out_), c.result(r_out)


@via_torch("layernorm")
def layernorm(x, weight, bias=None, eps=1e-5, *, out=None):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim of ``x``."""
    c = Call("aiter_layernorm", like=x)
    x_, w_, b_ = c.input(x, "x"), c.input(weight, "weight"), c.optional(bias, "bias")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    c.run(out_.c, x_.c, w_.c, c_or_null(b_), float(eps))
    return c.result(out_)


@via_torch("rmsnorm_quant")
def rmsnorm_quant(x, weight, eps=1e-6, dtype="float8_e4m3fn", *, out=None, scale=None):
    """RMSNorm fused with per-row dynamic quantization, one pass over ``x``:
    returns ``(out, scale)`` with ``out ~= rmsnorm(x, weight) / scale`` in ``dtype``
    (int8 or an fp8 type) and ``scale`` float32 of shape ``x.shape[:-1] + (1,)``."""
    c = Call("aiter_rmsnorm_quant", like=x)
    x_, w_ = c.input(x, "x"), c.input(weight, "weight")
    out_, scale_ = quantized_output(c, x_, dtype, out), row_scales(c, x_, scale)
    c.run(out_.c, scale_.c, x_.c, w_.c, float(eps))
    return c.result(out_), c.result(scale_)


@via_torch("add_rmsnorm_quant")
def add_rmsnorm_quant(x, residual, weight, eps=1e-6, dtype="float8_e4m3fn", *, out=None, scale=None,
                      residual_out=None):
    """``residual_out = x + residual``, then :func:`rmsnorm_quant` of it; returns
    ``(out, scale, residual_out)``."""
    c = Call("aiter_add_rmsnorm_quant", like=x)
    x_, r_, w_ = c.input(x, "x"), c.input(residual, "residual"), c.input(weight, "weight")
    out_, scale_ = quantized_output(c, x_, dtype, out), row_scales(c, x_, scale)
    r_out = c.output(residual_out, "residual_out", x_.shape, x_.dtype)
    c.run(out_.c, scale_.c, r_out.c, x_.c, r_.c, w_.c, float(eps))
    return c.result(out_), c.result(scale_), c.result(r_out)
