"""The ops of aiter.jax: the eager ops' names and arguments (less ``out=``),
each one ``jax.ffi.ffi_call`` of a target in libaiter_xla.so.

Shapes and dtypes are known when JAX traces a call, so the outputs are
declared then, and what an output's shape or dtype depends on is checked then
(raising aiter's exceptions, naming the argument).  The library checks the
rest when the computation runs; a failure there raises JAX's runtime error
(``jax.errors.JaxRuntimeError``, a RuntimeError) with libaiter's message,
e.g. ``INVALID_ARGUMENT: aiter_rmsnorm: weight: expected shape[0] == 4096 ...``.
"""
import jax
import jax.numpy as jnp
import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError, UnsupportedDtypeError
from ..ops.activation import _GELU_APPROX
from ..ops.quant import _quant_dtype
from ..ops.rope import _STYLES
from . import _targets


def _array(value, what):
    """``value`` as a JAX array (or tracer) of a dtype libaiter knows."""
    if value is None:
        raise InvalidArgumentError(f"{what}: expected an array, got None")
    arr = value if isinstance(value, jax.Array) else jnp.asarray(value)
    if arr.dtype.name not in dtypes.DLPACK:
        raise UnsupportedDtypeError(f"{what}: unsupported dtype {arr.dtype}")
    return arr


def _result(shape, dtype):
    return jax.ShapeDtypeStruct(tuple(shape), jnp.dtype(dtype))


def _call(target, results, operands, aliases=None, optional=(), **attrs):
    """Runs ``target`` on ``operands`` ([(name, array)], in the target's order)
    under XLA.  An operand named in ``optional`` may be None: it is left out,
    and libaiter_xla passes NULL in its place."""
    _targets.register()
    arrays = [_array(value, name) for name, value in operands if value is not None or name not in optional]
    # Batching runs one call per element: the ops take fixed ranks.
    call = jax.ffi.ffi_call(target, results, input_output_aliases=aliases, vmap_method="sequential")
    return call(*arrays, **attrs)


def _eps(eps):
    return np.float32(eps)


def _row_scales(x):
    # A 0-d x gets a placeholder; the library then names the problem.
    return _result(x.shape[:-1] + (1,) if x.ndim else (1,), "float32")


def rmsnorm(x, weight, eps=1e-6):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last dim of ``x``
    (float32, float16 or bfloat16); ``weight`` [H] in ``x``'s dtype or float32."""
    x = _array(x, "x")
    return _call("aiter_rmsnorm", _result(x.shape, x.dtype), [("x", x), ("weight", weight)], eps=_eps(eps))


def add_rmsnorm(x, residual, weight, eps=1e-6):
    """``residual_out = x + residual``; returns ``(rmsnorm(residual_out) * weight,
    residual_out)``.  ``residual_out`` reuses ``residual``'s buffer (an
    input/output alias): when ``residual`` is donated to the jitted function,
    or is not used after the call, no copy is made."""
    x = _array(x, "x")
    like = _result(x.shape, x.dtype)
    return tuple(_call("aiter_add_rmsnorm", (like, like), [("x", x), ("residual", residual), ("weight", weight)],
                       aliases={1: 1}, eps=_eps(eps)))


def layernorm(x, weight, bias=None, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last dim of ``x``."""
    x = _array(x, "x")
    return _call("aiter_layernorm", _result(x.shape, x.dtype), [("x", x), ("weight", weight), ("bias", bias)],
                 optional=("bias",), eps=_eps(eps))


def rmsnorm_quant(x, weight, eps=1e-6, dtype="float8_e4m3fn"):
    """RMSNorm fused with per-row dynamic quantization: returns ``(out, scale)``,
    ``out ~= rmsnorm(x, weight) / scale`` in ``dtype`` (int8 or an fp8 type),
    ``scale`` float32 of shape ``x.shape[:-1] + (1,)``."""
    x = _array(x, "x")
    results = (_result(x.shape, _quant_dtype(dtype)), _row_scales(x))
    return tuple(_call("aiter_rmsnorm_quant", results, [("x", x), ("weight", weight)], eps=_eps(eps)))


def add_rmsnorm_quant(x, residual, weight, eps=1e-6, dtype="float8_e4m3fn"):
    """``residual_out = x + residual``, then :func:`rmsnorm_quant` of it; returns
    ``(out, scale, residual_out)``, ``residual_out`` aliased with ``residual`` as
    in :func:`add_rmsnorm`."""
    x = _array(x, "x")
    results = (_result(x.shape, _quant_dtype(dtype)), _row_scales(x), _result(x.shape, x.dtype))
    return tuple(_call("aiter_add_rmsnorm_quant", results, [("x", x), ("residual", residual), ("weight", weight)],
                       aliases={1: 2}, eps=_eps(eps)))


def _half(x):
    # An odd or missing last dim is left for the library to report.
    return x.shape[:-1] + (x.shape[-1] // 2,) if x.ndim else ()


def silu_and_mul(x):
    """``silu(x[..., :d]) * x[..., d:]`` for ``x`` [..., 2*d]; returns [..., d] in ``x``'s dtype."""
    x = _array(x, "x")
    return _call("aiter_silu_and_mul", _result(_half(x), x.dtype), [("x", x)])


def gelu_and_mul(x, approximate="none"):
    """``gelu(x[..., :d]) * x[..., d:]``; ``approximate`` is ``"none"`` (erf) or ``"tanh"``."""
    if approximate not in _GELU_APPROX:
        raise InvalidArgumentError(f'approximate: expected "none" or "tanh", got {approximate!r}')
    x = _array(x, "x")
    return _call("aiter_gelu_and_mul", _result(_half(x), x.dtype), [("x", x)],
                 approximate=np.int32(_GELU_APPROX[approximate]))


def silu_and_mul_quant(x, dtype="float8_e4m3fn"):
    """:func:`silu_and_mul` in float32, quantized per row with a dynamic scale:
    returns ``(out, scale)``, ``out`` [..., d] of ``dtype``, ``scale`` float32
    ``x.shape[:-1] + (1,)``."""
    x = _array(x, "x")
    results = (_result(_half(x), _quant_dtype(dtype)), _row_scales(x))
    return tuple(_call("aiter_silu_and_mul_quant", results, [("x", x)]))


def quant_per_tensor(x, dtype="float8_e4m3fn"):
    """Quantize ``x`` with one dynamic scale; returns ``(out, scale)``, scale (1,) float32."""
    x = _array(x, "x")
    results = (_result(x.shape, _quant_dtype(dtype)), _result((1,), "float32"))
    return tuple(_call("aiter_quant_per_tensor_dynamic", results, [("x", x)]))


def quant_per_token(x, dtype="float8_e4m3fn"):
    """Quantize each row of ``x`` with its own dynamic scale; returns ``(out, scale)``,
    scale float32 ``x.shape[:-1] + (1,)``."""
    x = _array(x, "x")
    results = (_result(x.shape, _quant_dtype(dtype)), _row_scales(x))
    return tuple(_call("aiter_quant_per_token_dynamic", results, [("x", x)]))


def quant_per_tensor_static(x, scale, dtype="float8_e4m3fn"):
    """Quantize ``x`` with a given scale, float32 (1,) or (1, 1), a finite value
    >= FLT_MIN (checked on the CPU; on a GPU it is not read by the host)."""
    x = _array(x, "x")
    return _call("aiter_quant_per_tensor_static", _result(x.shape, _quant_dtype(dtype)),
                 [("x", x), ("scale", scale)])


def rope(q, k, positions, cos_sin_cache, style="neox"):
    """Rotary embedding of q [T, Hq, D] and k [T, Hk, D] (``k`` may be None);
    returns ``(q, k)`` rotated (None in k's place when k is None).

    As :func:`aiter.rope`, but JAX arrays are immutable: the rotated arrays
    are new values.  They are aliased with q and k (input/output aliases), so
    when q and k are donated to the jitted function, or not used after the
    call, they are rotated in their own buffers with no copy; otherwise XLA
    copies them first.  ``positions`` [T] int32 or int64; ``cos_sin_cache``
    [max_position, R] as :func:`aiter.rope_cos_sin_cache` makes it."""
    if style not in _STYLES:
        raise InvalidArgumentError(f"style: expected 'neox' or 'gptj', got {style!r}")
    q = _array(q, "q")
    k = None if k is None else _array(k, "k")
    rotated = [t for t in (q, k) if t is not None]
    results = tuple(_result(t.shape, t.dtype) for t in rotated)
    out = _call("aiter_rope", results, [("q", q), ("k", k), ("positions", positions), ("cos_sin_cache", cos_sin_cache)],
                aliases={i: i for i in range(len(rotated))}, optional=("k",), style=np.int32(_STYLES[style]))
    return out[0], (out[1] if k is not None else None)


def reshape_and_cache(key, value, k_cache, v_cache, slot_mapping, *, k_scale=1.0, v_scale=1.0):
    """Writes ``key[t]`` and ``value[t]`` ([T, Hkv, D]) to cache slot
    ``slot_mapping[t]`` of ``k_cache`` / ``v_cache`` [num_blocks, page_size,
    Hkv, D] (a negative slot skips the token); returns the updated
    ``(k_cache, v_cache)``.  The caches are aliased with the results: donate
    them to the jitted function (``donate_argnums``) to update them in place,
    else XLA copies them first.  An fp8 cache stores ``key / k_scale``
    (``value / v_scale``)."""
    k_cache, v_cache = _array(k_cache, "k_cache"), _array(v_cache, "v_cache")
    results = (_result(k_cache.shape, k_cache.dtype), _result(v_cache.shape, v_cache.dtype))
    operands = [("key", key), ("value", value), ("k_cache", k_cache), ("v_cache", v_cache),
                ("slot_mapping", slot_mapping)]
    return tuple(_call("aiter_reshape_and_cache", results, operands, aliases={2: 0, 3: 1},
                       k_scale=np.float32(k_scale), v_scale=np.float32(v_scale)))


def _gemm_shape(a, w):
    # Malformed inputs get an empty placeholder output; the library then names the problem.
    return (a.shape[0] if a.ndim == 2 else 0, w.shape[0] if w.ndim == 2 else 0)


def gemm_a16w16(a, w, bias=None, *, out_dtype=None):
    """``a @ w.T + bias`` for ``a`` [M, K], ``w`` [N, K] (float32, float16 or
    bfloat16, the same), fp32 accumulation, rounded once to ``out_dtype``
    (``a``'s dtype by default); ``bias`` None or [N] in float32 or ``out_dtype``."""
    a, w = _array(a, "a"), _array(w, "w")
    dtype = a.dtype if out_dtype is None else dtypes.canonical(out_dtype)
    return _call("aiter_gemm_a16w16", _result(_gemm_shape(a, w), dtype), [("a", a), ("w", w), ("bias", bias)],
                 optional=("bias",))


def gemm_a8w8(a, w, a_scale, w_scale, bias=None, *, out_dtype="bfloat16"):
    """``(a @ w.T) * a_scale * w_scale + bias`` for int8 or fp8 ``a`` and ``w``;
    ``a_scale`` float32 [M, 1] or [1], ``w_scale`` float32 [1, N] or [1]; see
    :func:`aiter.gemm_a8w8`."""
    a, w = _array(a, "a"), _array(w, "w")
    operands = [("a", a), ("w", w), ("a_scale", a_scale), ("w_scale", w_scale), ("bias", bias)]
    return _call("aiter_gemm_a8w8", _result(_gemm_shape(a, w), dtypes.canonical(out_dtype)), operands,
                 optional=("bias",))
