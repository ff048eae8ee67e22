"""The Triton prefill attention kernel's source (kernels/triton/attention.py) run by
Triton's CPU interpreter against float64 NumPy, without a GPU: packed sequences of
odd and empty lengths, row tiles straddling sequences, causal bottom-right,
windows, soft-cap, GQA, split q/k head dims (D1 + D2, as 192 = 128 + 64), the
log-sum-exp output, and rows of impossible cu_seqlens bounds.  Needs triton and
torch (skips without them: CI and Debian have neither); the compiled code objects
are tested on the GPU by test_attention.py.  fp16 stands for both 16-bit types
(the interpreter has no bf16 arithmetic); tiles are small to keep it fast.
"""
import os

import numpy as np

from triton_interpret import run_or_collect

if __name__ != "__main__":  # under pytest: the cases run in a child process (see interpreted_results)
    import pytest
    pytest.importorskip("torch")
    pytest.importorskip("triton")
else:
    import torch
    import triton

KERNEL = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "triton", "attention.py")


def reference(q, k, v, cu_q, cu_k, scale, causal, window_left, softcap):
    """out [Tq, Hq, DV] and lse [Tq, Hq] by include/aiter/attention.h's rules."""
    q, k, v = (t.double().numpy() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    out, lse = np.zeros(q.shape[:2] + v.shape[2:]), np.full(q.shape[:2], -np.inf)
    for b in range(len(cu_q) - 1):
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        lq, lk = qs.stop - qs.start, ks.stop - ks.start
        pos, key = np.arange(lq)[:, None] + lk - lq, np.arange(lk)[None, :]
        visible = np.ones((lq, lk), bool) & ((key <= pos) if causal else True)
        if window_left >= 0:
            visible &= pos - key <= window_left
        kk, vv = np.repeat(k[ks], group, 1), np.repeat(v[ks], group, 1)
        s = np.einsum("qhd,khd->hqk", q[qs], kk) * scale
        if softcap > 0:
            s = softcap * np.tanh(s / softcap)
        s = np.where(visible[None], s, -np.inf)
        top = s.max(-1, keepdims=True, initial=-np.inf)
        top = np.where(np.isfinite(top), top, 0.0)
        w = np.where(visible[None], np.exp(s - top), 0.0)
        total = w.sum(-1, keepdims=True)
        out[qs] = np.einsum("hqk,khd->qhd", w / np.where(total > 0, total, 1.0), vv)
        with np.errstate(divide="ignore"):
            lse[qs] = np.where(total > 0, top + np.log(total), -np.inf)[..., 0].T
    return out, lse


def run(attention, lens_q, lens_k, heads, dims, causal=True, window_left=-1, softcap=0.0, tiles=(16, 16),
        cu_q=None, seed=0):
    """Launches the kernel as libaiter/gpu/attention_prefill.cpp does; returns
    (out, lse, reference out, reference lse)."""
    g = torch.Generator().manual_seed(seed)
    hq, hkv = heads
    d1, d2, dv = dims
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32) if cu_q is None else np.asarray(cu_q, np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    tq, tk, batch = int(sum(lens_q)), int(cu_k[-1]), len(lens_k)
    q = torch.randn(tq, hq, d1 + d2, generator=g).half()
    k = torch.randn(tk, hkv, d1 + d2, generator=g).half()
    v = torch.randn(tk, hkv, dv, generator=g).half()
    out = torch.full((tq, hq, dv), float("nan")).half()
    lse = torch.full((tq, hq), float("nan"))
    bm, bn = tiles
    scale = (d1 + d2) ** -0.5
    steps = max(batch - 1, 0).bit_length()
    grid = (hq, triton.cdiv(tq, bm))
    attention.prefill_kernel[grid](
        q, k, v, out, lse, torch.from_numpy(cu_q), torch.from_numpy(cu_k),
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1), out.stride(0), out.stride(1),
        tq, tk, batch, steps, hq, hq // hkv, int(causal), window_left, scale, softcap, 1,
        BM=bm, BN=bn, D1=d1, D2=d2, DV=dv)
    ref_out, ref_lse = reference(q, k, v, cu_q, cu_k, scale, causal, window_left, softcap)
    return out, lse, ref_out, ref_lse


def check(result):
    out, lse, ref_out, ref_lse = result
    got, got_lse = out.double().numpy(), lse.double().numpy()
    assert not np.isnan(got).any() and not np.isnan(got_lse).any(), "elements unwritten"
    np.testing.assert_allclose(got, ref_out, rtol=2e-3, atol=2e-3)
    finite = np.isfinite(ref_lse)
    assert (np.isfinite(got_lse) == finite).all()
    np.testing.assert_allclose(got_lse[finite], ref_lse[finite], rtol=1e-4, atol=1e-4)


def cases():
    return {
        "varlen causal, GQA 4": lambda a: check(run(a, [1, 7, 0, 17, 40], [1, 9, 5, 17, 70], (4, 1), (16, 0, 32))),
        "non-causal, prefix keys": lambda a: check(run(a, [13, 33], [50, 33], (2, 2), (32, 0, 16), causal=False)),
        "window": lambda a: check(run(a, [37, 5], [37, 20], (2, 1), (16, 0, 16), window_left=6)),
        "window, non-causal": lambda a: check(run(a, [21], [40], (1, 1), (16, 0, 16), causal=False, window_left=3)),
        "soft-cap": lambda a: check(run(a, [29, 3], [29, 8], (2, 1), (16, 0, 16), softcap=0.7)),
        "split head dims": lambda a: check(run(a, [19, 18], [30, 18], (2, 1), (32, 16, 32))),
        "empty keys": lambda a: check(run(a, [5, 6], [0, 40], (1, 1), (16, 0, 16), causal=False)),
        "wide tiles": lambda a: check(run(a, [70, 3], [90, 3], (2, 1), (16, 0, 16), tiles=(32, 32))),
    }


CASES = ["varlen causal, GQA 4", "non-causal, prefix keys", "window", "window, non-causal", "soft-cap",
         "split head dims", "empty keys", "wide tiles"]


run_or_collect(globals(), KERNEL, "aiter_triton_attention_interpreted", cases, CASES)
