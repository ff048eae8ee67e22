"""Every op of the library, described once (see types.py for the vocabulary).

Shapes follow the functional wrappers in ``aiter.ops``: where an input is
malformed the shape function gives a placeholder and the library, which checks
every argument, names the problem.  Attention ops come last (their wrappers
are still changing).
"""
from .. import dtypes
from ..errors import UnsupportedDtypeError
from .types import MUTATED, Arg, Op, Out, enum_to_c as _enum

GELU_APPROX = {"none": 0, "tanh": 1}  # aiter_gelu_approx
ROPE_STYLES = {"neox": 0, "gptj": 1}  # aiter_rope_style


def _same(name):
    return lambda a: tuple(a[name].shape)


def _half(a):
    shape = tuple(a["x"].shape)
    return shape[:-1] + (shape[-1] // 2,) if shape else ()


def _rows(a):
    shape = tuple(a["x"].shape)
    return shape[:-1] + (1,) if shape else (1,)


def _gemm(a):
    x, w = a["a"].shape, a["w"].shape
    return (x[0] if len(x) == 2 else 0, w[0] if len(w) == 2 else 0)


def _batched_gemm(a):
    x, w = a["a"].shape, a["w"].shape
    return (x[0], x[1], w[1]) if len(x) == 3 and len(w) == 3 else (0, 0, 0)


def _like(name):
    return lambda a: a[name]


def _arg_or(name, default):
    """The dtype named by argument ``name``, else ``default`` (a name, or a
    function of the arguments)."""
    def dtype(a):
        if a[name] is not None:
            return a[name]
        return default(a) if callable(default) else default
    return dtype


QUANT_TYPES = ("int8",) + dtypes.FP8_TYPES


def quant_dtype(dtype):
    """The canonical name of a quantized dtype argument, checked."""
    name = dtypes.canonical(dtype)
    if name not in QUANT_TYPES:
        raise UnsupportedDtypeError(f"dtype: expected one of {', '.join(QUANT_TYPES)}, got {name}")
    return name


def _dtype_or_none(value):
    return None if value is None else dtypes.canonical(value)


_FP8 = "float8_e4m3fn"
_EPS = Arg("eps", "float", default=1e-6)
_QDTYPE = Arg("dtype", "dtype", optional=True, default=_FP8, check=quant_dtype)  # None: float8_e4m3fn
_QOUT = Out("out", _same("x"), _arg_or("dtype", _FP8), dtype_arg="dtype")
_ROW_SCALE = Out("scale", _rows, lambda a: "float32")


def _norm_ops():
    return [
        Op("rmsnorm", "aiter_rmsnorm", [Arg("x"), Arg("weight"), _EPS],
           [Out.same_as("out", "x")], ["out", "x", "weight", "eps"]),
        Op("add_rmsnorm", "aiter_add_rmsnorm", [Arg("x"), Arg("residual"), Arg("weight"), _EPS],
           [Out.same_as("out", "x"), Out.same_as("residual_out", "x", reuse="residual")],
           ["out", "residual_out", "x", "residual", "weight", "eps"]),
        Op("layernorm", "aiter_layernorm",
           [Arg("x"), Arg("weight"), Arg("bias", optional=True), Arg("eps", "float", default=1e-5)],
           [Out.same_as("out", "x")], ["out", "x", "weight", "bias", "eps"]),
        Op("rmsnorm_quant", "aiter_rmsnorm_quant", [Arg("x"), Arg("weight"), _EPS, _QDTYPE],
           [_QOUT, _ROW_SCALE], ["out", "scale", "x", "weight", "eps"]),
        Op("add_rmsnorm_quant", "aiter_add_rmsnorm_quant",
           [Arg("x"), Arg("residual"), Arg("weight"), _EPS, _QDTYPE],
           [_QOUT, _ROW_SCALE, Out.same_as("residual_out", "x", reuse="residual")],
           ["out", "scale", "residual_out", "x", "residual", "weight", "eps"]),
    ]


def _activation_ops():
    return [
        Op("silu_and_mul", "aiter_silu_and_mul", [Arg("x")], [Out("out", _half, _like("x"))], ["out", "x"]),
        Op("gelu_and_mul", "aiter_gelu_and_mul",
           [Arg("x"), Arg("approximate", "str", default="none", to_c=_enum(GELU_APPROX, "approximate"))],
           [Out("out", _half, _like("x"))], ["out", "x", "approximate"]),
        Op("silu_and_mul_quant", "aiter_silu_and_mul_quant", [Arg("x"), _QDTYPE],
           [Out("out", _half, _arg_or("dtype", _FP8), dtype_arg="dtype"), _ROW_SCALE], ["out", "scale", "x"]),
    ]


def _quant_ops():
    return [
        Op("quant_per_tensor", "aiter_quant_per_tensor_dynamic", [Arg("x"), _QDTYPE],
           [_QOUT, Out("scale", lambda a: (1,), lambda a: "float32")], ["out", "scale", "x"]),
        Op("quant_per_token", "aiter_quant_per_token_dynamic", [Arg("x"), _QDTYPE],
           [_QOUT, _ROW_SCALE], ["out", "scale", "x"]),
        Op("quant_per_tensor_static", "aiter_quant_per_tensor_static", [Arg("x"), Arg("scale"), _QDTYPE],
           [_QOUT], ["out", "x", "scale"]),
    ]


def _rope_moe_ops():
    return [
        Op("rope", "aiter_rope",
           [Arg("q", MUTATED), Arg("k", MUTATED, optional=True), Arg("positions"), Arg("cos_sin_cache"),
            Arg("style", "str", default="neox", to_c=_enum(ROPE_STYLES, "style"))],
           [], ["q", "k", "positions", "cos_sin_cache", "style"]),
        _topk_softmax(),
    ]


def _topk_softmax():
    from .moe import topk_op
    return topk_op("topk_softmax", "aiter_topk_softmax")


def _gemm_ops():
    bf16 = "bfloat16"
    out_dtype = Arg("out_dtype", "dtype", optional=True, keyword=True, check=_dtype_or_none)  # None: a's
    out_bf16 = Arg("out_dtype", "dtype", optional=True, default=bf16, keyword=True, check=_dtype_or_none)
    a8w8_args = [Arg("a"), Arg("w"), Arg("a_scale"), Arg("w_scale"), Arg("bias", optional=True), out_bf16]
    a8w8_order = ["out", "a", "w", "a_scale", "w_scale", "bias"]
    return [
        Op("gemm_a16w16", "aiter_gemm_a16w16", [Arg("a"), Arg("w"), Arg("bias", optional=True), out_dtype],
           [Out("out", _gemm, _arg_or("out_dtype", _like("a")))], ["out", "a", "w", "bias"]),
        Op("gemm_a8w8", "aiter_gemm_a8w8", a8w8_args,
           [Out("out", _gemm, _arg_or("out_dtype", bf16))], a8w8_order),
        Op("gemm_a8w8_blockscale", "aiter_gemm_a8w8_blockscale",
           [Arg("a"), Arg("w"), Arg("a_scale"), Arg("w_scale"), out_bf16],
           [Out("out", _gemm, _arg_or("out_dtype", bf16))], ["out", "a", "w", "a_scale", "w_scale"]),
        Op("batched_gemm_a16w16", "aiter_batched_gemm_a16w16",
           [Arg("a"), Arg("w"), Arg("bias", optional=True), out_dtype],
           [Out("out", _batched_gemm, _arg_or("out_dtype", _like("a")))], ["out", "a", "w", "bias"]),
        Op("batched_gemm_a8w8", "aiter_batched_gemm_a8w8", a8w8_args,
           [Out("out", _batched_gemm, _arg_or("out_dtype", bf16))], a8w8_order),
    ]


def _attention_ops():
    from .attention import attention_ops
    return attention_ops()


def _moe_ops():
    from .moe import moe_ops
    return moe_ops()


def _mla_ops():
    from .mla import mla_ops
    return mla_ops()


OPS = tuple(_norm_ops() + _activation_ops() + _quant_ops() + _rope_moe_ops() + _gemm_ops() + _attention_ops()
            + _mla_ops() + _moe_ops())
OPS_BY_NAME = {op.name: op for op in OPS}
