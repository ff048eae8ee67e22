"""Matrix products with the weight stored as W[N, K] (the layout of nn.Linear):
``out[M, N] = a[M, K] @ w[N, K].T (+ bias[N])``; the batched forms take a
leading batch dim B on ``a``, ``w`` and ``out``.

``a``, ``w`` and ``out`` have unit stride along their rows; row (and batch)
strides may be larger than the rows (slices of bigger arrays).  When ``out`` is
given, its dtype is the output dtype and ``out_dtype`` is not used.  Each op
has several kernel variants; the library picks one per shape (tuned tables,
else a heuristic).
"""
from .._call import Call, c_or_null
from .._route import via_torch
from ..dtypes import canonical


def _out_shape(a_, w_):
    # Malformed inputs get an empty placeholder output; the library then names the problem.
    m = a_.shape[0] if len(a_.shape) == 2 else 0
    n = w_.shape[0] if len(w_.shape) == 2 else 0
    return (m, n)


def _batched_out_shape(a_, w_):
    if len(a_.shape) != 3 or len(w_.shape) != 3:
        return (0, 0, 0)
    return (a_.shape[0], a_.shape[1], w_.shape[1])


def _a16w16(symbol, out_shape, a, w, bias, out_dtype, out):
    """The 16-bit products, plain or batched (`out_shape` says which)."""
    c = Call(symbol, like=a)
    a_, w_, b_ = c.input(a, "a"), c.input(w, "w"), c.optional(bias, "bias")
    dtype = a_.dtype if out_dtype is None else canonical(out_dtype)
    out_ = c.output(out, "out", out_shape(a_, w_), dtype)
    c.run(out_.c, a_.c, w_.c, c_or_null(b_))
    return c.result(out_)


def _a8w8(symbol, out_shape, a, w, a_scale, w_scale, bias, out_dtype, out):
    """The 8-bit products with per-token / per-channel scales, plain or batched."""
    c = Call(symbol, like=a)
    a_, w_ = c.input(a, "a"), c.input(w, "w")
    as_, ws_ = c.input(a_scale, "a_scale"), c.input(w_scale, "w_scale")
    b_ = c.optional(bias, "bias")
    out_ = c.output(out, "out", out_shape(a_, w_), canonical(out_dtype))
    c.run(out_.c, a_.c, w_.c, as_.c, ws_.c, c_or_null(b_))
    return c.result(out_)


@via_torch("gemm_a16w16")
def gemm_a16w16(a, w, bias=None, *, out_dtype=None, out=None):
    """``a @ w.T + bias`` with fp32 accumulation, rounded once to ``out_dtype``.

    ``a`` and ``w``: float32, float16 or bfloat16 (the same); ``out_dtype``: float32,
    float16 or bfloat16, ``a``'s dtype by default; ``bias``: None or [N] in float32
    or ``out_dtype``."""
    return _a16w16("aiter_gemm_a16w16", _out_shape, a, w, bias, out_dtype, out)


@via_torch("gemm_a8w8")
def gemm_a8w8(a, w, a_scale, w_scale, bias=None, *, out_dtype="bfloat16", out=None):
    """``(a @ w.T) * a_scale * w_scale + bias`` for 8-bit ``a`` and ``w``.

    ``a`` and ``w``: both int8 (exact integer accumulation) or both the same fp8
    format (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2; fp32 accumulation).
    ``a_scale``: float32 [M, 1] (per token) or [1] / [1, 1] (per tensor);
    ``w_scale``: float32 [1, N] (per channel) or [1] / [1, 1].  The scaling and the
    bias (None or [N] in float32 or ``out_dtype``) are applied in fp32, then the
    result is rounded once to ``out_dtype`` (bfloat16, float16 or float32)."""
    return _a8w8("aiter_gemm_a8w8", _out_shape, a, w, a_scale, w_scale, bias, out_dtype, out)


@via_torch("gemm_a8w8_blockscale")
def gemm_a8w8_blockscale(a, w, a_scale, w_scale, *, out_dtype="bfloat16", out=None):
    """DeepSeek-V3 style block-scaled fp8 product.

    ``a`` [M, K] and ``w`` [N, K]: both float8_e4m3fn or both float8_e4m3fnuz.
    ``a_scale``: float32 [M, ceil(K / 128)], one per token and 128-wide K group;
    ``w_scale``: float32 [ceil(N / 128), ceil(K / 128)], one per 128 x 128 block
    of ``w``.  ``out[m, n]`` is the sum over K groups g of the group's dot product
    times ``a_scale[m, g] * w_scale[n // 128, g]``, computed in fp32 and rounded
    once to ``out_dtype`` (bfloat16, float16 or float32)."""
    c = Call("aiter_gemm_a8w8_blockscale", like=a)
    a_, w_ = c.input(a, "a"), c.input(w, "w")
    as_, ws_ = c.input(a_scale, "a_scale"), c.input(w_scale, "w_scale")
    out_ = c.output(out, "out", _out_shape(a_, w_), canonical(out_dtype))
    c.run(out_.c, a_.c, w_.c, as_.c, ws_.c)
    return c.result(out_)


@via_torch("batched_gemm_a16w16")
def batched_gemm_a16w16(a, w, bias=None, *, out_dtype=None, out=None):
    """``out[b] = a[b] @ w[b].T + bias`` for ``a`` [B, M, K], ``w`` [B, N, K]:
    the dtypes of ``gemm_a16w16``; ``bias`` None or [N], shared by every b."""
    return _a16w16("aiter_batched_gemm_a16w16", _batched_out_shape, a, w, bias, out_dtype, out)


@via_torch("batched_gemm_a8w8")
def batched_gemm_a8w8(a, w, a_scale, w_scale, bias=None, *, out_dtype="bfloat16", out=None):
    """``gemm_a8w8`` on every b of ``a`` [B, M, K] and ``w`` [B, N, K] (int8 or
    the same fp8 format).  ``a_scale``: float32 [B, M, 1] (per token) or [1] /
    [1, 1] (per tensor); ``w_scale``: float32 [B, 1, N] (per channel) or [1] /
    [1, 1]; ``bias``: None or [N], shared by every b."""
    return _a8w8("aiter_batched_gemm_a8w8", _batched_out_shape, a, w, a_scale, w_scale, bias, out_dtype, out)
