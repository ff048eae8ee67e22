"""One valid call of every tensor op of the C ABI, with fresh random inputs of
odd sizes (empty ones too), poisoned outputs and a check of the results against
the float64 NumPy references of the test suite (tests/python).

A builder returns a Case: the C function's arguments in order, and a check that
takes the arrays as the call left them.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import gemm_helpers  # noqa: E402
from harness import QMAX, SMALLEST_SUBNORMAL, f64, ml_dtypes, np_dtype, poisoned  # noqa: E402
from test_activation import gated_ref, gelu_ref, gelu_tanh_ref, silu_ref  # noqa: E402
from test_attention import decode_ref, prefill_ref  # noqa: E402
from test_gemm_batched import reference as batched_reference  # noqa: E402
from test_gemm_blockscale import reference as blockscale_reference  # noqa: E402
from test_moe import topk_ref  # noqa: E402
from test_moe_fused import moe_ref  # noqa: E402
from test_moe_routing import grouped_ref  # noqa: E402
from test_moe_sorting import check_sorting  # noqa: E402
from test_norm import rms_ref  # noqa: E402
from test_rope import reference_cache, rope_ref  # noqa: E402

# bfloat16 and fp8 NumPy arrays need ml_dtypes, which some distributions lack.
FP8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"] if ml_dtypes is not None else []
FLOATS = ["float32", "float16"] + (["bfloat16"] if ml_dtypes is not None else [])
QUANTS = ["int8"] + FP8
MANTISSA = {"int8": None, "float8_e4m3fn": 3, "float8_e4m3fnuz": 3, "float8_e5m2": 2}
TOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


class T:
    """A tensor argument: role "in", "out" (written; its initial bytes may matter)
    or "index" (positions, tables, lengths, slots); array None passes NULL."""

    def __init__(self, name, array, role="in"):
        self.name, self.array, self.role = name, array, role


class S:
    """A scalar argument: kind "float", "int" or "enum"."""

    def __init__(self, name, value, kind):
        self.name, self.value, self.kind = name, value, kind


class Params:
    """A params struct pointer (aiter_attention_params unless named): fields over
    the defaults, or None for NULL."""

    def __init__(self, fields, struct="aiter_attention_params"):
        self.name, self.fields, self.struct = "params", fields, struct


class Case:
    def __init__(self, op, args, check, stream=True):
        self.op, self.args, self.check = op, args, check
        if stream:  # ops end with the stream; queries have none
            self.args.append(S("stream", None, "stream"))

    def arg(self, name):
        return next(a for a in self.args if a.name == name)


def rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np_dtype(dtype))


def dims(rng, *limits):
    """Random extents, each 0 now and then, else 1 to its limit."""
    return tuple(0 if rng.random() < 0.05 else int(rng.integers(1, lim + 1)) for lim in limits)


def close(out, ref, dtype, what, scale=1.0):
    out, ref = f64(out), np.asarray(ref, np.float64)
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != {ref.shape}"
    tol = TOL[dtype] * scale
    bad = ~(np.abs(out - ref) <= tol + tol * np.abs(ref))
    assert not bad.any(), f"{what}: {bad.sum()} of {bad.size} elements off (first at {np.argwhere(bad)[0]})"


def quant_close(q, scale, y, qdtype, what):
    """q * scale reproduces y to within the 8-bit format's rounding."""
    qmax = QMAX[qdtype]
    amax = np.abs(y).max(axis=-1, keepdims=True) if y.size else np.zeros(scale.shape)
    close(scale, np.where(amax == 0, 1.0, amax / qmax).reshape(scale.shape), "float32", what + " scale", 10)
    deq = f64(q) * f64(scale)
    bad = ~(np.abs(deq - y) <= rounding_step(y, f64(scale), qdtype))
    assert not bad.any(), f"{what}: {bad.sum()} of {bad.size} quantized elements off"


def rounding_step(y, scale, qdtype):
    """How far an 8-bit value times its scale may lie from y: a unit in the last
    place of the format (twice the rounding error, for fp32 arithmetic on the way)."""
    if MANTISSA[qdtype] is None:
        return 0.5 * scale * 1.01 + 1e-6 * np.abs(y)
    return np.abs(y) * 2.0 ** -MANTISSA[qdtype] + SMALLEST_SUBNORMAL[qdtype] * scale


# ---- norms and activations ---------------------------------------------------------

def rmsnorm(rng):
    dt = rng.choice(FLOATS)
    shape = dims(rng, 5, 70)
    x, w = rand(rng, shape, dt), rand(rng, shape[-1:], rng.choice([dt, "float32"]))
    eps = 1e-5
    return Case("rmsnorm", [T("out", poisoned(shape, dt), "out"), T("x", x), T("weight", w), S("epsilon", eps, "float")],
                lambda r: close(r["out"], rms_ref(f64(x), f64(w), eps), dt, "out"))


def add_rmsnorm(rng):
    dt = rng.choice(FLOATS)
    shape = dims(rng, 5, 70)
    x, res, w = rand(rng, shape, dt), rand(rng, shape, dt), rand(rng, shape[-1:], dt)
    eps = 1e-6

    def check(r):
        s = f64((f64(x) + f64(res)).astype(np_dtype(dt)))
        close(r["residual_out"], s, dt, "residual_out")
        close(r["out"], rms_ref(s, f64(w), eps), dt, "out")
    return Case("add_rmsnorm", [T("out", poisoned(shape, dt), "out"), T("residual_out", poisoned(shape, dt), "out"),
                                T("x", x), T("residual", res), T("weight", w), S("epsilon", eps, "float")], check)


def layernorm(rng):
    dt = rng.choice(FLOATS)
    shape = dims(rng, 4, 50)
    x, w = rand(rng, shape, dt), rand(rng, shape[-1:], dt)
    b = rand(rng, shape[-1:], dt) if rng.random() < 0.5 else None
    eps = 1e-5

    def check(r):
        v = f64(x)
        y = (v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + eps) * f64(w)
        close(r["out"], y if b is None else y + f64(b), dt, "out")
    return Case("layernorm", [T("out", poisoned(shape, dt), "out"), T("x", x), T("weight", w), T("bias", b),
                              S("epsilon", eps, "float")], check)


def rmsnorm_quant(rng, add=False):
    dt, qt = rng.choice(FLOATS), rng.choice(QUANTS)
    shape = dims(rng, 4, 60)
    x, w = rand(rng, shape, dt), rand(rng, shape[-1:], dt)
    res = rand(rng, shape, dt) if add else None
    eps = 1e-6
    scale_shape = shape[:-1] + (1,)

    def check(r):
        s = f64((f64(x) + f64(res)).astype(np_dtype(dt))) if add else f64(x)
        if add:
            close(r["residual_out"], s, dt, "residual_out")
        quant_close(r["out"], r["scale"], rms_ref(s, f64(w), eps), qt, "out")
    args = [T("out", poisoned(shape, qt), "out"), T("scale", poisoned(scale_shape, "float32"), "out")]
    if add:
        args += [T("residual_out", poisoned(shape, dt), "out"), T("x", x), T("residual", res)]
    else:
        args += [T("x", x)]
    args += [T("weight", w), S("epsilon", eps, "float")]
    return Case("add_rmsnorm_quant" if add else "rmsnorm_quant", args, check)


def gated(rng, kind):
    dt = rng.choice(FLOATS)
    lead, d = dims(rng, 4)[0], int(rng.integers(0, 40))
    x = rand(rng, (lead, 2 * d), dt)
    act = {"silu": silu_ref, "gelu": gelu_ref, "gelu_tanh": gelu_tanh_ref}[kind]
    args = [T("out", poisoned((lead, d), dt), "out"), T("x", x)]
    if kind != "silu":
        args.append(S("approx", int(kind == "gelu_tanh"), "enum"))
    op = "silu_and_mul" if kind == "silu" else "gelu_and_mul"
    return Case(op, args, lambda r: close(r["out"], gated_ref(x, act), dt, "out"))


def silu_and_mul_quant(rng):
    dt, qt = rng.choice(FLOATS), rng.choice(QUANTS)
    lead, d = dims(rng, 4)[0], int(rng.integers(0, 40))
    x = rand(rng, (lead, 2 * d), dt)
    return Case("silu_and_mul_quant",
                [T("out", poisoned((lead, d), qt), "out"), T("scale", poisoned((lead, 1), "float32"), "out"), T("x", x)],
                lambda r: quant_close(r["out"], r["scale"], gated_ref(x, silu_ref), qt, "out"))


# ---- quantization -------------------------------------------------------------------

def quant(rng, how):
    dt, qt = rng.choice(FLOATS), rng.choice(QUANTS)
    shape = dims(rng, 5, 50)
    x = rand(rng, shape, dt)
    if how == "static":
        scale = np.array([abs(rng.standard_normal()) + 0.05], np.float32)
        return Case("quant_per_tensor_static", [T("out", poisoned(shape, qt), "out"), T("x", x), T("scale", scale)],
                    lambda r: static_check(r["out"], float(scale[0]), f64(x), qt))
    scale_shape = (1,) if how == "tensor" else shape[:-1] + (1,)

    def check(r):
        y = f64(x)
        if how == "tensor":
            amax = np.abs(y).max() if y.size else 0.0
            close(r["scale"], [1.0 if amax == 0 else amax / QMAX[qt]], "float32", "scale", 10)
            static_check(r["out"], float(r["scale"][0]), y, qt)
        else:
            quant_close(r["out"], r["scale"], y, qt, "out")
    op = "quant_per_tensor_dynamic" if how == "tensor" else "quant_per_token_dynamic"
    return Case(op, [T("out", poisoned(shape, qt), "out"), T("scale", poisoned(scale_shape, "float32"), "out"),
                     T("x", x)], check)


def static_check(q, scale, y, qt):
    qmax = QMAX[qt]
    want = np.clip(y / scale, -qmax, qmax) * scale
    bad = ~(np.abs(f64(q) * scale - want) <= rounding_step(want, scale, qt))
    assert not bad.any(), f"out: {bad.sum()} of {bad.size} quantized elements off"


# ---- rope, routing ---------------------------------------------------------------------

def rope(rng):
    dt = rng.choice(FLOATS)
    t, hq, hk = dims(rng, 6, 3, 3)
    d = int(rng.choice([2, 8, 16, 32]))
    rotary = int(rng.choice([r for r in (2, 4, 8, 16, 32) if r <= d]))
    max_pos = int(rng.integers(1, 40))
    cache64 = reference_cache(max_pos, rotary)
    cache = cache64.astype(np_dtype(rng.choice([dt, "float32"])))
    pos = rng.integers(0, max_pos, t).astype(rng.choice([np.int32, np.int64]))
    q, k = rand(rng, (t, hq, d), dt), rand(rng, (t, hk, d), dt)
    style = int(rng.integers(0, 2))
    with_k = rng.random() < 0.8

    def check(r):
        name = "gptj" if style else "neox"
        close(r["q"], rope_ref(f64(q), pos, f64(cache), name), dt, "q")
        if with_k:
            close(r["k"], rope_ref(f64(k), pos, f64(cache), name), dt, "k")
    return Case("rope", [T("q", q.copy(), "out"), T("k", k.copy() if with_k else None, "out"), T("positions", pos, "index"),
                         T("cos_sin_cache", cache), S("style", style, "enum")], check)


def topk_softmax(rng):
    dt = rng.choice(FLOATS)
    tokens, experts = dims(rng, 6)[0], int(rng.integers(1, 20))
    k = int(rng.integers(1, experts + 1))
    gating = rand(rng, (tokens, experts), dt)
    renorm = int(rng.integers(0, 2))

    def check(r):
        w, ids = topk_ref(gating, k, renorm)
        close(r["topk_weights"], w, "float32", "topk_weights", 10)
        assert (r["topk_ids"] == ids).all() or tokens == 0, "topk_ids differ"
    return Case("topk_softmax", [T("topk_weights", poisoned((tokens, k), "float32"), "out"),
                                 T("topk_ids", np.full((tokens, k), -7, np.int32), "out"), T("gating", gating),
                                 S("renormalize", renorm, "int")], check)


def topk_sigmoid(rng):
    dt = rng.choice(FLOATS)
    tokens, experts = dims(rng, 6)[0], int(rng.integers(1, 20))
    k = int(rng.integers(1, experts + 1))
    gating, renorm = rand(rng, (tokens, experts), dt), int(rng.integers(0, 2))

    def check(r):
        w, ids = grouped_ref(gating, k, scoring="sigmoid", renormalize=renorm)
        close(r["topk_weights"], w, "float32", "topk_weights", 10)
        assert (r["topk_ids"] == ids).all() or tokens == 0, "topk_ids differ"
    return Case("topk_sigmoid", [T("topk_weights", poisoned((tokens, k), "float32"), "out"),
                                 T("topk_ids", np.full((tokens, k), -7, np.int32), "out"), T("gating", gating),
                                 S("renormalize", renorm, "int")], check)


def grouped_topk(rng):
    dt = rng.choice(FLOATS)
    groups, size, tokens = int(rng.integers(1, 5)), int(rng.integers(1, 6)), dims(rng, 6)[0]
    topk_group = int(rng.integers(1, groups + 1))
    k = int(rng.integers(1, topk_group * size + 1))
    gating = rand(rng, (tokens, groups * size), dt)
    sigmoid, renorm, scale = int(rng.integers(0, 2)), int(rng.integers(0, 2)), float(rng.choice([1.0, 2.5]))
    bias = rand(rng, (groups * size,), "float32", 0.1) if sigmoid and rng.random() < 0.5 else None

    def check(r):
        w, ids = grouped_ref(gating, k, groups, topk_group, bias, "sigmoid" if sigmoid else "softmax", renorm, scale)
        close(r["topk_weights"], w, "float32", "topk_weights", 10)
        assert (r["topk_ids"] == ids).all() or tokens == 0, "topk_ids differ"
    return Case("grouped_topk", [T("topk_weights", poisoned((tokens, k), "float32"), "out"),
                                 T("topk_ids", np.full((tokens, k), -7, np.int32), "out"), T("gating", gating),
                                 T("correction_bias", bias), S("num_expert_group", groups, "int"),
                                 S("topk_group", topk_group, "int"), S("scoring", sigmoid, "int"),
                                 S("renormalize", renorm, "int"), S("routed_scaling_factor", scale, "float")], check)


def moe_routed_ids(rng, tokens, k, experts):
    return rng.integers(0, experts, (tokens, k)).astype(np.int32)


def moe_sorting(rng):
    tokens, k, experts = dims(rng, 9)[0], int(rng.integers(1, 4)), int(rng.integers(1, 10))
    block = int(rng.choice([1, 4, 16]))
    ids = moe_routed_ids(rng, tokens, k, experts)
    mask = rng.integers(0, 2, experts).astype(rng.choice([np.int32, np.uint8])) if rng.random() < 0.3 else None
    rows = int(np.int64(tokens * k + min(experts, tokens * k) * (block - 1)) // block * block)

    def check(r):
        check_sorting(ids, experts, block, r["sorted_ids"], r["block_experts"], r["num_valid"], mask)
    return Case("moe_sorting", [T("sorted_ids", np.full(rows, -5, np.int32), "out"),
                                T("block_experts", np.full(rows // block, -5, np.int32), "out"),
                                T("num_valid", np.full(1, -5, np.int32), "out"), T("topk_ids", ids, "index"),
                                T("expert_mask", mask, "index"), S("num_experts", experts, "int"),
                                S("block_size", block, "int")], check)


def fused_moe(rng):
    from aiter._lib import ffi, lib
    dt = rng.choice(["float16"] + (["bfloat16"] if ml_dtypes is not None else []))
    tokens, k, experts = dims(rng, 7)[0], int(rng.integers(1, 4)), int(rng.integers(1, 6))
    hidden, inter = int(rng.integers(1, 24)), int(rng.integers(1, 12))
    x = rand(rng, (tokens, hidden), dt)
    w1 = rand(rng, (experts, 2 * inter, hidden), dt, 1 / math.sqrt(hidden))
    w2 = rand(rng, (experts, hidden, inter), dt, 1 / math.sqrt(inter))
    weights = rng.random((tokens, k)).astype(np.float32)
    ids = moe_routed_ids(rng, tokens, k, experts)
    fields = {"activation": int(rng.integers(0, 3)), "weights_on_input": int(rng.integers(0, 2)),
              "block_size": int(rng.choice([0, 32, 128]))}
    p = ffi.new("aiter_fused_moe_params *")
    lib.aiter_fused_moe_params_init(p)
    for name, value in fields.items():
        setattr(p, name, value)
    size = int(lib.aiter_fused_moe_workspace_size(tokens, k, experts, hidden, inter, 2, p))
    act = ["silu", "gelu", "gelu_tanh"][fields["activation"]]
    ref = moe_ref(x, w1, w2, weights, ids, act, bool(fields["weights_on_input"]))
    return Case("fused_moe", [T("out", poisoned((tokens, hidden), dt), "out"),
                              T("workspace", np.full(size, 0xFF, np.uint8), "out"), T("x", x), T("w1", w1),
                              T("w2", w2), T("topk_weights", weights), T("topk_ids", ids, "index"),
                              T("expert_mask", None, "index"), Params(fields, "aiter_fused_moe_params")],
                lambda r: close(r["out"], ref, dt, "out", 4))


def fused_moe_fp8(rng):
    """fp8 experts (e4m3fn / e4m3fnuz) with per-channel scales."""
    from aiter._lib import ffi, lib
    from test_moe_fp8 import moe_fp8_ref, quantize_channels
    dt = rng.choice(["float16", "bfloat16"])
    qdt = rng.choice(["float8_e4m3fn", "float8_e4m3fnuz"])
    tokens, k, experts = dims(rng, 6)[0], int(rng.integers(1, 4)), int(rng.integers(1, 5))
    hidden, inter = int(rng.integers(1, 24)), int(rng.integers(1, 12))
    x = rand(rng, (tokens, hidden), dt)
    w1q, s1 = quantize_channels(rand(rng, (experts, 2 * inter, hidden), "float32"), qdt)
    w2q, s2 = quantize_channels(rand(rng, (experts, hidden, inter), "float32"), qdt)
    weights = rng.random((tokens, k)).astype(np.float32)
    ids = moe_routed_ids(rng, tokens, k, experts)
    fields = {"activation": int(rng.integers(0, 3)), "weights_on_input": int(rng.integers(0, 2))}
    p = ffi.new("aiter_fused_moe_params *")
    lib.aiter_fused_moe_params_init(p)
    for name, value in fields.items():
        setattr(p, name, value)
    size = int(lib.aiter_fused_moe_workspace_size(tokens, k, experts, hidden, inter, 1, p))
    act = ["silu", "gelu", "gelu_tanh"][fields["activation"]]
    ref = moe_fp8_ref(x, w1q, w2q, s1, s2, weights, ids, qdt, act, bool(fields["weights_on_input"]))
    return Case("fused_moe_fp8", [T("out", poisoned((tokens, hidden), dt), "out"),
                                  T("workspace", np.full(size, 0xFF, np.uint8), "out"), T("x", x), T("w1", w1q),
                                  T("w2", w2q), T("w1_scale", s1), T("w2_scale", s2), T("topk_weights", weights),
                                  T("topk_ids", ids, "index"), T("expert_mask", None, "index"),
                                  Params(fields, "aiter_fused_moe_params")],
                lambda r: close(r["out"], ref, dt, "out", 6))


# ---- GEMM ---------------------------------------------------------------------------------

def gemm_a16w16(rng, batched=False):
    dt, ot = rng.choice(FLOATS), rng.choice(FLOATS)
    b = int(rng.integers(1, 4)) if batched else None
    m, n, k = dims(rng, 9, 40, 70)
    lead = (b,) if batched else ()
    a, w = rand(rng, lead + (m, k), dt), rand(rng, lead + (n, k), dt)
    bias = rand(rng, (n,), rng.choice([ot, "float32"])) if rng.random() < 0.5 else None
    ref = batched_reference(a, w, bias) if batched else gemm_helpers.reference(a, w, bias)
    op = "batched_gemm_a16w16" if batched else "gemm_a16w16"
    return Case(op, [T("out", poisoned(lead + (m, n), ot), "out"), T("a", a), T("w", w), T("bias", bias)],
                lambda r: close(r["out"], ref, ot, "out", 1 + math.sqrt(k)))


def int8_or_fp8(rng, shape, dtype):
    if dtype == "int8":
        return rng.integers(-127, 128, shape).astype(np.int8)
    return rand(rng, shape, dtype, 2.0)


def gemm_a8w8(rng, batched=False):
    qt, ot = rng.choice(QUANTS), rng.choice(FLOATS)
    b = int(rng.integers(1, 4)) if batched else 1
    m, n, k = dims(rng, 9, 40, 70)
    lead = (b,) if batched else ()
    a, w = int8_or_fp8(rng, lead + (m, k), qt), int8_or_fp8(rng, lead + (n, k), qt)
    per_token = rng.random() < 0.5 and m * n > 0  # the references take no empty scale arrays
    unit = 0.01 if qt == "int8" else 1.0  # int8 sums reach 10^5: keep float16 outputs finite
    a_scale = ((rng.random(lead + (m, 1)) if per_token else rng.random((1,))) + 0.1).astype(np.float32) * unit
    w_scale = ((rng.random(lead + (1, n)) if per_token else rng.random((1,))) + 0.1).astype(np.float32)
    bias = rand(rng, (n,), ot) if rng.random() < 0.5 else None
    if batched:
        ref = batched_reference(a, w, bias, a_scale, w_scale)
    else:
        ref = gemm_helpers.reference(a, w, bias, a_scale, w_scale)
    op = "batched_gemm_a8w8" if batched else "gemm_a8w8"
    magnitude = 1 + (2 if qt == "int8" else 4) * math.sqrt(k)
    return Case(op, [T("out", poisoned(lead + (m, n), ot), "out"), T("a", a), T("w", w), T("a_scale", a_scale),
                     T("w_scale", w_scale), T("bias", bias)], lambda r: close(r["out"], ref, ot, "out", magnitude))


def gemm_a8w8_blockscale(rng):
    qt, ot = rng.choice(["float8_e4m3fn", "float8_e4m3fnuz"]), rng.choice(FLOATS)
    m, n, k = dims(rng, 6, 140, 300)
    groups, blocks = -(-k // 128), -(-n // 128)
    a, w = rand(rng, (m, k), qt), rand(rng, (n, k), qt)
    a_scale = (rng.random((m, groups)) + 0.1).astype(np.float32)
    w_scale = (rng.random((blocks, groups)) + 0.1).astype(np.float32)
    ref = blockscale_reference(a, w, a_scale, w_scale)
    return Case("gemm_a8w8_blockscale", [T("out", poisoned((m, n), ot), "out"), T("a", a), T("w", w),
                                         T("a_scale", a_scale), T("w_scale", w_scale)],
                lambda r: close(r["out"], ref, ot, "out", 1 + 4 * math.sqrt(k)))


# ---- attention -------------------------------------------------------------------------------

def cu_seqlens(rng, batch, most):
    lens = [0 if rng.random() < 0.1 else int(rng.integers(1, most + 1)) for _ in range(batch)]
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)


def prefill_attention(rng):
    dt = rng.choice(FLOATS)
    batch, kv_heads, group = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    d = int(rng.choice([64, 128]))
    cu_q, cu_k = cu_seqlens(rng, batch, 5), cu_seqlens(rng, batch, 7)
    q = rand(rng, (int(cu_q[-1]), kv_heads * group, d), dt)
    k, v = rand(rng, (int(cu_k[-1]), kv_heads, d), dt), rand(rng, (int(cu_k[-1]), kv_heads, d), dt)
    causal, window = int(rng.integers(0, 2)), int(rng.choice([-1, 0, 2]))
    scale = 1.0 / math.sqrt(d)
    ref = prefill_ref(q, k, v, cu_q, cu_k, scale, bool(causal), window)
    return Case("prefill_attention", [T("out", poisoned(q.shape, dt), "out"), T("q", q), T("k", k), T("v", v),
                                      T("cu_seqlens_q", cu_q, "index"), T("cu_seqlens_k", cu_k, "index"),
                                      Params({"causal": causal, "window_left": window})],
                lambda r: close(r["out"], ref, dt, "out", 2))


def paged_cache(rng, kv_heads, d, dt, blocks, page):
    cache_dt = rng.choice([dt] + [f for f in FP8 if f != "float8_e4m3fnuz"])
    return rand(rng, (blocks, page, kv_heads, d), cache_dt), rand(rng, (blocks, page, kv_heads, d), cache_dt)


def paged_decode_attention(rng):
    dt, q, k_cache, v_cache, table, lens = decode_inputs(rng)
    ref = decode_ref(q, k_cache, v_cache, table, lens, 1.0 / math.sqrt(q.shape[-1]))
    return Case("paged_decode_attention", [T("out", poisoned(q.shape, dt), "out"), T("q", q), T("k_cache", k_cache),
                                           T("v_cache", v_cache), T("block_table", table, "index"),
                                           T("context_lens", lens, "index"), Params({})],
                lambda r: close(r["out"], ref, dt, "out", 2 if k_cache.dtype.name == dt else 20))


def decode_inputs(rng):
    dt = rng.choice(FLOATS)
    batch, kv_heads, group, d = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3)), 64
    page, blocks, max_blocks = int(rng.choice([1, 3, 16])), int(rng.integers(1, 8)), int(rng.integers(1, 4))
    k_cache, v_cache = paged_cache(rng, kv_heads, d, dt, blocks, page)
    table = rng.integers(0, blocks, (batch, max_blocks)).astype(np.int32)
    lens = rng.integers(0, max_blocks * page + 1, batch).astype(np.int32)
    return dt, rand(rng, (batch, kv_heads * group, d), dt), k_cache, v_cache, table, lens


def paged_decode_attention_split_kv(rng):
    """The split-KV decode with a workspace as large as the size query asks (its
    contents poisoned: they must not matter)."""
    from aiter._lib import ffi, lib
    dt, q, k_cache, v_cache, table, lens = decode_inputs(rng)
    keep = []
    size = ffi.new("size_t *")
    arrays = [np.ascontiguousarray(a) for a in (q, k_cache, table)]
    descriptors = [aiter_tensor(a, keep) for a in arrays]
    assert lib.aiter_paged_decode_attention_workspace_size(size, *descriptors) == 0
    workspace = np.full(max(int(size[0]), 1), 0xFF, np.uint8)
    ref = decode_ref(q, k_cache, v_cache, table, lens, 1.0 / math.sqrt(q.shape[-1]))
    return Case("paged_decode_attention_split_kv",
                [T("out", poisoned(q.shape, dt), "out"), T("q", q), T("k_cache", k_cache), T("v_cache", v_cache),
                 T("block_table", table, "index"), T("context_lens", lens, "index"), T("workspace", workspace, "out"),
                 Params({})],
                lambda r: close(r["out"], ref, dt, "out", 2 if k_cache.dtype.name == dt else 20))


def paged_prefill_attention(rng):
    """New tokens (at most each context's length) after cached prefixes; the
    reference is prefill over each context gathered from the cache (both align
    the new tokens with the context's end)."""
    dt, _, k_cache, v_cache, table, lens = decode_inputs(rng)
    kv_heads, d, page = k_cache.shape[2], k_cache.shape[3], k_cache.shape[1]
    group = int(rng.integers(1, 3))
    new = np.array([int(rng.integers(0, n + 1)) for n in lens], np.int32)
    cu_q = np.concatenate([[0], np.cumsum(new)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    q = rand(rng, (int(cu_q[-1]), kv_heads * group, d), dt)

    def gather(cache):
        rows = [f64(cache[table[b, t // page], t % page]) for b, n in enumerate(lens) for t in range(n)]
        return np.stack(rows) if rows else np.zeros((0, kv_heads, d))

    causal = int(rng.integers(0, 2))
    ref = prefill_ref(q, gather(k_cache), gather(v_cache), cu_q, cu_k, 1.0 / math.sqrt(d), bool(causal))
    return Case("paged_prefill_attention",
                [T("out", poisoned(q.shape, dt), "out"), T("q", q), T("k_cache", k_cache), T("v_cache", v_cache),
                 T("block_table", table, "index"), T("context_lens", lens, "index"), T("cu_seqlens_q", cu_q, "index"),
                 Params({"causal": causal})],
                lambda r: close(r["out"], ref, dt, "out", 2 if k_cache.dtype.name == dt else 20))


def paged_decode_attention_workspace_size(rng):
    _, q, k_cache, _, table, _ = decode_inputs(rng)
    return Case("paged_decode_attention_workspace_size",
                [S("bytes", None, "size_out"), T("q", q), T("k_cache", k_cache), T("block_table", table, "index")],
                lambda r: None, stream=False)


def aiter_tensor(array, keep):
    """A plain DLTensor of a compact host array (for size queries)."""
    from raw_tensors import Buffer, RawTensor
    buffer = Buffer(array)
    keep.append(buffer)
    return RawTensor(array, buffer).to_c(keep)


def reshape_and_cache(rng):
    dt = rng.choice(FLOATS)
    tokens, kv_heads, d = int(rng.integers(0, 6)), int(rng.integers(1, 3)), int(rng.choice([64, 128]))
    page, blocks = int(rng.choice([1, 4])), int(rng.integers(1, 5))
    slots_total = page * blocks
    key, value = rand(rng, (tokens, kv_heads, d), dt), rand(rng, (tokens, kv_heads, d), dt)
    chosen = rng.permutation(slots_total)[:tokens]
    slots = np.array([-1 if rng.random() < 0.2 else s for s in chosen] + [-1] * (tokens - len(chosen)))
    slots = slots.astype(rng.choice([np.int32, np.int64]))
    k_cache = np.zeros((blocks, page, kv_heads, d), np_dtype(dt))
    v_cache = np.zeros((blocks, page, kv_heads, d), np_dtype(dt))

    def check(r):
        for cache, src, name in ((r["k_cache"], key, "k_cache"), (r["v_cache"], value, "v_cache")):
            want = np.zeros(cache.shape)
            flat = want.reshape(slots_total, kv_heads, d)
            for t, s in enumerate(slots):
                if s >= 0:
                    flat[s] = f64(src[t])
            close(cache, want, dt, name)
    return Case("reshape_and_cache", [T("k_cache", k_cache, "out"), T("v_cache", v_cache, "out"), T("key", key),
                                      T("value", value), T("slot_mapping", slots, "index"), S("k_scale", 1.0, "float"),
                                      S("v_scale", 1.0, "float")], check)


# ---- MLA -------------------------------------------------------------------------------

def mla_inputs(rng):
    dt = rng.choice(["float16"] + (["bfloat16"] if ml_dtypes is not None else []))
    batch, s_q, heads = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 4))
    page, blocks, max_blocks = int(rng.choice([1, 3, 16])), int(rng.integers(1, 6)), int(rng.integers(1, 4))
    cache_dt = rng.choice([dt] + [f for f in FP8 if f != "float8_e5m2"])
    cache = rand(rng, (blocks, page, 576), cache_dt)
    table = rng.integers(0, blocks, (batch, max_blocks)).astype(np.int32)
    lens = rng.integers(0, max_blocks * page + 1, batch).astype(np.int32)
    return dt, rand(rng, (batch, s_q, heads, 576), dt), cache, table, lens


def mla_decode(rng):
    """Decode with the workspace the size query asks for (poisoned) and an lse-free params."""
    from aiter._lib import ffi, lib
    from test_mla import mla_ref
    dt, q, cache, table, lens = mla_inputs(rng)
    splits = int(rng.choice([0, 1, 2, 3]))
    keep, size = [], ffi.new("size_t *")
    descriptors = [aiter_tensor(np.ascontiguousarray(a), keep) for a in (q, cache, table)]
    assert lib.aiter_mla_decode_workspace_size(size, *descriptors, splits) == 0
    workspace = np.full(int(size[0]), 0xFF, np.uint8) if size[0] else None
    ref, _ = mla_ref(q, cache, table, lens, 0.05)
    return Case("mla_decode",
                [T("out", poisoned(q.shape[:3] + (512,), dt), "out"), T("q", q), T("kv_cache", cache),
                 T("block_table", table, "index"), T("context_lens", lens, "index"),
                 T("workspace", workspace, "out"),
                 Params({"softmax_scale": 0.05, "num_splits": splits}, "aiter_mla_params")],
                lambda r: close(r["out"], ref, dt, "out", 2 if cache.dtype.name == dt else 20))


def mla_decode_workspace_size(rng):
    _, q, cache, table, _ = mla_inputs(rng)
    return Case("mla_decode_workspace_size",
                [S("bytes", None, "size_out"), T("q", q), T("kv_cache", cache), T("block_table", table, "index"),
                 S("num_splits", int(rng.integers(0, 4)), "int")], lambda r: None, stream=False)


def concat_and_cache_mla(rng):
    dt = rng.choice(["float16"] + (["bfloat16"] if ml_dtypes is not None else []))
    tokens, page, blocks = int(rng.integers(0, 6)), int(rng.choice([1, 4])), int(rng.integers(1, 4))
    kv_c, k_pe = rand(rng, (tokens, 512), dt), rand(rng, (tokens, 64), dt)
    chosen = rng.permutation(page * blocks)[:tokens]
    slots = np.array([-1 if rng.random() < 0.2 else s for s in chosen] + [-1] * (tokens - len(chosen)))
    slots = slots.astype(rng.choice([np.int32, np.int64]))
    cache = np.zeros((blocks, page, 576), np_dtype(dt))

    def check(r):
        want = np.zeros((blocks * page, 576))
        for t, s in enumerate(slots):
            if s >= 0:
                want[s] = np.concatenate([f64(kv_c[t]), f64(k_pe[t])])
        close(r["kv_cache"].reshape(blocks * page, 576), want, dt, "kv_cache")
    return Case("concat_and_cache_mla", [T("kv_cache", cache, "out"), T("kv_c", kv_c), T("k_pe", k_pe),
                                         T("slot_mapping", slots, "index"), S("scale", 1.0, "float")], check)


BUILDERS = {
    "rmsnorm": rmsnorm,
    "add_rmsnorm": add_rmsnorm,
    "layernorm": layernorm,
    "rmsnorm_quant": rmsnorm_quant,
    "add_rmsnorm_quant": lambda rng: rmsnorm_quant(rng, add=True),
    "silu_and_mul": lambda rng: gated(rng, "silu"),
    "gelu_and_mul": lambda rng: gated(rng, rng.choice(["gelu", "gelu_tanh"])),
    "silu_and_mul_quant": silu_and_mul_quant,
    "quant_per_tensor_dynamic": lambda rng: quant(rng, "tensor"),
    "quant_per_token_dynamic": lambda rng: quant(rng, "token"),
    "quant_per_tensor_static": lambda rng: quant(rng, "static"),
    "rope": rope,
    "topk_softmax": topk_softmax,
    "topk_sigmoid": topk_sigmoid,
    "grouped_topk": grouped_topk,
    "moe_sorting": moe_sorting,
    "fused_moe": fused_moe,
    "fused_moe_fp8": fused_moe_fp8,
    "gemm_a16w16": gemm_a16w16,
    "gemm_a8w8": gemm_a8w8,
    "gemm_a8w8_blockscale": gemm_a8w8_blockscale,
    "batched_gemm_a16w16": lambda rng: gemm_a16w16(rng, batched=True),
    "batched_gemm_a8w8": lambda rng: gemm_a8w8(rng, batched=True),
    "prefill_attention": prefill_attention,
    "paged_decode_attention": paged_decode_attention,
    "paged_decode_attention_split_kv": paged_decode_attention_split_kv,
    "paged_decode_attention_workspace_size": paged_decode_attention_workspace_size,
    "paged_prefill_attention": paged_prefill_attention,
    "reshape_and_cache": reshape_and_cache,
    "mla_decode": mla_decode,
    "mla_decode_workspace_size": mla_decode_workspace_size,
    "concat_and_cache_mla": concat_and_cache_mla,
}
if ml_dtypes is None:  # NumPy has no fp8 arrays (Debian): the fp8-only op cannot be built
    del BUILDERS["fused_moe_fp8"]
