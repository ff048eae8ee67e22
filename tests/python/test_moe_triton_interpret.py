"""The fused MoE's Triton stage kernel (kernels/triton/moe.py) run by Triton's CPU
interpreter against float64 NumPy, without a GPU: both stages over a sorted-row
layout built here (pairs grouped by expert, blocks padded, an expert with no
tokens, blocks of a non-local expert and past the valid rows), the token gather,
the three activations, columns past the last tile (clamped, not stored), block
sizes 64 and 128, fp8 per channel and block-scaled, poisoned outputs (padding
rows must stay NaN).  Needs triton and torch (skips without them: CI and Debian
have neither); the compiled code objects are tested on the GPU by
test_moe_fused.py.  fp16 stands for both 16-bit types (the interpreter has no
bf16 arithmetic).
"""
import math
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

# AITER_TEST_MOE_SOURCE: a mutated copy of the kernel, to see these checks fail
# (docs/performance_moe.md lists the mutations tried).
KERNEL = os.environ.get("AITER_TEST_MOE_SOURCE") or os.path.join(
    os.path.dirname(__file__), "..", "..", "kernels", "triton", "moe.py")
E4M3_MAX = 448.0


def sorted_layout(ids, local, block):
    """moe_sorting's layout for a rank holding experts 0..local-1 of local + 1:
    pair ids grouped by expert, each expert's rows padded to `block` with the
    value `pairs` (an expert with no tokens has no block).  Then, inside the
    valid rows, a block of the pairs of expert `local` (not this rank's: the sort
    drops them) naming that expert, and a block of padding naming expert -1; past
    the valid rows, those pairs again naming expert 0.  The kernel must skip all
    three: returns (sorted rows, block experts, valid rows, the skipped pairs)."""
    pairs = ids.size
    flat = ids.reshape(-1)
    rows, experts = [], []
    for e in range(local):
        q = list(np.flatnonzero(flat == e))
        q += [pairs] * (-len(q) % block)
        rows += q
        experts += [e] * (len(q) // block)
    foreign = list(np.flatnonzero(flat == local))[:block]
    foreign += [pairs] * (block - len(foreign))
    rows += foreign + [pairs] * block
    experts += [local, -1]
    valid = len(rows)
    rows += foreign
    experts += [0]
    return np.array(rows, np.int32), np.array(experts, np.int32), valid, [q for q in foreign if q < pairs]


def block_runs(block_experts, valid, block):
    """[blocks, 2] int32 as the fused MoE's sort writes them: each block's run of
    blocks of one expert (first block, count) below the valid rows, each block
    alone past them."""
    runs = np.stack([np.arange(len(block_experts)), np.ones(len(block_experts), int)], axis=1)
    first = 0
    for b in range(1, valid // block + 1):
        if b == valid // block or block_experts[b] != block_experts[first]:
            runs[first:b] = (first, b - first)
            first = b
    return torch.from_numpy(runs.astype(np.int32).reshape(-1))


def act64(name, g):
    if name == 0:
        return g / (1.0 + np.exp(-g))
    if name == 1:
        return 0.5 * g * (1.0 + np.vectorize(math.erf)(g / math.sqrt(2.0)))
    return 0.5 * g * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * g ** 3)))


def quantize(v, group):
    """fp8 e4m3fn codes of v (float32 torch) and their scales: per row (group 0)
    or per `group` columns of a row; the weights' [.., n, k] per 128 x 128 block."""
    if group == 0:
        scale = v.abs().amax(-1, keepdim=True) / E4M3_MAX
        return (v / scale).to(torch.float8_e4m3fn), scale.squeeze(-1)
    shape = v.shape
    if v.dim() == 2:  # activations: 1 x 128 groups
        g = v.reshape(shape[0], shape[1] // group, group)
        scale = g.abs().amax(-1, keepdim=True) / E4M3_MAX
        return (g / scale).to(torch.float8_e4m3fn).reshape(shape), scale.squeeze(-1)
    b = v.reshape(shape[0], shape[1] // group, group, shape[2] // group, group)
    scale = b.abs().amax((2, 4), keepdim=True) / E4M3_MAX
    return (b / scale).to(torch.float8_e4m3fn).reshape(shape), scale.reshape(shape[0], shape[1] // group, -1)


def dequantized(codes, scale, group):
    """float64 NumPy values of fp8 codes times their scales (the same grouping)."""
    c = codes.double()
    if group == 0:
        return (c * scale.double().unsqueeze(-1)).numpy()
    if c.dim() == 2:
        return (c.reshape(c.shape[0], -1, group) * scale.double().unsqueeze(-1)).reshape(c.shape).numpy()
    e, n, k = c.shape
    s = scale.double()[:, :, None, :, None]
    return (c.reshape(e, n // group, group, k // group, group) * s).reshape(e, n, k).numpy()


def run(moe, stage, tokens=37, local=5, k=2, hidden=128, inter=96, block=64, bn=64, act=0, fp8=None, seed=0,
        combine=0, splits=1):
    """One stage launched as libaiter/gpu/moe_triton.cpp does; checks it against float64.
    combine (stage 2): 0 a row a pair; 1 / 2 each pair's row added, times its routing
    weight (1) or not (2), to its token's fp32 sums (zeros on entry).  splits > 1
    (stage 2): K in that many parts, each part's fp32 rows [splits, pairs, n]."""
    g = torch.Generator().manual_seed(seed)
    routed = [e for e in range(local + 1) if e != local - 2]  # expert local - 2 gets no tokens
    ids = np.array([[routed[i] for i in torch.randperm(len(routed), generator=g)[:k]] for _ in range(tokens)])
    sorted_rows, block_experts, valid, skipped = sorted_layout(ids, local, block)
    pairs, rows = ids.size, len(sorted_rows)
    n, kk = (inter, hidden) if stage == 1 else (hidden, inter)
    # local + 1 experts in memory, local of them this rank's: a kernel that ran
    # the foreign block would read real weights and write its rows.
    w = torch.randn(local + 1, (2 if stage == 1 else 1) * n, kk, generator=g) / math.sqrt(kk)
    gather = stage == 1 and fp8 is None
    a = torch.randn(tokens if gather else rows, kk, generator=g)
    group = 128 if fp8 == "block" else 0
    if fp8:
        a_in, a_scale = quantize(a, group)
        w_in, w_scale = quantize(w, group)
        a64, w64 = dequantized(a_in, a_scale, group), dequantized(w_in, w_scale, group)
    else:
        a_in, w_in = a.half(), w.half()
        a_scale = w_scale = torch.ones(1)
        a64, w64 = a_in.double().numpy(), w_in.double().numpy()
    out = torch.full((rows if stage == 1 else pairs, n), float("nan")).half()
    weights = torch.rand(tokens, k, generator=g)
    if combine:
        out = torch.zeros(tokens, n)
    if splits > 1:
        out = torch.full((splits * pairs, n), float("nan"))
    tiles = rows // 64 * triton.cdiv(n, bn)
    moe.moe_stage_kernel[(tiles, splits)](
        a_in, w_in, out, torch.from_numpy(sorted_rows), torch.from_numpy(block_experts),
        block_runs(block_experts, valid, block), torch.tensor([valid], dtype=torch.int32), a_scale.float().contiguous(), w_scale.float().contiguous(),
        rows, pairs, k, n, kk, a_in.stride(0), out.stride(0), local, block, int(gather), act, 1,
        weights, weights.stride(0), combine, splits, BM=64, BN=bn, BK=128 if fp8 else 32, GROUP_M=2,
        GATED=stage == 1, SCALED=fp8 == "channel", BLOCK_SCALED=fp8 == "block")
    got = out.double().numpy()
    if splits > 1:
        parts = got.reshape(splits, pairs, n)
        unwritten = np.isnan(parts)
        assert (unwritten.all(axis=0) | ~unwritten.any(axis=0)).all(), "a row written by some parts only"
        got = np.where(unwritten.all(axis=0), np.nan, np.nan_to_num(parts).sum(axis=0))
    if combine:
        return check_sums(got, w64, a64, sorted_rows, block_experts, valid, block, local, k, weights, combine)
    written = np.zeros(len(got), bool)
    for m in range(valid):
        q = int(sorted_rows[m])
        if q >= pairs:
            continue
        e = int(block_experts[m // block])
        if not 0 <= e < local:
            continue
        y = w64[e] @ (a64[q // k] if gather else a64[m])
        ref = act64(act, y[:n]) * y[n:] if stage == 1 else y
        row = m if stage == 1 else q
        written[row] = True
        np.testing.assert_allclose(got[row], ref, rtol=5e-3, atol=5e-3 * (np.abs(ref).max() + 1e-30))
    assert not np.isnan(got[written]).any(), "elements of a valid row unwritten"
    assert np.isnan(got[~written]).all(), "rows of padding, of a non-local expert or past the valid rows written"
    assert len(skipped) > 0 and not written[skipped].any() if stage == 2 else True


def check_sums(got, w64, a64, sorted_rows, block_experts, valid, block, local, k, weights, combine):
    """Stage 2's fp32 sums against float64: every valid pair of a local expert
    added once (the foreign block's and the padding's not at all)."""
    ref = np.zeros_like(got)
    for m in range(valid):
        q, e = int(sorted_rows[m]), int(block_experts[m // block])
        if q < len(got) * k and 0 <= e < local:
            ref[q // k] += (float(weights[q // k, q % k]) if combine == 1 else 1.0) * (w64[e] @ a64[m])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def fp8_layer(moe, block_scaled, tokens=37, experts=5, k=2, hidden=256, inter=256, seed=8):
    """Both fp8 stages as libaiter runs them (stage 1, h requantized per row or per
    1 x 128 group, stage 2, the combine in fp32), checked against the float64 layer
    within the bound of test_moe_fp8_bound (the check of the GPU tests)."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_moe_fp8_bound import moe_fp8_reference, quantize_rows, verdict
    import ml_dtypes
    fp8 = np.dtype(ml_dtypes.float8_e4m3fn)
    g = torch.Generator().manual_seed(seed)
    group = 128 if block_scaled else 0
    ids = np.array([torch.randperm(experts, generator=g)[:k].numpy() for _ in range(tokens)], np.int32)
    weights = torch.rand(tokens, k, generator=g).numpy()
    x = torch.randn(tokens, hidden, generator=g).half().numpy()
    w1, s1 = quantize(torch.randn(experts, 2 * inter, hidden, generator=g) / math.sqrt(hidden), group)
    w2, s2 = quantize(torch.randn(experts, hidden, inter, generator=g) / math.sqrt(inter), group)
    sorted_rows, block_experts, valid, _ = sorted_layout(ids, experts, 64)
    pairs, rows = ids.size, len(sorted_rows)
    layout = (torch.from_numpy(sorted_rows), torch.from_numpy(block_experts), block_runs(block_experts, valid, 64),
              torch.tensor([valid], dtype=torch.int32))

    def stage_input(values):  # codes and scales of each sorted row's values (zeros on padding rows)
        codes, scale = quantize_rows(values.astype(np.float64), "float8_e4m3fn", group)
        return torch.from_numpy(codes.astype(fp8).view(np.uint8)).view(torch.float8_e4m3fn), \
            torch.from_numpy(np.ascontiguousarray(scale if group else scale[:, 0], np.float32))

    def launch(stage, a, a_scale, w, w_scale, n, kk, out_rows):
        out = torch.full((out_rows, n), float("nan")).half()
        moe.moe_stage_kernel[(rows // 64 * triton.cdiv(n, 128),)](
            a, w, out, *layout, a_scale, w_scale.float().contiguous(), rows, pairs, k, n, kk, kk, n, experts, 64,
            0, 0, 1, torch.ones(1), 0, 0, 1, BM=64, BN=128, BK=128, GROUP_M=2, GATED=stage == 1, SCALED=not block_scaled,
            BLOCK_SCALED=block_scaled)
        return out.double().numpy()

    real = np.where(sorted_rows < pairs, sorted_rows, 0)
    xs = np.where((sorted_rows < pairs)[:, None], x[real // k].astype(np.float64), 0.0)
    h = launch(1, *stage_input(xs), w1, s1, inter, hidden, rows)
    h = np.where((sorted_rows < pairs)[:, None], h, 0.0)
    y = launch(2, *stage_input(h), w2, s2, hidden, inter, pairs)
    out = (y.reshape(tokens, k, hidden).astype(np.float32) * weights[:, :, None]).sum(axis=1).astype(np.float16)
    w1q, w2q = w1.view(torch.uint8).numpy().view(fp8), w2.view(torch.uint8).numpy().view(fp8)
    ref = moe_fp8_reference(x, w1q, w2q, s1.numpy(), s2.numpy(), weights, ids, "float8_e4m3fn")
    problem = verdict(out, ref)
    assert problem is None, problem


def cases():
    return {
        "stage 1, silu, ragged columns": lambda m: run(m, 1),
        "stage 1, gelu": lambda m: run(m, 1, act=1, tokens=20, seed=1),
        "stage 1, experts of several blocks": lambda m: run(m, 1, tokens=150, seed=4),
        "stage 1, gelu tanh, block 128": lambda m: run(m, 1, act=2, block=128, k=3, seed=2),
        "stage 2, ragged columns, block 128": lambda m: run(m, 2, hidden=160, inter=64, block=128, seed=3),
        "stage 2, weighted fp32 sums, k 3": lambda m: run(m, 2, hidden=160, inter=64, k=3, seed=9, combine=1),
        "stage 2, fp32 sums, block 128": lambda m: run(m, 2, hidden=96, inter=64, block=128, seed=10, combine=2),
        "stage 2, fp8 per channel, weighted fp32 sums": lambda m: run(m, 2, hidden=96, inter=256, fp8="channel",
                                                                     seed=11, combine=1),
        "stage 1, fp8 per channel": lambda m: run(m, 1, hidden=256, inter=64, fp8="channel", seed=4),
        "stage 2, fp8 per channel": lambda m: run(m, 2, hidden=96, inter=256, fp8="channel", seed=5),
        "stage 1, fp8 block-scaled": lambda m: run(m, 1, hidden=256, inter=128, fp8="block", seed=6),
        "stage 2, fp8 block-scaled": lambda m: run(m, 2, hidden=128, inter=256, fp8="block", seed=7),
        # K split: 7 steps of 32 in 3 parts (3, 3, 1); 4 fp8 block-scaled groups in 3 parts (2, 2, 0: an empty part)
        "stage 2, K in 3 parts": lambda m: run(m, 2, hidden=160, inter=224, seed=12, splits=3),
        "stage 2, fp8 block-scaled, K in 3 parts": lambda m: run(m, 2, hidden=128, inter=512, fp8="block", seed=13,
                                                                 splits=3),
        "layer, fp8 per channel, within the bound": lambda m: fp8_layer(m, False),
        "layer, fp8 block-scaled, within the bound": lambda m: fp8_layer(m, True),
    }


CASES = list(cases())


run_or_collect(globals(), KERNEL, "aiter_triton_moe_interpreted", cases, CASES)
