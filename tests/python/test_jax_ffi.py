"""aiter.jax: every op as an XLA FFI custom call inside jax.jit on JAX's CPU
platform (and, marked gpu, on a CUDA device), against the float64 NumPy
references of the eager ops' tests.

Only a missing jax skips this file: where jax is installed (CI included) the
library must have been built with libaiter_xla.so, and its absence fails.
"""
import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import aiter  # noqa: E402
import aiter.jax as aj  # noqa: E402
from gemm_helpers import check as check_gemm, rand_int8, reference as gemm_reference  # noqa: E402
from harness import (FLOAT_DTYPES, QMAX, QUANT_DTYPES, assert_close, check_quantized, f64, jax_cpu,  # noqa: E402
                     np_dtype, rand)
from test_activation import check_silu_quant, gated_ref, gelu_ref, gelu_tanh_ref, silu_ref  # noqa: E402
from test_attention import fp8_quantize  # noqa: E402
from test_norm import check_norm_quant, rms_ref  # noqa: E402
from test_rope import reference_cache, rope_ref  # noqa: E402

SHAPES = [(1, 64), (7, 111), (3, 5, 500)]


def jit(fn, *arrays, **static):
    """fn(*arrays, **static) compiled by jax.jit, the arrays put on JAX's CPU device."""
    return jax.jit(functools.partial(fn, **static))(*[None if a is None else jax_cpu(a) for a in arrays])


def test_the_xla_library_is_built_and_registers():
    path = aj.register()
    assert path.endswith("libaiter_xla.so")
    assert aj.register() == path  # once only


# ---- norms ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm(rng, dtype, shape):
    x, w = rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out = jit(aj.rmsnorm, x, w, eps=1e-6)
    assert isinstance(out, jax.Array) and out.dtype == jnp.dtype(dtype)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add_rmsnorm(rng, dtype, shape):
    x, res, w = rand(rng, shape, dtype), rand(rng, shape, dtype), rand(rng, shape[-1:], "float32")
    out, res_out = jit(aj.add_rmsnorm, x, res, w, eps=1e-5)
    assert_close(res_out, f64(x) + f64(res), dtype, what="residual_out")
    assert_close(out, rms_ref(f64(res_out), f64(w), 1e-5), dtype)


def test_add_rmsnorm_leaves_the_callers_residual_alone(rng):
    """residual_out is aliased with residual: XLA must copy a residual still in use."""
    x, res, w = (rand(rng, s, "float32") for s in ((4, 96), (4, 96), (96,)))
    res_jax = jax_cpu(res)
    out, res_out = jax.jit(aj.add_rmsnorm)(jax_cpu(x), res_jax, jax_cpu(w))
    assert np.array_equal(np.asarray(res_jax), res), "the caller's residual changed"
    assert_close(res_out, f64(x) + f64(res), "float32")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_layernorm(rng, dtype, shape, with_bias):
    x = rand(rng, shape, dtype, scale=2.0, offset=3.0)
    w = rand(rng, shape[-1:], dtype)
    b = rand(rng, shape[-1:], dtype) if with_bias else None
    out = jit(lambda x, w, b: aj.layernorm(x, w, b, eps=1e-5), x, w, b)
    xd = f64(x)
    centered = xd - xd.mean(-1, keepdims=True)
    ref = centered / np.sqrt((centered ** 2).mean(-1, keepdims=True) + 1e-5) * f64(w)
    assert_close(out, ref + (f64(b) if with_bias else 0.0), dtype)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rmsnorm_quant(rng, dtype, qdtype):
    x, w = rand(rng, (7, 333), dtype), rand(rng, (333,), dtype)
    out, scale = jit(aj.rmsnorm_quant, x, w, eps=1e-6, dtype=qdtype)
    assert out.dtype == jnp.dtype(qdtype) and scale.shape == (7, 1)
    check_norm_quant(np.asarray(out), scale, rms_ref(f64(x), f64(w), 1e-6), qdtype)


@pytest.mark.parametrize("qdtype", ["int8", "float8_e4m3fn"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_rmsnorm_quant(rng, dtype, qdtype):
    shape = (2, 3, 250)
    x, res, w = rand(rng, shape, dtype), rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out, scale, res_out = jit(aj.add_rmsnorm_quant, x, res, w, dtype=qdtype)
    assert_close(res_out, f64(x) + f64(res), dtype, what="residual_out")
    check_norm_quant(np.asarray(out), scale, rms_ref(f64(res_out), f64(w), 1e-6), qdtype)


# ---- activations ------------------------------------------------------------------------

GATED = {
    "silu": (aj.silu_and_mul, {}, silu_ref),
    "gelu": (aj.gelu_and_mul, {}, gelu_ref),
    "gelu_tanh": (aj.gelu_and_mul, {"approximate": "tanh"}, gelu_tanh_ref),
}


@pytest.mark.parametrize("op", GATED)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(1, 2), (7, 222), (3, 5, 1000)])
def test_gated(rng, op, dtype, shape):
    fn, kwargs, act = GATED[op]
    x = rand(rng, shape, dtype, scale=2.0)
    out = jit(fn, x, **kwargs)
    assert out.shape == shape[:-1] + (shape[-1] // 2,)
    assert_close(out, gated_ref(x, act), dtype)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_silu_and_mul_quant(rng, dtype, qdtype):
    x = rand(rng, (3, 4, 222), dtype, scale=2.0)
    x[0, 0, 111:] = 0  # an all-zero row of products: scale 1
    out, scale = jit(aj.silu_and_mul_quant, x, dtype=qdtype)
    assert scale.shape == (3, 4, 1) and f64(scale)[0, 0, 0] == 1.0
    check_silu_quant(np.asarray(out), scale, x, qdtype)


# ---- quantization -----------------------------------------------------------------------

@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_quant_per_tensor_and_per_token(rng, dtype, qdtype):
    x = rand(rng, (5, 7, 111), dtype, scale=3.0)
    x64 = f64(x)
    out, scale = jit(aj.quant_per_tensor, x, dtype=qdtype)
    assert scale.shape == (1,)
    np.testing.assert_allclose(f64(scale)[0], np.abs(x64).max() / QMAX[qdtype], rtol=2e-7)
    check_quantized(np.asarray(out), x64, f64(scale)[0], qdtype)
    out, scale = jit(aj.quant_per_token, x, dtype=qdtype)
    np.testing.assert_allclose(f64(scale), np.abs(x64).max(-1, keepdims=True) / QMAX[qdtype], rtol=2e-7)
    check_quantized(np.asarray(out), x64, f64(scale), qdtype)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_quant_per_tensor_static(rng, dtype, qdtype):
    x = rand(rng, (9, 500), dtype)
    s = np.float32(np.quantile(np.abs(f64(x)), 0.97) / QMAX[qdtype])  # saturates a few values
    out = jit(aj.quant_per_tensor_static, x, np.array([s], np.float32), dtype=qdtype)
    check_quantized(np.asarray(out), f64(x), float(s), qdtype)


# ---- rope and the KV cache ---------------------------------------------------------------

@pytest.mark.parametrize("style", ["neox", "gptj"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("with_k", [True, False])
def test_rope(rng, style, dtype, with_k):
    tokens, dim, rotary, max_pos = 11, 64, 48, 40
    q, k = rand(rng, (tokens, 3, dim), dtype), rand(rng, (tokens, 1, dim), dtype) if with_k else None
    cache = reference_cache(max_pos, rotary).astype(np_dtype(dtype))
    pos = rng.integers(0, max_pos, size=tokens).astype(np.int32)
    q_new, k_new = jit(lambda q, k, p, c: aj.rope(q, k, p, c, style), q, k, pos, cache)
    for after, before, what in ((q_new, q, "q"), (k_new, k, "k")):
        if before is None:
            assert after is None
            continue
        assert_close(after, rope_ref(f64(before), pos, f64(cache), style), dtype, what=what)
        assert np.array_equal(np.asarray(after)[..., rotary:], before[..., rotary:]), f"{what}: past the rotary dim"


def test_rope_with_donated_q_and_k(rng):
    q, k = rand(rng, (5, 2, 32), "float32"), rand(rng, (5, 2, 32), "float32")
    cache, pos = reference_cache(16, 32).astype(np.float32), rng.integers(0, 16, size=5).astype(np.int32)
    step = jax.jit(lambda q, k, p, c: aj.rope(q, k, p, c), donate_argnums=(0, 1))
    q_new, k_new = step(jax_cpu(q), jax_cpu(k), jax_cpu(pos), jax_cpu(cache))
    assert_close(q_new, rope_ref(f64(q), pos, f64(cache), "neox"), "float32", what="q")
    assert_close(k_new, rope_ref(f64(k), pos, f64(cache), "neox"), "float32", what="k")


@pytest.mark.parametrize("dtype,cache_dtype", [("float32", "float32"), ("bfloat16", "bfloat16"),
                                               ("float16", "float8_e4m3fn"), ("bfloat16", "float8_e5m2")])
def test_reshape_and_cache(rng, dtype, cache_dtype):
    """Mapped slots hold the new tokens, every other slot its old contents (the
    caches are aliased with the results, and XLA copies them first here)."""
    blocks, page, hkv, d = 3, 5, 2, 64
    slots = np.array([7, -1, 0, 13, 14, -3, 2], np.int32)
    key, value = rand(rng, (len(slots), hkv, d), dtype), rand(rng, (len(slots), hkv, d), dtype)
    k_cache, v_cache = (rand(rng, (blocks, page, hkv, d), cache_dtype) for _ in range(2))
    k_new, v_new = jit(aj.reshape_and_cache, key, value, k_cache, v_cache, slots, k_scale=0.5, v_scale=0.25)
    if cache_dtype == dtype:
        stored_k, stored_v = key, value
    else:
        stored_k, stored_v = fp8_quantize(key, 0.5, cache_dtype), fp8_quantize(value, 0.25, cache_dtype)
    for new, old, stored in ((k_new, k_cache, stored_k), (v_new, v_cache, stored_v)):
        expected = f64(old).reshape(blocks * page, hkv, d)
        expected[slots[slots >= 0]] = f64(stored)[slots >= 0]
        np.testing.assert_array_equal(f64(new).reshape(expected.shape), expected)


# ---- GEMM ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_gemm_a16w16(rng, dtype, with_bias):
    m, n, k = 13, 33, 257
    a, w = rand(rng, (m, k), dtype), rand(rng, (n, k), dtype)
    bias = rand(rng, (n,), "float32") if with_bias else None
    out = jit(lambda a, w, b: aj.gemm_a16w16(a, w, b, out_dtype="float32"), a, w, bias)
    assert out.dtype == jnp.float32
    check_gemm(out, gemm_reference(a, w, bias), "float32", k)


@pytest.mark.parametrize("out_dtype", FLOAT_DTYPES)
def test_gemm_a8w8_int8(rng, out_dtype):
    m, n, k = 7, 29, 300
    a, w = rand_int8(rng, (m, k)), rand_int8(rng, (n, k))
    a_scale = (rng.random((m, 1)) / 256 + 1e-3).astype(np.float32)
    w_scale = (rng.random((1, n)) + 0.5).astype(np.float32)
    bias = rand(rng, (n,), out_dtype)
    out = jit(lambda *args: aj.gemm_a8w8(*args, out_dtype=out_dtype), a, w, a_scale, w_scale, bias)
    assert out.dtype == jnp.dtype(out_dtype)
    assert_close(out, gemm_reference(a, w, bias, a_scale, w_scale), out_dtype)


# ---- attention ------------------------------------------------------------------------------

@pytest.mark.parametrize("causal", [True, False])
def test_prefill_attention(rng, causal):
    from test_attention import cu_seqlens, prefill_ref
    cu = cu_seqlens([5, 0, 19])
    q, k, v = (rand(rng, (cu[-1], h, 64), "bfloat16") for h in (4, 2, 2))
    out, lse = jit(aj.prefill_attention, q, k, v, cu, causal=causal, softcap=0.0, return_lse=True)
    ref, ref_lse = prefill_ref(q, k, v, cu, cu, 64 ** -0.5, causal, with_lse=True)
    assert_close(out, ref, "bfloat16")
    np.testing.assert_allclose(f64(lse), ref_lse, rtol=1e-3, atol=1e-3)
    alone = jit(aj.prefill_attention, q, k, v, cu, causal=causal, softmax_scale=0.1)
    assert_close(alone, prefill_ref(q, k, v, cu, cu, 0.1, causal), "bfloat16")


@pytest.mark.parametrize("split", [False, True])
def test_paged_decode_attention(rng, split):
    """One pass, and split-KV with the workspace XLA allocates."""
    from test_attention import decode_ref, paged_layout
    lens = np.array([0, 1, 37, 16], np.int32)
    table, blocks = paged_layout(rng, lens, 8)
    k_cache, v_cache = (rand(rng, (blocks, 8, 2, 64), "float32") for _ in range(2))
    q = rand(rng, (4, 4, 64), "float32")
    fn = aj.paged_decode_attention_split_kv if split else aj.paged_decode_attention
    out = jit(fn, q, k_cache, v_cache, table, lens, window_left=9)
    assert_close(out, decode_ref(q, k_cache, v_cache, table, lens, 64 ** -0.5, 9), "float32")


# ---- MoE ------------------------------------------------------------------------------------

@pytest.mark.parametrize("scoring", ["softmax", "sigmoid"])
@pytest.mark.parametrize("renormalize", [False, True])
def test_topk_softmax_and_sigmoid(rng, scoring, renormalize):
    from test_moe_routing import WEIGHT_TOL, grouped_ref
    gating = rand(rng, (13, 24), "bfloat16", scale=3.0)
    fn = aj.topk_softmax if scoring == "softmax" else aj.topk_sigmoid
    weights, ids = jit(fn, gating, k=5, renormalize=renormalize)
    assert weights.dtype == jnp.float32 and ids.dtype == jnp.int32 and ids.shape == (13, 5)
    ref_w, ref_ids = grouped_ref(gating, 5, scoring=scoring, renormalize=renormalize)
    np.testing.assert_array_equal(np.asarray(ids), ref_ids)
    np.testing.assert_allclose(f64(weights), ref_w, **WEIGHT_TOL)


@pytest.mark.parametrize("biased", [False, True])
def test_grouped_topk(rng, biased):
    """grouped_topk (softmax) and biased_grouped_topk (DeepSeek-V3: sigmoid, bias)."""
    from test_moe_routing import WEIGHT_TOL, grouped_ref
    gating = rand(rng, (9, 32), "float32", scale=2.0)
    if biased:
        bias = rand(rng, (32,), "float32")
        weights, ids = jit(lambda g, b: aj.biased_grouped_topk(g, b, 4, 8, 3, routed_scaling_factor=2.5),
                           gating, bias)
        ref_w, ref_ids = grouped_ref(gating, 4, 8, 3, bias=bias, scoring="sigmoid", renormalize=True, scale=2.5)
    else:
        weights, ids = jit(aj.grouped_topk, gating, k=3, num_expert_group=4, topk_group=2, renormalize=False)
        ref_w, ref_ids = grouped_ref(gating, 3, 4, 2)
    np.testing.assert_array_equal(np.asarray(ids), ref_ids)
    np.testing.assert_allclose(f64(weights), ref_w, **WEIGHT_TOL)


@pytest.mark.parametrize("mask", [None, "bool", "int32"])
def test_moe_sorting(rng, mask):
    from test_moe_sorting import check_sorting, routed_ids
    experts, block = 10, 4
    ids = routed_ids(rng, 17, 3, experts)
    expert_mask = None if mask is None else (rng.random(experts) < 0.6).astype(mask)
    sorted_ids, block_experts, num_valid = jit(
        lambda i, m: aj.moe_sorting(i, experts, block, m), ids, expert_mask)
    assert sorted_ids.shape == (aiter.moe_sorting_max_rows(17, 3, experts, block),)
    check_sorting(ids, experts, block, np.asarray(sorted_ids), np.asarray(block_experts), np.asarray(num_valid),
                  mask=expert_mask)


@pytest.mark.parametrize("dtype,act,block", [("bfloat16", "silu", 0), ("float16", "gelu_tanh", 32)])
def test_fused_moe(rng, dtype, act, block):
    """XLA allocates the workspace (an extra result sized while tracing)."""
    from test_moe_fused import check_out, make_layer, moe_ref
    x, w1, w2, weights, ids = make_layer(rng, 11, 6, 2, 64, 48, dtype)
    out = jit(aj.fused_moe, x, w1, w2, weights, ids, activation=act, block_size=block)
    assert out.shape == x.shape and out.dtype == jnp.dtype(dtype)
    check_out(np.asarray(out), moe_ref(x, w1, w2, weights, ids, act), dtype)


def test_fused_moe_expert_mask_and_weights_on_input(rng):
    from test_moe_fused import check_out, make_layer, moe_ref
    x, w1, w2, weights, ids = make_layer(rng, 13, 8, 3, 64, 32, "bfloat16")
    mask = np.zeros(8, bool)
    mask[[1, 4, 5]] = True
    w1, w2 = w1[[1, 4, 5]], w2[[1, 4, 5]]
    out = jit(lambda *a: aj.fused_moe(*a, expert_mask=mask, weights_on_input=True), x, w1, w2, weights, ids)
    check_out(np.asarray(out), moe_ref(x, w1, w2, weights, ids, weights_on_input=True, mask=mask), "bfloat16")


@pytest.mark.parametrize("block", [False, True])
def test_fused_moe_fp8(rng, block):
    """Per-channel (fused_moe_fp8) and 128 x 128 block scales, as the table has them."""
    from test_moe_fp8 import TOL, fp8_layer, moe_fp8_ref
    case = (5, 4, 2, 256, 128) if block else (7, 5, 2, 64, 32)
    x, w1q, w2q, s1, s2, weights, ids = fp8_layer(rng, case, "bfloat16", "float8_e4m3fn", block=block)
    out = jit(aj.fused_moe_fp8, x, w1q, w2q, s1, s2, weights, ids)
    ref = moe_fp8_ref(x, w1q, w2q, s1, s2, weights, ids, "float8_e4m3fn")
    got = f64(np.asarray(out))
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, ref, rtol=TOL[0], atol=TOL[1] * (np.sqrt(np.mean(ref ** 2)) + 1e-30))


def test_moe_layer_in_one_jitted_function(rng):
    """Routing, then the experts, compiled together."""
    from test_moe_fused import check_out, make_layer, moe_ref
    from test_moe_routing import grouped_ref
    x, w1, w2, _, _ = make_layer(rng, 7, 8, 2, 64, 32, "bfloat16")
    router = rand(rng, (8, 64), "bfloat16")

    @jax.jit
    def layer(x, router, w1, w2):
        weights, ids = aj.topk_softmax(aj.gemm_a16w16(x, router, out_dtype="float32"), 2, renormalize=True)
        return aj.fused_moe(x, w1, w2, weights, ids), ids

    out, ids = layer(*(jax_cpu(a) for a in (x, router, w1, w2)))
    logits = (f64(x) @ f64(router).T).astype(np.float32)
    ref_w, ref_ids = grouped_ref(logits, 2, renormalize=True)
    np.testing.assert_array_equal(np.asarray(ids), ref_ids)
    check_out(np.asarray(out), moe_ref(x, w1, w2, ref_w.astype(np.float32), ref_ids, "silu"), "bfloat16")


# ---- MLA ------------------------------------------------------------------------------------

@pytest.mark.parametrize("s_q,cache_dtype,num_splits", [(1, None, 0), (2, "float8_e4m3fn", 3), (3, None, 1)])
def test_mla_decode(rng, s_q, cache_dtype, num_splits):
    from test_mla import check, make_case, mla_ref
    kv_scale = 0.02 if cache_dtype else 1.0
    q, cache, table, lens = make_case(rng, [5, 40, 0, 17], 16, 4, s_q, cache_dtype=cache_dtype,
                                      kv_scale=kv_scale)
    out, lse = jit(aj.mla_decode, q, cache, table, lens, softmax_scale=0.07, kv_scale=kv_scale,
                   num_splits=num_splits, return_lse=True)
    ref, ref_lse = mla_ref(q, cache, table, lens, 0.07, kv_scale)
    check(np.asarray(out), np.asarray(lse), ref, ref_lse, "bfloat16")
    alone = jit(aj.mla_decode, q, cache, table, lens, softmax_scale=0.07, kv_scale=kv_scale, num_splits=num_splits)
    assert isinstance(alone, jax.Array) and alone.shape == q.shape[:3] + (512,)
    assert_close(alone, ref, "bfloat16")


def test_mla_decode_workspace_size_from_shapes(rng):
    from test_mla import make_case
    q, cache, table, _ = make_case(rng, [33, 7], 16, 8, 2)
    for splits in (0, 1, 5):
        want = aiter.mla_decode_workspace_size(q, cache, table, splits)
        structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in (q, cache, table)]
        assert aj.mla_decode_workspace_size(*structs, num_splits=splits) == want
        assert aj.mla_decode_workspace_size(*(jax_cpu(a) for a in (q, cache, table)), splits) == want


@pytest.mark.parametrize("cache_dtype", ["bfloat16", "float8_e4m3fn"])
def test_concat_and_cache_mla(rng, cache_dtype):
    """Slots written, the rest of the cache as it was (copied by XLA: not donated)."""
    tokens, blocks, page = 9, 3, 8
    kv_c, k_pe = rand(rng, (tokens, 512), "bfloat16"), rand(rng, (tokens, 64), "bfloat16")
    slots = rng.permutation(blocks * page)[:tokens].astype(np.int32)
    slots[[1, 6]] = -1
    scale = 1.0 if cache_dtype == "bfloat16" else 0.05
    start = rand(rng, (blocks, page, 576), cache_dtype)
    got = jit(aj.concat_and_cache_mla, kv_c, k_pe, start, slots, scale=scale)
    rows = np.concatenate([kv_c, k_pe], axis=1)
    want = start.copy().reshape(blocks * page, 576)
    keep = slots >= 0
    want[slots[keep]] = rows[keep] if cache_dtype == "bfloat16" else fp8_quantize(rows[keep], scale, cache_dtype)
    assert (np.asarray(got).reshape(want.shape).view(np.uint8) == want.view(np.uint8)).all()


def test_mla_decode_step_with_donated_cache(rng):
    """One decode step in one jitted function: the new latents into the donated
    cache, then attention over it."""
    from test_mla import make_case, mla_ref
    q, cache, table, lens = make_case(rng, [6, 21], 8, 2, 1)
    new = rand(rng, (2, 576), "bfloat16")
    slots = np.array([table[b, (lens[b] - 1) // 8] * 8 + (lens[b] - 1) % 8 for b in range(2)], np.int32)
    @functools.partial(jax.jit, donate_argnums=(3,))
    def step(q, kv_c, k_pe, cache, table, lens, slots):
        cache = aj.concat_and_cache_mla(kv_c, k_pe, cache, slots)
        return aj.mla_decode(q, cache, table, lens, 0.1), cache

    out, new_cache = step(*(jax_cpu(a) for a in (q, new[:, :512], new[:, 512:], cache, table, lens, slots)))
    cache_ref = cache.copy().reshape(-1, 576)
    cache_ref[slots] = new
    np.testing.assert_array_equal(f64(new_cache).reshape(cache_ref.shape), f64(cache_ref))
    assert_close(out, mla_ref(q, cache_ref.reshape(cache.shape), table, lens, 0.1)[0], "bfloat16")


# ---- composition, eager use, vmap ---------------------------------------------------------

def test_ops_compose_in_one_jitted_function(rng):
    x, w = rand(rng, (6, 128), "float32"), rand(rng, (64,), "float32")

    @jax.jit
    def layer(x, w):
        return aj.rmsnorm(aj.silu_and_mul(x) * 2.0, w) + 1.0

    got = layer(jax_cpu(x), jax_cpu(w))
    assert_close(got, rms_ref(2.0 * gated_ref(x, silu_ref), f64(w), 1e-6) + 1.0, "float32")


def test_eager_call_and_vmap(rng):
    x, w = rand(rng, (4, 3, 50), "float32"), rand(rng, (50,), "float32")
    ref = rms_ref(f64(x), f64(w), 1e-6)
    assert_close(aj.rmsnorm(jax_cpu(x), jax_cpu(w)), ref, "float32")  # no jit: one op dispatched
    batched = jax.jit(jax.vmap(aj.rmsnorm, in_axes=(0, None)))(jax_cpu(x), jax_cpu(w))
    assert_close(batched, ref, "float32")


# ---- bad arguments ------------------------------------------------------------------------

def test_library_errors_name_the_argument(rng):
    """What libaiter finds when the computation runs comes back as JAX's runtime
    error with the library's message."""
    x = rand(rng, (4, 64), "float32")
    with pytest.raises(jax.errors.JaxRuntimeError, match="aiter_rmsnorm: weight: expected shape"):
        jit(aj.rmsnorm, x, rand(rng, (63,), "float32"))
    with pytest.raises(jax.errors.JaxRuntimeError, match="aiter_rmsnorm: x: expected dtype"):
        jit(aj.rmsnorm, x.astype(np.int32), rand(rng, (64,), "float32"))
    with pytest.raises(jax.errors.JaxRuntimeError, match="epsilon"):
        jit(aj.rmsnorm, x, rand(rng, (64,), "float32"), eps=-1.0)
    with pytest.raises(jax.errors.JaxRuntimeError, match="INVALID_ARGUMENT: aiter_silu_and_mul: "):
        jit(aj.silu_and_mul, rand(rng, (4, 7), "float32"))
    cache, q = reference_cache(8, 16).astype(np.float32), rand(rng, (3, 1, 16), "float32")
    with pytest.raises(jax.errors.JaxRuntimeError, match="positions"):
        jit(aj.rope, q, None, np.array([0, 8, 1], np.int32), cache)
    k_cache = rand(rng, (2, 4, 1, 64), "float32")
    with pytest.raises(jax.errors.JaxRuntimeError, match="slot_mapping"):
        jit(aj.reshape_and_cache, *(rand(rng, (2, 1, 64), "float32"),) * 2, k_cache, k_cache,
            np.array([0, 8], np.int32))


def test_trace_time_errors_use_aiters_exceptions(rng):
    """What the outputs' shapes and dtypes depend on is checked while tracing."""
    x = jax_cpu(rand(rng, (4, 64), "float32"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype: expected one of int8"):
        aj.rmsnorm_quant(x, x[0], dtype="float16")
    with pytest.raises(aiter.UnsupportedDtypeError, match="weight: unsupported dtype complex64"):
        jax.jit(aj.rmsnorm)(x, jnp.ones(64, jnp.complex64))
    with pytest.raises(aiter.InvalidArgumentError, match="style"):
        aj.rope(x.reshape(4, 1, 64), None, jnp.zeros(4, jnp.int32), x, style="llama")
    with pytest.raises(aiter.InvalidArgumentError, match="approximate"):
        aj.gelu_and_mul(x, approximate="fast")
    with pytest.raises(aiter.InvalidArgumentError, match="weight: expected an array, got None"):
        aj.rmsnorm(x, None)


def test_calls_that_bypass_aiter_jax_are_refused(rng):
    """The targets themselves refuse a call that does not fit them, naming what is wrong."""
    aj.register()
    x = jax_cpu(rand(rng, (2, 8), "float32"))
    like = jax.ShapeDtypeStruct(x.shape, x.dtype)
    with pytest.raises(jax.errors.JaxRuntimeError, match="aiter_rmsnorm: attribute eps"):
        jax.ffi.ffi_call("aiter_rmsnorm", like)(x, x[0])
    with pytest.raises(jax.errors.JaxRuntimeError, match="aiter_rmsnorm: expected at least 2 operands, got 1"):
        jax.ffi.ffi_call("aiter_rmsnorm", like)(x, eps=np.float32(1e-6))
    with pytest.raises(jax.errors.JaxRuntimeError, match="aiter_silu_and_mul: operand 0: element type PRED"):
        jax.ffi.ffi_call("aiter_silu_and_mul", jax.ShapeDtypeStruct((2, 4), jnp.bool_))(x > 0)


def test_a_missing_library_raises_aiters_error(monkeypatch, tmp_path):
    from aiter.jax import _targets
    monkeypatch.setenv("AITER_XLA_LIBRARY", str(tmp_path / "libaiter_xla.so"))
    with pytest.raises(aiter.AiterError, match="could not load libaiter_xla.so.*AITER_XLA_LIBRARY"):
        _targets._load()  # the loader itself: register() has already loaded the real one


# ---- GPU -----------------------------------------------------------------------------------

@pytest.mark.gpu
def test_on_a_jax_gpu(rng):
    """A few ops under jit on a JAX CUDA device: XLA's buffers and stream."""
    try:
        gpu = jax.devices("cuda")[0]
    except RuntimeError:
        pytest.skip("no JAX CUDA device")
    x, w = rand(rng, (9, 4096), "bfloat16"), rand(rng, (4096,), "bfloat16")
    q, cache = rand(rng, (9, 4, 128), "bfloat16"), reference_cache(64, 128).astype(np.float32)
    pos = rng.integers(0, 64, size=9).astype(np.int32)

    @jax.jit
    def step(x, w, q, pos, cache):
        h = aj.rmsnorm(x, w)
        out, scale = aj.silu_and_mul_quant(h, dtype="float8_e4m3fn")
        q_rot, _ = aj.rope(q, None, pos, cache)
        return h, out, scale, q_rot

    h, out, scale, q_rot = step(*[jax.device_put(a, gpu) for a in (x, w, q, pos, cache)])
    assert h.devices() == {gpu}
    assert_close(h, rms_ref(f64(x), f64(w), 1e-6), "bfloat16")
    check_silu_quant(np.asarray(out), scale, np.asarray(h), "float8_e4m3fn")
    assert_close(q_rot, rope_ref(f64(q), pos, f64(cache), "neox"), "bfloat16")


# Run in a fresh process: XLA reads XLA_FLAGS once, when its GPU backend starts.
# Command buffers on for custom calls, from one command up, and XLA's HLO and
# thunk sequence dumped so the test sees which calls XLA put into one.
_COMMAND_BUFFER_RUN = r"""
import os, sys
import numpy as np
dump, seed = sys.argv[1], int(sys.argv[2])
os.environ["XLA_FLAGS"] = ("--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1 "
                           f"--xla_dump_to={dump} --xla_dump_hlo_as_text")
import jax
import aiter.jax as aj
gpu = jax.devices("cuda")[0]
step = jax.jit(lambda x, w: aj.silu_and_mul(aj.rmsnorm(x, w)))
rng = np.random.default_rng(seed)
for i in range(3):  # fresh inputs each call: a replayed graph must recompute
    x, w = rng.standard_normal((9, 512)).astype(np.float32), rng.standard_normal(512).astype(np.float32)
    out = np.asarray(step(jax.device_put(x, gpu), jax.device_put(w, gpu)))
    np.savez(os.path.join(dump, f"call{i}.npz"), x=x, w=w, out=out)
"""


def dumped(dump, suffix):
    """A file XLA dumped for the jitted function; "" where it wrote none (it
    writes the thunk sequence after its passes only where they changed it)."""
    import glob
    paths = glob.glob(f"{dump}/*jit__lambda*{suffix}")
    return open(paths[0]).read() if paths else ""


def custom_calls_in_command_buffers(thunks):
    """How many custom-call thunks XLA nested in command-buffer thunks, from
    its dump of the thunk sequence (a nested thunk is indented below its parent)."""
    count, parent_indent = 0, None
    for line in thunks.splitlines():
        indent = len(line) - len(line.lstrip())
        if parent_indent is not None and indent <= parent_indent:
            parent_indent = None
        if "kCommandBuffer" in line:
            parent_indent = indent
        elif parent_indent is not None and "kCustomCall" in line:
            count += 1
    return count


@pytest.mark.gpu
def test_jax_gpu_calls_captured_into_cuda_graphs(rng, tmp_path):
    """XLA may trace aiter's calls into CUDA graphs (command buffers) and replay
    them: the targets say so, XLA does it, and the replays compute afresh."""
    import re
    import subprocess
    import sys
    try:
        jax.devices("cuda")
    except RuntimeError:
        pytest.skip("no JAX CUDA device")
    run = subprocess.run([sys.executable, "-c", _COMMAND_BUFFER_RUN, str(tmp_path), str(rng.integers(1 << 30))],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    targets = re.findall(r'custom_call_target="([^"]+)"', dumped(tmp_path, "gpu_after_optimizations.txt"))
    assert sorted(targets) == ["aiter_rmsnorm", "aiter_silu_and_mul"]  # the module's only custom calls
    assert custom_calls_in_command_buffers(dumped(tmp_path, "thunk_sequence_after_thunk_passes.txt")) == 2
    for i in range(3):
        call = np.load(tmp_path / f"call{i}.npz")
        h = rms_ref(f64(call["x"]), f64(call["w"]), 1e-6).astype(np.float32)
        assert_close(call["out"], gated_ref(h, silu_ref), "float32")
