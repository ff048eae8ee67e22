"""RMSNorm, fused residual-add + RMSNorm, LayerNorm over the last dimension."""
from .._call import Call, c_or_null


def rmsnorm(x, weight, eps=1e-6, *, out=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last dim of ``x``."""
    c = Call("aiter_rmsnorm", like=x)
    x_, w_ = c.input(x, "x"), c.input(weight, "weight")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    c.run(out_.c, x_.c, w_.c, float(eps))
    return c.result(out_)


def add_rmsnorm(x, residual, weight, eps=1e-6, *, out=None, residual_out=None):
    """``residual_out = x + residual``; returns ``(rmsnorm(residual_out) * weight, residual_out)``.

    Pass ``residual_out=residual`` to update the residual in place."""
    c = Call("aiter_add_rmsnorm", like=x)
    x_, r_, w_ = c.input(x, "x"), c.input(residual, "residual"), c.input(weight, "weight")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    r_out = c.output(residual_out, "residual_out", x_.shape, x_.dtype)
    c.run(out_.c, r_out.c, x_.c, r_.c, w_.c, float(eps))
    return c.result(out_), c.result(r_out)


def layernorm(x, weight, bias=None, eps=1e-5, *, out=None):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim of ``x``."""
    c = Call("aiter_layernorm", like=x)
    x_, w_, b_ = c.input(x, "x"), c.input(weight, "weight"), c.optional(bias, "bias")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    c.run(out_.c, x_.c, w_.c, c_or_null(b_), float(eps))
    return c.result(out_)
