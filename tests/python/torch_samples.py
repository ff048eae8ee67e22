"""Realistic inputs for every op of aiter.torch (CPU torch tensors, fresh
random values, odd sizes), and float64 checks of the results for the ops
whose references live in the other test files."""
import math

import torch

from gemm_helpers import reference as gemm_ref
from harness import assert_close, f64
from test_activation import gated_ref, gelu_tanh_ref, silu_ref
from test_attention import decode_ref, prefill_ref
from test_norm import rms_ref
from test_rope import reference_cache, rope_ref


def _randn(g, *shape, dtype=torch.float32, scale=1.0):
    return (torch.randn(*shape, generator=g) * scale).to(dtype)


def _paged(g, batch=3, hq=4, hkv=2, d=64, page=16, blocks=9, lens=(5, 33, 17)):
    q = _randn(g, batch, hq, d)
    k_cache, v_cache = _randn(g, blocks, page, hkv, d), _randn(g, blocks, page, hkv, d)
    table = torch.randperm(blocks, generator=g)[:batch * 3].reshape(batch, 3).to(torch.int32)
    return q, k_cache, v_cache, table, torch.tensor(lens, dtype=torch.int32)


def _workspace(q, k_cache, table):
    import aiter
    size = aiter.paged_decode_workspace_size(q.numpy(), k_cache.numpy(), table.numpy())
    return torch.empty(max(size // 4, 1), dtype=torch.float32)


def samples(g):
    """op name -> (args, kwargs) for torch.ops.aiter.<name>."""
    bf16, f32 = torch.bfloat16, torch.float32
    x = _randn(g, 5, 3, 96, dtype=bf16)
    w = _randn(g, 96, dtype=bf16)
    x2 = _randn(g, 7, 2 * 40)
    cache = torch.from_numpy(reference_cache(64, 32)).to(f32)
    a8 = torch.randint(-127, 128, (5, 160), generator=g, dtype=torch.int8)
    w8 = torch.randint(-127, 128, (33, 160), generator=g, dtype=torch.int8)
    fa = _randn(g, 5, 200).to(torch.float8_e4m3fn)
    fw = _randn(g, 130, 200).to(torch.float8_e4m3fn)
    cu = torch.tensor([0, 5, 12], dtype=torch.int32)
    q, k_cache, v_cache, table, lens = _paged(g)
    return {
        "rmsnorm": ((x, w, 1e-5), {}),
        "add_rmsnorm": ((x, _randn(g, 5, 3, 96, dtype=bf16), w), {}),
        "layernorm": ((x, w, _randn(g, 96, dtype=bf16)), {}),
        "rmsnorm_quant": ((x, w, 1e-6, torch.int8), {}),
        "add_rmsnorm_quant": ((x, _randn(g, 5, 3, 96, dtype=bf16), w, 1e-6, torch.float8_e4m3fn), {}),
        "silu_and_mul": ((x2,), {}),
        "gelu_and_mul": ((x2, "tanh"), {}),
        "silu_and_mul_quant": ((x2, torch.int8), {}),
        "quant_per_tensor": ((x2, torch.float8_e4m3fn), {}),
        "quant_per_token": ((x2, torch.int8), {}),
        "quant_per_tensor_static": ((x2, torch.tensor([0.02]), torch.int8), {}),
        "rope": ((_randn(g, 9, 4, 48), _randn(g, 9, 2, 48), torch.randint(0, 64, (9,), generator=g), cache, "neox"),
                 {}),
        "topk_softmax": ((_randn(g, 11, 8), 2, True), {}),
        "gemm_a16w16": ((_randn(g, 5, 72, dtype=bf16), _randn(g, 33, 72, dtype=bf16), _randn(g, 33)), {}),
        "gemm_a8w8": ((a8, w8, torch.rand(5, 1, generator=g) / 50, torch.rand(1, 33, generator=g) / 50, None, bf16),
                      {}),
        "gemm_a8w8_blockscale": ((fa, fw, torch.rand(5, 2, generator=g), torch.rand(2, 2, generator=g), f32), {}),
        "batched_gemm_a16w16": ((_randn(g, 2, 5, 40), _randn(g, 2, 9, 40)), {}),
        "batched_gemm_a8w8": ((a8.reshape(1, 5, 160), w8.reshape(1, 33, 160), torch.rand(1, 5, 1, generator=g),
                               torch.rand(1, 1, 33, generator=g), None, f32), {}),
        "prefill_attention": ((_randn(g, 12, 4, 64), _randn(g, 12, 2, 64), _randn(g, 12, 2, 64), cu), {}),
        "paged_decode_attention": ((q, k_cache, v_cache, table, lens), {}),
        "paged_decode_attention_split_kv": ((q, k_cache, v_cache, table, lens, _workspace(q, k_cache, table)), {}),
        "paged_prefill_attention": ((_randn(g, 12, 4, 64), k_cache, v_cache, table[:2], torch.tensor(
            [20, 30], dtype=torch.int32), cu), {}),
        "reshape_and_cache": ((_randn(g, 6, 2, 64), _randn(g, 6, 2, 64), k_cache.clone(), v_cache.clone(),
                               torch.tensor([3, 17, -1, 40, 41, 100])), {}),
        **_mla_samples(g),
        **_moe_samples(g),
    }


def _mla_samples(g):
    q = _randn(g, 3, 2, 5, 576, dtype=torch.bfloat16)
    cache = _randn(g, 6, 16, 576, dtype=torch.bfloat16)
    table = torch.randperm(6, generator=g)[:6].reshape(3, 2).to(torch.int32)
    lens = torch.tensor([17, 1, 32], dtype=torch.int32)
    kv_c, k_pe = _randn(g, 4, 512, dtype=torch.bfloat16), _randn(g, 4, 64, dtype=torch.bfloat16)
    return {"mla_decode": ((q, cache, table, lens, 0.05), {}),
            "concat_and_cache_mla": ((kv_c, k_pe, cache.clone(), torch.tensor([3, -1, 90, 40])), {})}


def _moe_samples(g):
    from aiter.ops.moe import fused_moe_workspace_size
    x, ids = _randn(g, 7, 32, dtype=torch.bfloat16), torch.randint(0, 6, (7, 2), generator=g, dtype=torch.int32)
    w1, w2 = _randn(g, 6, 32, 32, dtype=torch.bfloat16, scale=0.2), _randn(g, 6, 32, 16, dtype=torch.bfloat16, scale=0.2)
    workspace = torch.zeros(fused_moe_workspace_size(7, 2, 6, 32, 16), dtype=torch.uint8)
    return {"topk_sigmoid": ((_randn(g, 11, 8), 3, True), {}),
            "grouped_topk": ((_randn(g, 9, 16), 3, 4, 2, torch.zeros(16), "sigmoid", True, 2.5), {}),
            "moe_sorting": ((ids, 6, 4), {}),
            "fused_moe": ((x, w1, w2, torch.rand(7, 2, generator=g), ids, workspace), {}),
            "fused_moe_fp8": ((x, w1.float().to(torch.float8_e4m3fn), w2.float().to(torch.float8_e4m3fn),
                               torch.rand(6, 32, generator=g) / 4 + 0.5, torch.rand(6, 32, generator=g) / 4 + 0.5,
                               torch.rand(7, 2, generator=g), ids,
                               torch.zeros(fused_moe_workspace_size(7, 2, 6, 32, 16, elem_bytes=1),
                                           dtype=torch.uint8)), {})}


def check(name, args, result):
    """Compares the result of op ``name`` (called on copies of ``args``) with a
    float64 reference; returns False where this file has none for the op."""
    checker = _CHECKS.get(name)
    if checker is None:
        return False
    checker(args, result)
    return True


def _check_rmsnorm(args, out):
    x, w, eps = args
    assert_close(out, rms_ref(f64(x), f64(w), eps), "bfloat16")


def _check_silu(args, out):
    assert_close(out, gated_ref(args[0], silu_ref), "float32")


def _check_gelu(args, out):
    assert_close(out, gated_ref(args[0], gelu_tanh_ref), "float32")


def _check_gemm16(args, out):
    a, w, bias = args
    assert_close(out, gemm_ref(a, w, bias), "bfloat16", rtol=2e-2, atol=5e-2 * math.sqrt(a.shape[1]))


def _check_gemm8(args, out):
    a, w, a_scale, w_scale = args[:4]
    assert_close(out, gemm_ref(a, w, None, a_scale, w_scale), "bfloat16")


def _check_prefill(args, result):
    q, k, v, cu = args
    out, lse = result
    ref_out, ref_lse = prefill_ref(q, k, v, cu.tolist(), cu.tolist(), 1 / math.sqrt(q.shape[-1]), with_lse=True)
    assert_close(out, ref_out, "float32")
    assert_close(lse, ref_lse, "float32")


def _check_mla(args, result):
    from test_mla import mla_ref
    q, cache, table, lens, scale = args[:5]
    ref_out, ref_lse = mla_ref(q, cache, table.cpu().numpy(), lens.tolist(), scale)
    assert_close(result[0], ref_out, "bfloat16")
    assert_close(result[1], ref_lse, "float32", rtol=1e-4, atol=1e-4)


def _check_decode(args, out):
    q, k_cache, v_cache, table, lens = args[:5]
    ref = decode_ref(q, k_cache, v_cache, table.cpu().numpy(), lens.tolist(), 1 / math.sqrt(q.shape[-1]))
    assert_close(out, ref, "float32")


def _check_grouped_topk(args, result):
    from test_moe_routing import grouped_ref
    gating, k, groups, topk_group, bias, scoring, renorm, scale = args
    w, ids = grouped_ref(gating.cpu().numpy(), k, groups, topk_group, bias.cpu().numpy(), scoring, renorm, scale)
    assert torch.equal(result[1].cpu(), torch.from_numpy(ids).to(torch.int32))
    assert_close(result[0], w, "float32", rtol=2e-5, atol=1e-6)


def _check_fused_moe(args, out):
    from test_moe_fused import check_out, moe_ref
    x, w1, w2, weights, ids, _ = args
    f = lambda t: f64(t.float().cpu().numpy())  # noqa: E731
    check_out(out.float().cpu().numpy(), moe_ref(f(x), f(w1), f(w2), f(weights), ids.cpu().numpy()), "bfloat16")


_CHECKS = {"rmsnorm": _check_rmsnorm, "silu_and_mul": _check_silu, "gelu_and_mul": _check_gelu,
           "gemm_a16w16": _check_gemm16, "gemm_a8w8": _check_gemm8, "prefill_attention": _check_prefill,
           "paged_decode_attention": _check_decode, "paged_decode_attention_split_kv": _check_decode,
           "mla_decode": _check_mla, "grouped_topk": _check_grouped_topk, "fused_moe": _check_fused_moe}



def rope_checked(g):
    """Rotates fresh q and k with torch.ops.aiter.rope and checks them (in place)."""
    q, k = _randn(g, 9, 4, 48), _randn(g, 9, 2, 48)
    positions = torch.randint(0, 64, (9,), generator=g)
    cache64 = reference_cache(64, 32)
    q_ref, k_ref = rope_ref(f64(q), positions.numpy(), cache64, "gptj"), rope_ref(f64(k), positions.numpy(), cache64,
                                                                                   "gptj")
    torch.ops.aiter.rope(q, k, positions, torch.from_numpy(cache64).float(), "gptj")
    assert_close(q, q_ref, "float32")
    assert_close(k, k_ref, "float32")
