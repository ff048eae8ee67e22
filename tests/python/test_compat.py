"""aiter.compat: AITER's entry points with AITER's argument forms (as vLLM and
SGLang call them), against float64 references, on CPU torch tensors."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import aiter  # noqa: E402
import aiter.compat as compat  # noqa: E402
from gemm_helpers import reference as gemm_ref  # noqa: E402
from harness import QMAX, assert_close, check_quantized, f64  # noqa: E402
from test_activation import gated_ref, gelu_ref, gelu_tanh_ref, silu_ref  # noqa: E402
from test_attention import decode_ref, prefill_ref  # noqa: E402
from test_attention_split import paged_prefill_ref  # noqa: E402
from test_norm import rms_ref  # noqa: E402
from test_rope import reference_cache, rope_ref  # noqa: E402


@pytest.fixture
def g():
    return torch.Generator().manual_seed(int(np.random.default_rng().integers(2**31)))


def randn(g, *shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g).to(dtype)


def nan_like(t, dtype=None):
    return torch.full(t.shape, float("nan"), dtype=dtype or t.dtype)


PLAIN = ("flash_attn_varlen_func", "mla_decode_fwd")  # return types by return_lse: not registered


def test_every_name_is_exported_and_registered():
    for name in compat.__all__[1:]:
        assert callable(getattr(compat, name)), name
        if name not in PLAIN:
            assert hasattr(torch.ops.aiter_compat, name), name


@pytest.mark.parametrize("function", ["rms_norm", "rmsnorm2d_fwd"])
def test_rms_norm(g, function):
    x, w = randn(g, 7, 3, 200, dtype=torch.bfloat16), randn(g, 200, dtype=torch.bfloat16)
    out = getattr(compat, function)(x, w, 1e-6)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), "bfloat16")
    assert_close(getattr(torch.ops.aiter_compat, function)(x, w, 1e-6), f64(out), "bfloat16", rtol=0, atol=0)


def test_rmsnorm2d_fwd_with_add_in_place_as_vllm(g):
    # vLLM's fused_add_rms_norm: out into the input's buffer, residual updated in place.
    x, r, w = randn(g, 9, 136), randn(g, 9, 136), randn(g, 136)
    added = f64(x) + f64(r)
    out = nan_like(x)
    compat.rmsnorm2d_fwd_with_add(out, x, r, r, w, 1e-5)
    assert_close(r, added, "float32")
    assert_close(out, rms_ref(added, f64(w), 1e-5), "float32")


@pytest.mark.parametrize("qdtype", ["int8", "float8_e4m3fn"])
@pytest.mark.parametrize("add", [False, True])
def test_rmsnorm_dynamicquant(g, qdtype, add):
    x, r, w = randn(g, 6, 160), randn(g, 6, 160), randn(g, 160)
    out = torch.empty(6, 160, dtype=getattr(torch, qdtype))
    yscale = nan_like(torch.empty(6, 1))
    y_in = f64(x) + f64(r) if add else f64(x)
    if add:
        r_out = nan_like(x)
        compat.rmsnorm2d_fwd_with_add_dynamicquant(out, x, r, r_out, yscale, w, 1e-6)
        assert_close(r_out, y_in, "float32")
    else:
        compat.rmsnorm2d_fwd_with_dynamicquant(out, x, yscale, w, 1e-6)
    y = rms_ref(y_in, f64(w), 1e-6)
    np.testing.assert_allclose(f64(yscale), np.abs(y).max(-1, keepdims=True) / QMAX[qdtype], rtol=1e-5)
    check_quantized(out, y, f64(yscale), qdtype, x_rel=1e-5)


def test_layernorm2d_fwd(g):
    x, w, b = randn(g, 5, 99), randn(g, 99), randn(g, 99)
    x64 = f64(x)
    ref = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * f64(w) + f64(b)
    assert_close(compat.layernorm2d_fwd(x, w, b), ref, "float32", atol=1e-4)


@pytest.mark.parametrize("name, act", [("silu_and_mul", silu_ref), ("gelu_and_mul", gelu_ref),
                                       ("gelu_tanh_and_mul", gelu_tanh_ref)])
def test_gated_activations_write_out(g, name, act):
    x = randn(g, 11, 2 * 53, dtype=torch.float16)
    out = nan_like(torch.empty(11, 53, dtype=torch.float16))
    assert getattr(compat, name)(out, x) is None
    assert_close(out, gated_ref(x, act), "float16")


@pytest.mark.parametrize("qdtype", ["int8", "float8_e4m3fn"])
def test_quant_entry_points(g, qdtype):
    x = randn(g, 13, 77) * 3
    x64, qmax = f64(x), QMAX[qdtype]
    out, scales = torch.empty(13, 77, dtype=getattr(torch, qdtype)), nan_like(torch.empty(13))
    compat.dynamic_per_token_scaled_quant(out, x, scales)  # [M] scales, as engines allocate them
    np.testing.assert_allclose(f64(scales), np.abs(x64).max(-1) / qmax, rtol=1e-6)
    check_quantized(out, x64, f64(scales)[:, None], qdtype)
    scale = nan_like(torch.empty(1))
    compat.dynamic_per_tensor_quant(out, x, scale)
    np.testing.assert_allclose(f64(scale), [np.abs(x64).max() / qmax], rtol=1e-6)
    check_quantized(out, x64, f64(scale), qdtype)
    compat.static_per_tensor_quant(out, x, torch.tensor([0.05]))
    check_quantized(out, x64, np.float64(np.float32(0.05)), qdtype, x_rel=1e-6)


@pytest.mark.parametrize("is_neox", [True, False])
def test_rotary_embedding_fwd_on_flat_heads(g, is_neox):
    t, hq, hk, d, rot = 9, 4, 2, 64, 32
    q, k = randn(g, t, hq * d), randn(g, t, hk * d)
    positions = torch.randint(0, 40, (t,), generator=g)
    cache = reference_cache(40, rot)
    style = "neox" if is_neox else "gptj"
    q_ref = rope_ref(f64(q).reshape(t, hq, d), positions.numpy(), cache, style)
    k_ref = rope_ref(f64(k).reshape(t, hk, d), positions.numpy(), cache, style)
    cos, sin = torch.from_numpy(cache[:, :rot // 2]).float(), torch.from_numpy(cache[:, rot // 2:]).float()
    compat.rotary_embedding_fwd(positions, q, k, d, cos, sin, is_neox, False)
    assert_close(q.reshape(t, hq, d), q_ref, "float32")
    assert_close(k.reshape(t, hk, d), k_ref, "float32")


@pytest.mark.parametrize("function", ["reshape_and_cache", "reshape_and_cache_flash"])
def test_reshape_and_cache(g, function):
    blocks, page, h, d = 5, 16, 2, 64
    key, value = randn(g, 7, h, d), randn(g, 7, h, d)
    kc, vc = randn(g, blocks, page, h, d), randn(g, blocks, page, h, d)
    slots = torch.tensor([0, 17, -1, 33, 79, 5, 64])
    k_ref, v_ref = f64(kc).reshape(-1, h, d), f64(vc).reshape(-1, h, d)
    for t, s in enumerate(slots.tolist()):
        if s >= 0:
            k_ref[s], v_ref[s] = f64(key[t]), f64(value[t])
    getattr(compat, function)(key, value, kc, vc, slots, "auto", torch.tensor([1.0]), torch.tensor([1.0]))
    assert_close(kc.reshape(-1, h, d), k_ref, "float32", rtol=0, atol=0)
    assert_close(vc.reshape(-1, h, d), v_ref, "float32", rtol=0, atol=0)


def test_reshape_and_cache_refuses_the_5d_layout(g):
    with pytest.raises(aiter.InvalidArgumentError, match="reshape_and_cache: key_cache: .*5-dim"):
        compat.reshape_and_cache(randn(g, 2, 2, 64), randn(g, 2, 2, 64), torch.zeros(3, 2, 8, 16, 8),
                                 torch.zeros(3, 2, 64, 16), torch.tensor([0, 1]), "auto")


@pytest.mark.parametrize("renorm", [False, True])
def test_topk_softmax(g, renorm):
    t, e, k = 10, 8, 3
    gating = randn(g, t, e)
    weights, ids = nan_like(torch.empty(t, k)), torch.full((t, k), -1, dtype=torch.int64)
    token_expert = torch.full((t, k), -1, dtype=torch.int32)
    compat.topk_softmax(weights, ids, token_expert, gating, renorm)
    p = np.exp(f64(gating) - f64(gating).max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    order = np.argsort(-p, axis=-1, kind="stable")[:, :k]
    ref = np.take_along_axis(p, order, -1)
    ref = ref / ref.sum(-1, keepdims=True) if renorm else ref
    assert np.array_equal(ids.numpy(), order)
    assert_close(weights, ref, "float32")
    assert np.array_equal(token_expert.numpy(), np.arange(k)[None, :] * t + np.arange(t)[:, None])


def test_gemm_a8w8_ck_per_token_per_channel(g):
    xq = torch.randint(-127, 128, (5, 96), generator=g, dtype=torch.int8)
    wq = torch.randint(-127, 128, (40, 96), generator=g, dtype=torch.int8)
    xs, ws = torch.rand(5, 1, generator=g) / 100, torch.rand(40, 1, generator=g) / 100  # vLLM keeps w_scale [N, 1]
    out = compat.gemm_a8w8_CK(xq, wq, xs, ws, None, torch.bfloat16)
    assert out.dtype == torch.bfloat16
    assert_close(out, gemm_ref(xq, wq, None, xs, ws.reshape(1, -1)), "bfloat16")


def test_gemm_a8w8_blockscale(g):
    m, n, k = 3, 200, 300
    xq, wq = randn(g, m, k).to(torch.float8_e4m3fn), randn(g, n, k).to(torch.float8_e4m3fn)
    xs, ws = torch.rand(m, 3, generator=g), torch.rand(2, 3, generator=g)
    out = compat.gemm_a8w8_blockscale(xq, wq, xs, ws, torch.float32)
    a64, w64 = f64(xq), f64(wq)
    ref = np.zeros((m, n))
    for grp in range(3):
        cols = slice(grp * 128, min(k, grp * 128 + 128))
        part = a64[:, cols] @ w64[:, cols].T
        ref += part * f64(xs)[:, grp:grp + 1] * np.repeat(f64(ws)[:, grp], 128)[:n][None, :]
    assert_close(out, ref, "float32", rtol=1e-5, atol=1e-3)


def test_gemm_a16w16_keeps_leading_dims(g):
    a, b, bias = randn(g, 2, 3, 72, dtype=torch.bfloat16), randn(g, 24, 72, dtype=torch.bfloat16), randn(g, 24)
    out = compat.gemm_a16w16(a, b, bias, torch.float32)
    assert out.shape == (2, 3, 24) and out.dtype == torch.float32
    assert_close(out.reshape(6, 24), gemm_ref(a.reshape(6, 72), b, bias), "float32", rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("return_lse", [False, True])
def test_flash_attn_varlen_func(g, return_lse):
    cu = torch.tensor([0, 5, 17], dtype=torch.int32)
    q, k, v = randn(g, 17, 4, 64), randn(g, 17, 2, 64), randn(g, 17, 2, 64)
    result = compat.flash_attn_varlen_func(q, k, v, cu, cu, 12, 12, softmax_scale=0.1, causal=True,
                                           return_lse=return_lse)
    ref_out, ref_lse = prefill_ref(q, k, v, cu.tolist(), cu.tolist(), 0.1, causal=True, with_lse=True)
    out = result[0] if return_lse else result
    assert_close(out, ref_out, "float32")
    if return_lse:
        assert_close(result[1], ref_lse.T, "float32")


def test_flash_attn_varlen_func_over_a_paged_cache(g):
    blocks, page = 6, 16
    kc, vc = randn(g, blocks, page, 2, 64), randn(g, blocks, page, 2, 64)
    table = torch.tensor([[3, 1], [0, 5]], dtype=torch.int32)
    cu_q, cu_k = torch.tensor([0, 3, 7], dtype=torch.int32), torch.tensor([0, 20, 29], dtype=torch.int32)
    q = randn(g, 7, 4, 64)
    out = compat.flash_attn_varlen_func(q, kc, vc, cu_q, cu_k, 4, 20, causal=True, block_table=table)
    ref, _ = paged_prefill_ref(q, kc, vc, table.numpy(), [20, 9], cu_q.tolist(), 1 / 8)
    assert_close(out, ref, "float32")


def test_paged_attention_v1_decode_and_sliding_window(g):
    kc, vc = randn(g, 8, 16, 2, 64), randn(g, 8, 16, 2, 64)
    table = torch.tensor([[7, 2, 4], [1, 0, 6]], dtype=torch.int32)
    lens = torch.tensor([40, 9], dtype=torch.int32)
    q = randn(g, 2, 4, 64)
    one = torch.tensor([1.0])
    for window in (0, 10):
        out = nan_like(q)
        result = compat.paged_attention_v1(out, torch.empty(1), q, kc, vc, 0.125, table, None, lens, 40, None, "auto",
                                           "NHD", 0.0, one, one, sliding_window=window)
        assert result is out
        ref = decode_ref(q, kc, vc, table.numpy(), lens.tolist(), 0.125, window_left=window - 1 if window else -1)
        assert_close(out, ref, "float32")


def test_unsupported_aiter_options_name_function_and_argument(g):
    x, w = randn(g, 2, 64), randn(g, 64)
    with pytest.raises(aiter.InvalidArgumentError, match="rms_norm: use_model_sensitive_rmsnorm=1"):
        compat.rms_norm(x, w, 1e-6, 1)
    with pytest.raises(aiter.InvalidArgumentError, match="paged_attention_v1: kv_cache_layout='HND'"):
        compat.paged_attention_v1(x, x, x, x, x, 1.0, x, None, x, 1, None, "auto", "HND", 0.0, x, x)


def test_compat_ops_compile_with_no_graph_break(g):
    torch._dynamo.reset()

    def block(x, r, w, up):
        out = torch.empty_like(x)
        compat.rmsnorm2d_fwd_with_add(out, x, r, r, w, 1e-6)
        act = torch.empty(up.shape[0], up.shape[1] // 2)
        torch.ops.aiter_compat.silu_and_mul(act, up)
        return out, act

    x, r, w, up = randn(g, 4, 64), randn(g, 4, 64), randn(g, 64), randn(g, 4, 96)
    r_eager = r.clone()
    eager = block(x, r_eager, w, up)
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")(x, r, w, up)
    for c, e in zip(compiled, eager):
        assert torch.equal(c, e)
    assert torch.equal(r, r_eager)
    assert math.isfinite(float(compiled[0].sum()))


def compat_samples(g):
    """torch.ops.aiter_compat.<name> -> arguments, as engines pass them (int8 where
    AITER takes int8 or fp8: opcheck compares inputs with allclose, which CPU fp8 lacks)."""
    x, r, w = randn(g, 6, 128), randn(g, 6, 128), randn(g, 128)
    i8 = torch.empty(6, 128, dtype=torch.int8)
    up = randn(g, 6, 2 * 40)
    kc, vc = randn(g, 4, 16, 2, 64), randn(g, 4, 16, 2, 64)
    table, lens = torch.tensor([[2, 0], [1, 3]], dtype=torch.int32), torch.tensor([20, 7], dtype=torch.int32)
    cache = reference_cache(32, 64)
    cos, sin = torch.from_numpy(cache[:, :32]).float(), torch.from_numpy(cache[:, 32:]).float()
    xq = torch.randint(-127, 128, (5, 64), generator=g, dtype=torch.int8)
    wq = torch.randint(-127, 128, (24, 64), generator=g, dtype=torch.int8)
    one = torch.tensor([1.0])
    return {
        "rms_norm": (x, w, 1e-6), "rmsnorm2d_fwd": (x, w, 1e-6),
        "rmsnorm2d_fwd_with_add": (torch.empty_like(x), x, r, torch.empty_like(r), w, 1e-6),
        "rmsnorm2d_fwd_with_dynamicquant": (i8, x, torch.empty(6, 1), w, 1e-6),
        "rmsnorm2d_fwd_with_add_dynamicquant": (i8, x, r, torch.empty_like(r), torch.empty(6, 1), w, 1e-6),
        "layernorm2d_fwd": (x, w, randn(g, 128), 1e-5),
        "silu_and_mul": (torch.empty(6, 40), up), "gelu_and_mul": (torch.empty(6, 40), up),
        "gelu_tanh_and_mul": (torch.empty(6, 40), up),
        "dynamic_per_token_scaled_quant": (i8, x, torch.empty(6, 1)),
        "dynamic_per_tensor_quant": (i8, x, torch.empty(1)), "static_per_tensor_quant": (i8, x, torch.tensor([0.03])),
        "rotary_embedding_fwd": (torch.randint(0, 32, (6,), generator=g), randn(g, 6, 4 * 64), randn(g, 6, 2 * 64), 64,
                                 cos, sin, True, False),
        "reshape_and_cache": (randn(g, 3, 2, 64), randn(g, 3, 2, 64), kc.clone(), vc.clone(), torch.tensor([5, -1, 40]),
                              "auto", one, one),
        "reshape_and_cache_flash": (randn(g, 3, 2, 64), randn(g, 3, 2, 64), kc.clone(), vc.clone(),
                                    torch.tensor([1, 2, 63]), "auto", one, one),
        "topk_softmax": (torch.empty(6, 2), torch.empty(6, 2, dtype=torch.int32), torch.empty(6, 2, dtype=torch.int32),
                         randn(g, 6, 8), True),
        **moe_compat_samples(g),
        "gemm_a8w8_CK": (xq, wq, torch.rand(5, 1, generator=g), torch.rand(1, 24, generator=g), None, torch.float32),
        "gemm_a8w8_blockscale": None,  # fp8 only: covered by test_gemm_a8w8_blockscale
        "gemm_a16w16": (randn(g, 2, 3, 64), randn(g, 24, 64), None, torch.float32),
        "paged_attention_v1": (torch.empty(2, 4, 64), torch.empty(1), randn(g, 2, 4, 64), kc, vc, 0.125, table, None,
                               lens, 20, None, "auto", "NHD", 0.0, one, one),
        "concat_and_cache_mla": (randn(g, 3, 512, dtype=torch.bfloat16), randn(g, 3, 64, dtype=torch.bfloat16),
                                 torch.zeros(2, 4, 576, dtype=torch.bfloat16), torch.tensor([5, -1, 7]), "auto", one),
    }


def moe_compat_samples(g):
    ids = torch.tensor([[0, 3], [2, 3], [1, 0]], dtype=torch.int32)
    rows = 6 + 4 * 4 - 2
    x, w1, w2 = randn(g, 3, 32).to(torch.bfloat16), randn(g, 4, 32, 32).to(torch.bfloat16), randn(g, 4, 32, 16).to(
        torch.bfloat16)
    return {"grouped_topk": (randn(g, 5, 16), torch.empty(5, 3), torch.empty(5, 3, dtype=torch.int32), 4, 2, True),
            "biased_grouped_topk": (randn(g, 5, 16), randn(g, 16), torch.empty(5, 3),
                                    torch.empty(5, 3, dtype=torch.int32), 4, 2, True),
            "moe_sorting_fwd": (ids, torch.rand(3, 2, generator=g), torch.empty(rows, dtype=torch.int32),
                                torch.empty(rows), torch.empty(rows // 4 + 1, dtype=torch.int32),
                                torch.empty(2, dtype=torch.int32), torch.empty(3, 8), 4, 4),
            "fused_moe": (x, w1, w2, torch.rand(3, 2, generator=g), ids)}


@pytest.mark.parametrize("name", [n for n in compat.__all__[1:] if n not in PLAIN])
def test_opcheck_registered_compat_ops(g, name):
    args = compat_samples(g)[name]
    if args is None:
        pytest.skip("fp8-only op: opcheck's input comparison needs CPU fp8 arithmetic")
    torch.library.opcheck(getattr(torch.ops.aiter_compat, name).default, args)


def test_cache_write_and_paged_attention_compile_with_no_graph_break(g):
    torch._dynamo.reset()
    one = torch.tensor([1.0])
    table, lens = torch.tensor([[1, 0]], dtype=torch.int32), torch.tensor([18], dtype=torch.int32)

    def step(key, value, kc, vc, slots, q):
        compat.reshape_and_cache(key, value, kc, vc, slots, "auto", one, one)
        out = torch.empty_like(q)
        return compat.paged_attention_v1(out, torch.empty(1), q, kc, vc, 0.125, table, None, lens, 18, None, "auto",
                                         "NHD", 0.0, one, one)

    args = (randn(g, 2, 2, 64), randn(g, 2, 2, 64), randn(g, 2, 16, 2, 64), randn(g, 2, 16, 2, 64),
            torch.tensor([16, 17]), randn(g, 1, 4, 64))
    eager_args = [a.clone() for a in args]
    eager = step(*eager_args)
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")(*args)
    assert torch.equal(compiled, eager)
    assert torch.equal(args[2], eager_args[2]) and torch.equal(args[3], eager_args[3])
    ref = decode_ref(args[5], args[2], args[3], table.numpy(), [18], 0.125)
    assert_close(compiled, ref, "float32")
