"""aiter.matmul / linear / attention / quantize / set_log_level, against
float64 references, on CPU torch tensors and NumPy arrays."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import aiter
from gemm_helpers import reference as gemm_ref
from harness import assert_close, f64, rand
from test_attention import prefill_ref

torch = pytest.importorskip("torch")


def _bf16_dot_tol(k):
    return dict(rtol=2e-2, atol=2e-2 * math.sqrt(k))


@pytest.mark.parametrize("batched", [False, True])
def test_matmul_torch_and_numpy(rng, batched):
    shape_a, shape_b = ((3, 5, 40), (3, 40, 9)) if batched else ((5, 40), (40, 9))
    a, b = rand(rng, shape_a, "float32"), rand(rng, shape_b, "float32")
    ref = np.matmul(f64(a), f64(b))
    assert_close(aiter.matmul(a, b), ref, "float32", rtol=1e-5, atol=1e-4)
    out = aiter.matmul(torch.from_numpy(a).bfloat16(), torch.from_numpy(b).bfloat16())
    assert out.dtype == torch.bfloat16
    assert_close(out, np.matmul(f64(torch.from_numpy(a).bfloat16()), f64(torch.from_numpy(b).bfloat16())),
                 "bfloat16", **_bf16_dot_tol(40))


def test_linear_keeps_leading_dims(rng):
    x, w, bias = rand(rng, (2, 3, 7, 33), "float32"), rand(rng, (17, 33), "float32"), rand(rng, (17,), "float32")
    out = aiter.linear(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(bias))
    assert out.shape == (2, 3, 7, 17)
    ref = gemm_ref(x.reshape(-1, 33), w, bias).reshape(2, 3, 7, 17)
    assert_close(out, ref, "float32", rtol=1e-5, atol=1e-4)
    assert_close(aiter.linear(x, w), ref - f64(bias), "float32", rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_sdpa_layout_with_gqa(rng, causal):
    b, hq, hkv, s, d = 2, 4, 2, 13, 64
    q, k, v = (torch.from_numpy(rand(rng, shape, "float32")) for shape in
               ((b, hq, s, d), (b, hkv, s, d), (b, hkv, s, d)))
    out = aiter.attention(q, k, v, causal=causal)
    assert out.shape == (b, hq, s, d)
    packed = [t.transpose(1, 2).reshape(b * s, t.shape[1], d) for t in (q, k, v)]
    cu = [0, s, 2 * s]
    ref = prefill_ref(*packed, cu, cu, 1 / math.sqrt(d), causal=causal).reshape(b, s, hq, d).transpose(0, 2, 1, 3)
    assert_close(out, ref, "float32")
    sdpa = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double().repeat_interleave(2, 1),
                                                            v.double().repeat_interleave(2, 1), is_causal=causal)
    assert_close(out, sdpa.numpy(), "float32")


def test_attention_refuses_masks_and_misaligned_causal(rng):
    q = torch.zeros(1, 2, 4, 64)
    with pytest.raises(aiter.InvalidArgumentError, match="attention: attn_mask"):
        aiter.attention(q, q, q, attn_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(aiter.InvalidArgumentError, match="causal=True needs Sq == Sk"):
        aiter.attention(q, torch.zeros(1, 2, 6, 64), torch.zeros(1, 2, 6, 64), causal=True)


@pytest.mark.parametrize("dtype, qmax", [("int8", 127.0), ("fp8", 448.0)])
def test_quantize_replaces_linears(rng, dtype, qmax):
    torch.manual_seed(int(rng.integers(2**31)))
    model = torch.nn.Sequential(torch.nn.Linear(48, 40), torch.nn.SiLU(), torch.nn.Linear(40, 24, bias=False))
    w0, b0, w1 = (f64(p.detach()) for p in (model[0].weight, model[0].bias, model[2].weight))
    x = torch.randn(5, 48)
    assert aiter.quantize(model, dtype) is model
    assert type(model[0]).__name__ == "A8W8Linear" and type(model[2]).__name__ == "A8W8Linear"
    with torch.no_grad():
        out = model(x)
    h = f64(x) @ w0.T + b0
    h = h / (1 + np.exp(-h))
    ref = h @ w1.T
    # Two quantized products: per-token and per-channel steps of amax/qmax, half a step each.
    tol = 4 * (np.abs(f64(x)).max() * np.abs(w0).max() * 48 + np.abs(h).max() * np.abs(w1).max() * 40) / qmax
    np.testing.assert_allclose(f64(out), ref, atol=tol, rtol=0)
    assert np.abs(f64(out) - ref).max() < 0.2 * np.abs(ref).max()


def test_quantize_refuses_unknown_dtype():
    with pytest.raises(aiter.InvalidArgumentError, match="quantize: dtype"):
        aiter.quantize(torch.nn.Linear(4, 4), "int4")


def _run(code, level):
    env = dict(os.environ, AITER_LOG_LEVEL=level)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)


def test_log_level_any_case_and_unknown_warned_once():
    code = "import os, aiter, importlib; print(os.environ['AITER_LOG_LEVEL'])"
    assert _run(code, "INFO").stdout.strip() == "info"
    assert _run(code, "2").stdout.strip() == "info"
    bad = _run(code + "; importlib.reload(aiter)", "loud")
    assert bad.stderr.count("AITER_LOG_LEVEL='loud'") == 1


def test_set_log_level():
    previous = os.environ.get("AITER_LOG_LEVEL")
    try:
        assert aiter.set_log_level("DEBUG") == "debug" and os.environ["AITER_LOG_LEVEL"] == "debug"
        with pytest.raises(aiter.InvalidArgumentError, match="set_log_level: level"):
            aiter.set_log_level("verbose")
    finally:
        if previous is None:
            os.environ.pop("AITER_LOG_LEVEL", None)
        else:
            os.environ["AITER_LOG_LEVEL"] = previous


def test_log_level_reaches_the_library():
    gemm = "import numpy as np; a = np.ones((4, 64), np.float32); aiter.gemm_a16w16(a, a)"
    assert "[aiter]" in _run(f"import aiter; aiter.set_log_level('DEBUG'); {gemm}", "").stderr
    assert "[aiter]" in _run(f"import aiter; {gemm}", "DEBUG").stderr
    assert "[aiter]" not in _run(f"import aiter; {gemm}", "OFF").stderr
