"""The Triton paged decode kernel's source (kernels/triton/decode.py) run by
Triton's CPU interpreter against float64 NumPy, without a GPU: GQA groups and
several new tokens a sequence in one row block, page sizes 1 and 16, windows,
soft-cap, empty and clamped context lengths, block ids outside the cache
(masked), and split-KV partial results (each split's output and log-sum-exp in
decode.cu's workspace layout, checked split by split), fp8 e4m3fn caches with
dequantization scales.  Needs triton and torch
(skips without them: CI and Debian have neither); the compiled code objects are
tested on the GPU by test_attention*.py with AITER_DECODE_KERNEL=triton
(test_decode_triton.py).  fp16 stands for both 16-bit types (the interpreter
has no bf16 arithmetic); tiles are small to keep it fast.
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

KERNEL = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "triton", "decode.py")


def reference(q, k_cache, v_cache, table, lens, scale, window_left, softcap, key_lo, key_hi):
    """out [B, T, Hq, D] and lse [B, T, Hq] over key positions [key_lo, key_hi)
    only (one split), by include/aiter/attention.h's rules."""
    q, kc, vc = (t.double().numpy() for t in (q, k_cache, v_cache))
    batch, tokens, hq, d = q.shape
    blocks, page, hkv = kc.shape[:3]
    group = hq // hkv
    out, lse = np.zeros(q.shape), np.full(q.shape[:3], -np.inf)
    capacity = table.shape[1] * page
    for b in range(batch):
        length = min(max(int(lens[b]), 0), capacity)
        for i in range(tokens):
            pos = length - tokens + i
            lo = max(pos - window_left, 0) if window_left >= 0 else 0
            keys = [j for j in range(max(lo, key_lo), min(pos + 1, key_hi)) if 0 <= table[b, j // page] < blocks]
            if not keys:
                continue
            rows = [(table[b, j // page], j % page) for j in keys]
            for h in range(hq):
                kk = np.stack([kc[blk, slot, h // group] for blk, slot in rows])
                vv = np.stack([vc[blk, slot, h // group] for blk, slot in rows])
                s = kk @ q[b, i, h] * scale
                if softcap > 0:
                    s = softcap * np.tanh(s / softcap)
                w = np.exp(s - s.max())
                out[b, i, h] = w @ vv / w.sum()
                lse[b, i, h] = s.max() + np.log(w.sum())
    return out, lse


def run(decode, batch=2, tokens=1, heads=(4, 1), d=16, page=16, lens=(5, 40), max_blocks=4, window_left=-1,
        softcap=0.0, splits=1, split_keys=None, bad_blocks=False, tiles=(16, 16), fp8=False, seed=0):
    """Launches the kernel as libaiter/gpu/attention_decode_triton.cpp does; checks
    every row (one split: the output; several: each split's partial results)."""
    g = torch.Generator().manual_seed(seed)
    hq, hkv = heads
    group = hq // hkv
    bm, bn = tiles
    num_blocks = batch * max_blocks + 1
    q = torch.randn(batch, tokens, hq, d, generator=g).half()
    k_cache = torch.randn(num_blocks, page, hkv, d, generator=g).half()
    v_cache = torch.randn(num_blocks, page, hkv, d, generator=g).half()
    k_scale, v_scale = 1.0, 1.0
    if fp8:  # e4m3fn caches holding x / scale; the reference reads the codes times the scales
        k_scale, v_scale = 0.01, 0.02
        k_cache = (k_cache.float() / k_scale).to(torch.float8_e4m3fn)
        v_cache = (v_cache.float() / v_scale).to(torch.float8_e4m3fn)
    table = torch.randperm(num_blocks, generator=g)[:batch * max_blocks].reshape(batch, max_blocks).int()
    if bad_blocks:
        table[0, 1], table[-1, 0] = -3, num_blocks  # outside the cache: those keys are masked
    lens_t = torch.tensor(lens, dtype=torch.int32)
    capacity = max_blocks * page
    split_keys = split_keys or capacity
    row_blocks = -(-tokens * group // bm)
    out = torch.full(q.shape, float("nan")).half()
    slots = batch * tokens * hq * splits
    partial_out = torch.full((slots, d), float("nan"))
    partial_lse = torch.full((slots,), float("nan"))
    scale = d ** -0.5
    decode.decode_kernel[(batch * splits, hkv * row_blocks)](
        q, k_cache, v_cache, out, partial_out, partial_lse, table, lens_t,
        q.stride(0), q.stride(1), q.stride(2), out.stride(0), out.stride(1), out.stride(2),
        table.stride(0), num_blocks, capacity, page, tokens, hq, hkv, row_blocks, splits, split_keys,
        window_left, scale, softcap, k_scale, v_scale, BM=bm, BN=bn, D=d)
    table_np = table.numpy()
    k_cache, v_cache = k_cache.double() * k_scale, v_cache.double() * v_scale
    if splits == 1:
        ref, _ = reference(q, k_cache, v_cache, table_np, lens, scale, window_left, softcap, 0, capacity)
        got = out.double().numpy()
        assert not np.isnan(got).any(), "elements unwritten"
        np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)
        return
    parts = partial_out.double().numpy().reshape(batch, tokens, hq, splits, d)
    lses = partial_lse.double().numpy().reshape(batch, tokens, hq, splits)
    assert not np.isnan(parts).any() and not np.isnan(lses).any(), "workspace slots unwritten"
    for s in range(splits):
        ref, ref_lse = reference(q, k_cache, v_cache, table_np, lens, scale, window_left, softcap, s * split_keys,
                                 (s + 1) * split_keys)
        np.testing.assert_allclose(parts[..., s, :], ref, rtol=1e-3, atol=1e-3)
        finite = np.isfinite(ref_lse)
        assert (np.isfinite(lses[..., s]) == finite).all(), f"split {s}: -inf exactly where no key is seen"
        np.testing.assert_allclose(lses[..., s][finite], ref_lse[finite], rtol=1e-4, atol=1e-4)


def cases():
    return {
        "GQA 4, odd lengths": lambda a: run(a, lens=(5, 41)),
        "page size 1, 2 new tokens": lambda a: run(a, page=1, max_blocks=37, lens=(37, 9), tokens=2, heads=(6, 2)),
        "rows past one block": lambda a: run(a, tokens=3, heads=(8, 1), lens=(30, 3)),
        "window and soft-cap": lambda a: run(a, lens=(50, 23), window_left=7, softcap=0.8, tokens=2),
        "empty, short and clamped lengths": lambda a: run(a, batch=3, lens=(0, 1, 999), tokens=2, heads=(2, 2)),
        "bad block ids masked": lambda a: run(a, lens=(60, 33), bad_blocks=True),
        "split-KV partials": lambda a: run(a, lens=(64, 20), splits=3, split_keys=24, tokens=2, window_left=30),
        "split-KV, wider key tile": lambda a: run(a, d=32, lens=(63, 7), splits=2, split_keys=32, tiles=(16, 32)),
        "fp8 e4m3fn cache with scales": lambda a: run(a, lens=(45, 17), fp8=True, tokens=2, softcap=0.9),
    }


CASES = ["GQA 4, odd lengths", "page size 1, 2 new tokens", "rows past one block", "window and soft-cap",
         "empty, short and clamped lengths", "bad block ids masked", "split-KV partials", "split-KV, wider key tile",
         "fp8 e4m3fn cache with scales"]


run_or_collect(globals(), KERNEL, "aiter_triton_decode_interpreted", cases, CASES)
