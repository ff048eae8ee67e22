"""The Triton paged-prefill kernel's source (kernels/triton/paged_prefill.py) run
by Triton's CPU interpreter against float64 NumPy, without a GPU: sequences of
odd, empty and single new-token counts after cached prefixes, tiles of one
sequence's rows (GQA groups that do not divide the tile), causal and not,
windows, soft-cap, page sizes 1 and 16, clamped lengths, more new tokens than
positions, block ids outside the cache (masked), cu_seqlens of impossible
bounds (their rows untouched), and the log-sum-exp output.  Needs triton and
torch (skips without them: CI and Debian have neither); the compiled code
objects are tested on the GPU by test_attention_paged_prefill.py, which runs
each case with the Triton kernel forced too.  fp16 stands for both 16-bit
types (the interpreter has no bf16 arithmetic); tiles are small to keep it fast.
"""
import os
import sys

import numpy as np

from triton_interpret import run_or_collect

SOURCES = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "triton")
KERNEL = os.path.join(SOURCES, "paged_prefill.py")

if __name__ != "__main__":  # under pytest: the cases run in a child process (see interpreted_results)
    import pytest
    pytest.importorskip("torch")
    pytest.importorskip("triton")
else:
    import torch
    sys.path.insert(0, SOURCES)  # paged_prefill.py imports decode.py's helpers, as build.py lets it


def reference(q, k_cache, v_cache, table, lens, cu_q, scale, causal, window_left, softcap):
    """out [Tq, Hq, D] and lse [Tq, Hq] by include/aiter/attention.h's rules."""
    q, kc, vc = (t.double().numpy() for t in (q, k_cache, v_cache))
    blocks, page, hkv = kc.shape[:3]
    group = q.shape[1] // hkv
    out, lse = np.zeros(q.shape), np.full(q.shape[:2], -np.inf)
    capacity = table.shape[1] * page
    for b in range(len(cu_q) - 1):
        length, lq = min(max(int(lens[b]), 0), capacity), cu_q[b + 1] - cu_q[b]
        if not 0 <= cu_q[b] <= cu_q[b + 1] <= q.shape[0]:
            continue  # impossible bounds: rows left as they were
        for i in range(lq):
            pos = length - lq + i
            lo = max(pos - window_left, 0) if window_left >= 0 else 0
            hi = pos + 1 if causal else length
            keys = [j for j in range(lo, hi) if pos >= 0 and 0 <= table[b, j // page] < blocks]
            if not keys:
                continue
            for h in range(q.shape[1]):
                kk = np.stack([kc[table[b, j // page], j % page, h // group] for j in keys])
                vv = np.stack([vc[table[b, j // page], j % page, h // group] for j in keys])
                s = kk @ q[cu_q[b] + i, h] * scale
                if softcap > 0:
                    s = softcap * np.tanh(s / softcap)
                w = np.exp(s - s.max())
                out[cu_q[b] + i, h] = w @ vv / w.sum()
                lse[cu_q[b] + i, h] = s.max() + np.log(w.sum())
    return out, lse


def run(prefill, lens_q=(3, 9), lens=(20, 9), heads=(4, 1), d=16, page=16, max_blocks=3, causal=True,
        window_left=-1, softcap=0.0, bad_blocks=False, cu_q=None, tiles=(16, 16), seed=0):
    g = torch.Generator().manual_seed(seed)
    hq, hkv = heads
    group = hq // hkv
    bm, bn = tiles
    batch = len(lens)
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32) if cu_q is None else np.asarray(cu_q, np.int32)
    tq = int(sum(lens_q))
    num_blocks = batch * max_blocks + 1
    q = torch.randn(tq, hq, d, generator=g).half()
    k_cache = torch.randn(num_blocks, page, hkv, d, generator=g).half()
    v_cache = torch.randn(num_blocks, page, hkv, d, generator=g).half()
    table = torch.randperm(num_blocks, generator=g)[:batch * max_blocks].reshape(batch, max_blocks).int()
    if bad_blocks:
        table[0, 0], table[-1, -1] = -2, num_blocks
    out = torch.full(q.shape, float("nan")).half()
    lse = torch.full((tq, hq), float("nan"))
    scale = d ** -0.5
    tiles_x = tq * group // bm + batch
    prefill.paged_prefill_kernel[(tiles_x, hkv)](
        q, k_cache, v_cache, out, lse, table, torch.tensor(lens, dtype=torch.int32), torch.from_numpy(cu_q),
        q.stride(0), q.stride(1), out.stride(0), out.stride(1), table.stride(0), num_blocks, max_blocks * page,
        page, batch, max(batch - 1, 0).bit_length(), tq, hq, hkv, int(causal), window_left, scale, softcap,
        1.0, 1.0, 1, BM=bm, BN=bn, D=d)
    return out.double().numpy(), lse.double().numpy(), reference(
        q, k_cache, v_cache, table.numpy(), lens, cu_q, scale, causal, window_left, softcap)


def check(result, written=None):
    got, got_lse, (ref, ref_lse) = result
    rows = slice(None) if written is None else written
    got, got_lse, ref, ref_lse = got[rows], got_lse[rows], ref[rows], ref_lse[rows]
    assert not np.isnan(got).any() and not np.isnan(got_lse).any(), "elements unwritten"
    np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3)
    finite = np.isfinite(ref_lse)
    assert (np.isfinite(got_lse) == finite).all(), "-inf exactly where no key is seen"
    np.testing.assert_allclose(got_lse[finite], ref_lse[finite], rtol=1e-4, atol=1e-4)


def impossible_bounds(prefill):
    """Sequence 1's bounds run past Tq: its rows stay as they were (NaN), the others are right."""
    got, got_lse, ref = run(prefill, lens_q=(5, 4, 6), lens=(12, 30, 8), cu_q=[0, 5, 40, 15])
    assert np.isnan(got[5:15]).all(), "rows of impossible bounds are not written"
    check((got, got_lse, ref), written=np.r_[0:5])


def cases():
    return {
        "prefixes, GQA 4": lambda a: check(run(a, lens_q=(3, 9, 1), lens=(20, 9, 33))),
        "group not dividing the tile": lambda a: check(run(a, lens_q=(7, 5), lens=(30, 5), heads=(6, 2))),
        "not causal, window": lambda a: check(run(a, lens_q=(6, 11), lens=(40, 20), causal=False, window_left=5)),
        "soft-cap, page size 1": lambda a: check(run(a, lens_q=(4, 2), lens=(9, 7), page=1, max_blocks=10,
                                                     softcap=0.6)),
        "empty, clamped, short contexts": lambda a: check(run(a, lens_q=(0, 3, 4), lens=(5, 900, 2))),
        "bad block ids masked": lambda a: check(run(a, lens_q=(8, 3), lens=(45, 40), bad_blocks=True)),
        "impossible cu_seqlens": impossible_bounds,
    }


CASES = ["prefixes, GQA 4", "group not dividing the tile", "not causal, window", "soft-cap, page size 1",
         "empty, clamped, short contexts", "bad block ids masked", "impossible cu_seqlens"]


run_or_collect(globals(), KERNEL, "aiter_triton_paged_prefill_interpreted", cases, CASES)
