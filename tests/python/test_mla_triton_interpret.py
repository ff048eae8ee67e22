"""The Triton MLA decode kernel's source (kernels/triton/mla.py) run by Triton's
CPU interpreter against float64 NumPy, without a GPU: 576-dim latent rows
(512 values + 64 rope dims), several new tokens a sequence (causal among them),
rows past one tile, page sizes 1 and 16, empty and clamped context lengths,
block ids outside the cache (masked), the log-sum-exp output, and split
partial results (each split's output and log-sum-exp in mla.cu's workspace
layout).  Needs triton and torch (skips without them: CI and Debian have
neither); the compiled code objects are tested on the GPU by test_mla.py with
AITER_MLA_KERNEL=triton (test_mla_triton.py).  fp16 stands for both 16-bit
types (the interpreter has no bf16 arithmetic).
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

KERNEL = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "triton", "mla.py")


def reference(q, cache, table, lens, tokens, heads, scale, key_lo, key_hi):
    """out [B, rows, 512] and lse [B, rows] over positions [key_lo, key_hi) only
    (one split): row n (token n // heads) sees positions [0, L - tokens + token + 1)."""
    q, kv = q.double().numpy(), cache.double().numpy()
    blocks, page = kv.shape[:2]
    out, lse = np.zeros(q.shape[:2] + (512,)), np.full(q.shape[:2], -np.inf)
    capacity = table.shape[1] * page
    for b in range(q.shape[0]):
        length = min(max(int(lens[b]), 0), capacity)
        for n in range(q.shape[1]):
            hi = length - tokens + n // heads + 1
            keys = [j for j in range(key_lo, min(hi, key_hi, length)) if 0 <= table[b, j // page] < blocks]
            if not keys:
                continue
            rows = np.stack([kv[table[b, j // page], j % page] for j in keys])
            s = rows @ q[b, n] * scale
            w = np.exp(s - s.max())
            out[b, n] = w @ rows[:, :512] / w.sum()
            lse[b, n] = s.max() + np.log(w.sum())
    return out, lse


def run(mla, batch=2, tokens=1, heads=4, page=16, lens=(5, 40), max_blocks=3, splits=1, split_keys=None,
        bad_blocks=False, tiles=(16, 16), seed=0):
    g = torch.Generator().manual_seed(seed)
    bm, bn = tiles
    rows = tokens * heads
    num_blocks = batch * max_blocks + 1
    q = torch.randn(batch, rows, 576, generator=g).half()
    cache = torch.randn(num_blocks, page, 576, generator=g).half()
    table = torch.randperm(num_blocks, generator=g)[:batch * max_blocks].reshape(batch, max_blocks).int()
    if bad_blocks:
        table[0, 1], table[-1, 0] = -1, num_blocks + 5
    capacity = max_blocks * page
    split_keys = split_keys or capacity
    scale = 576 ** -0.5
    out = torch.full((batch, rows, 512), float("nan")).half()
    lse = torch.full((batch, rows), float("nan"))
    part = torch.full((batch * rows * splits, 512), float("nan")).half()
    part_lse = torch.full((batch * rows * splits,), float("nan"))
    mla.mla_decode_kernel[(batch * splits, -(-rows // bm))](
        q, cache, out, lse, part, part_lse, table, torch.tensor(lens, dtype=torch.int32), table.stride(0),
        num_blocks, capacity, page, tokens, heads, rows, splits, split_keys, scale * 1.4426950408889634, 1.0, 1,
        BM=bm, BN=bn)
    table_np = table.numpy()
    if splits == 1:
        ref, ref_lse = reference(q, cache, table_np, lens, tokens, heads, scale, 0, capacity)
        got, got_lse = out.double().numpy(), lse.double().numpy()
        assert not np.isnan(got).any() and not np.isnan(got_lse).any(), "elements unwritten"
        np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)
        finite = np.isfinite(ref_lse)
        assert (np.isfinite(got_lse) == finite).all()
        np.testing.assert_allclose(got_lse[finite], ref_lse[finite], rtol=1e-4, atol=1e-4)
        return
    parts = part.double().numpy().reshape(batch, rows, splits, 512)
    lses = part_lse.double().numpy().reshape(batch, rows, splits)
    assert not np.isnan(parts).any() and not np.isnan(lses).any(), "workspace slots unwritten"
    for s in range(splits):
        ref, ref_lse = reference(q, cache, table_np, lens, tokens, heads, scale, s * split_keys, (s + 1) * split_keys)
        np.testing.assert_allclose(parts[:, :, s], ref, rtol=2e-3, atol=2e-3)
        finite = np.isfinite(ref_lse)
        assert (np.isfinite(lses[..., s]) == finite).all(), f"split {s}: -inf exactly where no position is seen"
        np.testing.assert_allclose(lses[..., s][finite], ref_lse[finite], rtol=1e-4, atol=1e-4)


def cases():
    return {
        "odd lengths, 4 heads": lambda a: run(a, lens=(5, 41)),
        "2 new tokens, rows past one tile": lambda a: run(a, tokens=2, heads=10, lens=(33, 2), page=1, max_blocks=40),
        "empty and clamped lengths, bad block ids": lambda a: run(a, batch=3, lens=(0, 47, 500), bad_blocks=True,
                                                                  tokens=2),
        "split partials": lambda a: run(a, lens=(47, 20), splits=3, split_keys=16, tokens=2),
    }


CASES = ["odd lengths, 4 heads", "2 new tokens, rows past one tile", "empty and clamped lengths, bad block ids",
         "split partials"]


run_or_collect(globals(), KERNEL, "aiter_triton_mla_interpreted", cases, CASES)
