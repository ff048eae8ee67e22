"""aiter.compat's MoE entry points (AITER's names and layouts) against the
float64 references of the MoE tests."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import aiter.compat as compat  # noqa: E402
from harness import assert_close, f64  # noqa: E402
from test_moe_fused import check_out, moe_ref  # noqa: E402
from test_moe_routing import grouped_ref  # noqa: E402


@pytest.fixture
def g():
    return torch.Generator().manual_seed(int(torch.randint(0, 2**31, ()).item()))


def test_biased_and_plain_grouped_topk(g):
    gating, bias = torch.randn(9, 64, generator=g), torch.randn(64, generator=g) / 10
    w, ids = torch.full((9, 6), float("nan")), torch.full((9, 6), -1, dtype=torch.int64)
    compat.biased_grouped_topk(gating, bias, w, ids, 8, 3, True, 2.5)
    ref_w, ref_ids = grouped_ref(gating.numpy(), 6, 8, 3, bias.numpy(), "sigmoid", True, 2.5)
    assert np.array_equal(ids.numpy(), ref_ids)
    assert_close(w, ref_w, "float32", rtol=2e-5, atol=1e-6)
    ids32 = torch.full((9, 6), -1, dtype=torch.int32)
    compat.grouped_topk(gating, w, ids32, 8, 3, False, "softmax", 1.0)
    ref_w, ref_ids = grouped_ref(gating.numpy(), 6, 8, 3, None, "softmax", False, 1.0)
    assert np.array_equal(ids32.numpy(), ref_ids)
    assert_close(w, ref_w, "float32", rtol=2e-5, atol=1e-6)


def test_moe_sorting_fwd_layout(g):
    tokens, k, experts, unit = 13, 3, 8, 4
    ids = torch.stack([torch.randperm(experts, generator=g)[:k] for _ in range(tokens)]).to(torch.int32)
    weights = torch.rand(tokens, k, generator=g)
    rows = tokens * k + experts * unit - k
    out = (torch.full((rows,), -5, dtype=torch.int32), torch.full((rows,), float("nan")),
           torch.full((-(-rows // unit),), -5, dtype=torch.int32), torch.full((2,), -5, dtype=torch.int32),
           torch.full((tokens, 16), float("nan")))
    compat.moe_sorting_fwd(ids, weights, *out, experts, unit)
    sorted_ids, sorted_w, experts_of, valid, buf = out
    assert valid[1] == tokens and (buf == 0).all()
    row = 0
    for e in range(experts):
        t, j = np.nonzero(ids.numpy() == e)
        padded = -(-len(t) // unit) * unit
        assert np.array_equal(sorted_ids[row:row + len(t)].numpy(), (j << 24) | t)
        assert_close(sorted_w[row:row + len(t)], weights.numpy()[t, j], "float32")
        assert (sorted_ids[row + len(t):row + padded] == (k << 24) | tokens).all()
        assert (sorted_w[row + len(t):row + padded] == 0).all()
        assert (experts_of[row // unit:(row + padded) // unit] == e).all()
        row += padded
    assert valid[0] == row and (experts_of[row // unit:] == -1).all()


def test_fused_moe(g):
    x = torch.randn(11, 64, generator=g).to(torch.bfloat16)
    w1 = (torch.randn(6, 64, 64, generator=g) / 8).to(torch.bfloat16)
    w2 = (torch.randn(6, 64, 32, generator=g) / 6).to(torch.bfloat16)
    ids = torch.stack([torch.randperm(6, generator=g)[:2] for _ in range(11)]).to(torch.int32)
    weights = torch.rand(11, 2, generator=g)
    out = compat.fused_moe(x, w1, w2, weights, ids)
    ref = moe_ref(f64(x.float().numpy()), f64(w1.float().numpy()), f64(w2.float().numpy()), weights.numpy(),
                  ids.numpy())
    check_out(out.float().numpy(), ref, "bfloat16")
    with pytest.raises(compat_error(), match="quant_type"):
        compat.fused_moe(x, w1, w2, weights, ids, quant_type=1)
    with pytest.raises(compat_error(), match="need w1_scale"):
        compat.fused_moe(x, w1, w2, weights, ids, quant_type=2)


def test_fused_moe_fp8_per_token(g):
    """QuantType.per_Token: fp8 weights with [E, N, 1] scales, dynamic activation scales."""
    pytest.importorskip("ml_dtypes")
    from harness import np_dtype
    from test_moe_fp8 import moe_fp8_ref
    x = torch.randn(9, 64, generator=g).to(torch.bfloat16)
    w1, w2 = torch.randn(4, 64, 64, generator=g) / 8, torch.randn(4, 64, 32, generator=g) / 6
    s1, s2 = w1.abs().amax(-1, keepdim=True) / 448, w2.abs().amax(-1, keepdim=True) / 448
    w1q, w2q = (w1 / s1).to(torch.float8_e4m3fn), (w2 / s2).to(torch.float8_e4m3fn)
    ids = torch.stack([torch.randperm(4, generator=g)[:2] for _ in range(9)]).to(torch.int32)
    weights = torch.rand(9, 2, generator=g)
    out = compat.fused_moe(x, w1q, w2q, weights, ids, quant_type=2, w1_scale=s1, w2_scale=s2)
    ref = moe_fp8_ref(x.float().numpy().astype(np_dtype("bfloat16")), w1q.float().numpy(), w2q.float().numpy(), s1[..., 0].numpy(), s2[..., 0].numpy(),
                      weights.numpy(), ids.numpy(), "float8_e4m3fn")
    assert np.abs(out.float().numpy() - ref).max() <= 0.05 * (np.abs(ref).max() + 1e-6)


def compat_error():
    import aiter
    return aiter.InvalidArgumentError
