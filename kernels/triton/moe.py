"""The fused MoE's expert stages in Triton: the prefill path (many rows an
expert), compiled ahead of time by build.py, never at run time.  On sm_90a
Triton lowers the products to wgmma; on the AMD targets to MFMA / WMMA.

They take the library's sorted-row layout (moe_sorting; kernels/moe/moe_params.h):
rows of token-expert pairs grouped by expert in blocks of `block` rows, the
expert of each block, the number of valid rows.  A tile is BM rows of one
block (BM divides block) against BN columns:
    stage 1 (GATED): out[m, c] = act(a_m . w1[e, c]) * (a_m . w1[e, n + c]),
                     out = inter_buf [rows, n], c < n = inter, K = hidden
    stage 2:         out[q, c] = a_m . w2[e, c], out = pair_out [pairs, n],
                     q = sorted[m] (the pair), n = hidden, K = inter;
                     or with combine != 0: out[t, c] += w * (a_m . w2[e, c]) in
                     fp32 (fp32 atomics, out [tokens, n] zeroed beforehand),
                     t = q // topk, w = weights[t, q % topk] (combine 1) or 1
                     (combine 2: weights_on_input); the k pairs of a token lie
                     in k tiles of other experts, so the fused MoE needs no
                     combine pass over a row a pair, only a cast of the sums;
                     or with splits > 1 (decode: few tiles) K in `splits` parts,
                     program_id(1) the part, whose fp32 sums go to row
                     part * pairs + q of out (the partial rows the combine
                     kernel adds up in part order)
with a_m the row's input: x[q // topk] (gather != 0: the 16-bit stage 1 on x),
else row m of `a` (x_sorted, inter_buf, or the fp8 copies xq / hq).
fp8 per channel (SCALED): sums times a_scale[m] * w_scale[e, column]; block-
scaled (BLOCK_SCALED, BK = 128, one K group a step): each step's sums times
a_scale[m, g] * w_scale[e, column / 128, g] before they are added.  On
sm_90a, Hopper's fp8 wgmma sums with reduced precision: PROMOTE > 0 adds the
partial sums to the fp32 totals every PROMOTE values of K (moe_aot.py: every
K step).  A correct fp8 kernel still differs from float64 by the fp8 rounding
of the requantized stage-1 rows, which the fp8 tests allow for with a bound
(tests/python/test_moe_fp8_bound.py).
Rows of padding compute on a stand-in row and are not stored, so the K loop
has no masks; tiles past the valid rows or of no local expert exit at once
(the grid is sized by the rows' upper bound: no host sync).
"""
import triton
import triton.language as tl

# The output's dtype, a run-time value (one code object serves both).
OUT_F16, OUT_BF16 = 1, 2
# Activations: kernels/moe/moe_params.h's MoeAct.
ACT_SILU, ACT_GELU, ACT_GELU_TANH = 0, 1, 2

# Its run-time arguments and the tiles built: moe_aot.py.


@triton.jit
def _tile_of(pid, tiles_n, block_runs, block, BM: tl.constexpr, GROUP_M: tl.constexpr):
    """Row tiles in groups, column by column within a group, so the blocks
    running together share an expert's weight columns in L2: an expert's row
    tiles, GROUP_M at a time (block_runs: each sorting block's expert's first
    block and block count), so that no expert's weights come from memory
    twice (fixed groups cut experts in two: docs/performance_moe.md, 2026-11-28).
    Group [first, first + rows) holds pids [first, first + rows) * tiles_n, so
    the row pid // tiles_n lies in pid's group."""
    row = pid // tiles_n
    per_block = block // BM
    run = block_runs + 2 * ((row // per_block).to(tl.int64))
    run_first = tl.load(run) * per_block
    first = row - (row - run_first) % GROUP_M
    rows = min(run_first + tl.load(run + 1) * per_block - first, GROUP_M)
    r = pid - first * tiles_n
    return first + r % rows, r // rows


@triton.jit
def _gated(g, u, act):
    """act(g) * u in fp32; sigmoid as 1 / (1 + e^-x), which is +-0, never NaN, where e^-x overflows."""
    if act == 0:
        h = g / (1.0 + tl.exp(-g)) * u
    elif act == 1:
        h = 0.5 * g * (1.0 + tl.erf(g * 0.7071067811865476)) * u
    else:  # tanh form: 0.5 (1 + tanh v) = sigmoid(2 v)
        v = 0.7978845608028654 * (g + 0.044715 * g * g * g)
        h = g / (1.0 + tl.exp(-2.0 * v)) * u
    return h


@triton.jit
def _store(out, rows, rn, ldo, n, valid, value, out_kind):
    """out[rows, rn] in the output dtype (`out` is typed fp32 until cast)."""
    at = rows.to(tl.int64)[:, None] * ldo + rn[None, :]
    inside = valid[:, None] & (rn < n)[None, :]
    if out_kind == 1:
        tl.store(out.to(tl.pointer_type(tl.float16)) + at, value.to(tl.float16), mask=inside)
    else:
        tl.store(out.to(tl.pointer_type(tl.bfloat16)) + at, value.to(tl.bfloat16), mask=inside)


@triton.jit
def _accumulate(out, q, valid, topk, rn, ldo, n, value, weights, weights_stride, combine):
    """out[token of q, rn] += weight * value in fp32 (`out` is fp32 here): the
    token's other pairs are added by tiles of other experts, hence atomics;
    relaxed, since nothing reads the sums before the kernel ends."""
    pair = tl.where(valid, q, 0)
    token = pair // topk
    if combine == 1:
        wt = tl.load(weights + token.to(tl.int64) * weights_stride + pair % topk, mask=valid, other=0.0)
        value = value * wt[:, None]
    at = token.to(tl.int64)[:, None] * ldo + rn[None, :]
    inside = valid[:, None] & (rn < n)[None, :]
    tl.atomic_add(out + at, value, mask=inside, sem="relaxed")


@triton.jit
def _store_part(out, q, valid, pairs, rn, ldo, n, value):
    """This K part's fp32 sums (`out` is fp32 here) in row part * pairs + q."""
    part_row = tl.program_id(1) * pairs + tl.where(valid, q, 0)
    at = part_row.to(tl.int64)[:, None] * ldo + rn[None, :]
    tl.store(out + at, value, mask=valid[:, None] & (rn < n)[None, :])


@triton.jit
def moe_stage_kernel(a, w, out, sorted_rows, block_experts, block_runs, num_valid, a_scale, w_scale,
                     rows, pairs, topk, n, k, lda, ldo, local_experts, block, gather, act, out_kind,
                     weights, weights_stride, combine, splits,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                     GATED: tl.constexpr, SCALED: tl.constexpr, BLOCK_SCALED: tl.constexpr,
                     PROMOTE: tl.constexpr = 0):
    pm, pn = _tile_of(tl.program_id(0), tl.cdiv(n, BN), block_runs, block, BM, GROUP_M)
    m0 = pm * BM
    if m0 >= tl.load(num_valid):
        return
    e = tl.load(block_experts + m0 // block)
    if (e < 0) | (e >= local_experts):
        return
    rm = m0 + tl.arange(0, BM)
    q = tl.load(sorted_rows + rm)
    valid = (q >= 0) & (q < pairs)
    if gather != 0:
        src = tl.where(valid, q // topk, 0)  # token 0 stands in for padding rows
    else:
        src = rm
    rk = tl.arange(0, BK)
    a_ptrs = a + src.to(tl.int64)[:, None] * lda + rk[None, :]
    # The tile's weight rows: stage 1 interleaves each column's gate and up rows
    # (c, n + c), so one product of 2 BN columns yields both halves.
    WN: tl.constexpr = 2 * BN if GATED else BN
    r = tl.arange(0, WN)
    col = tl.minimum(pn * BN + (r // 2 if GATED else r), n - 1)  # past n: the last column, not stored
    wr = col + (r % 2) * n if GATED else col
    w_rows = 2 * n if GATED else n  # weight rows an expert
    e64 = e.to(tl.int64)
    w_ptrs = w + e64 * w_rows * k + wr.to(tl.int64)[:, None] * k + rk[None, :]
    kgroups = k // 128
    w_block = e64 * (w_rows // 128) + wr // 128  # block-scaled: the rows' 128 x 128 weight blocks
    steps = k // BK
    first = steps * 0  # an int32 like the part's start (a runtime branch sets it)
    if splits > 1:  # this program's part of K
        per = tl.cdiv(steps, splits)
        first = tl.minimum(tl.program_id(1) * per, steps)
        steps = tl.minimum(first + per, steps)
        a_ptrs += first * BK
        w_ptrs += first * BK
    acc = tl.zeros((BM, WN), dtype=tl.float32)
    for step in range(first, steps):
        x = tl.load(a_ptrs)
        y = tl.load(w_ptrs)
        if BLOCK_SCALED:
            sa = tl.load(a_scale + rm.to(tl.int64) * kgroups + step)
            sw = tl.load(w_scale + w_block * kgroups + step)
            acc += tl.dot(x, tl.trans(y)) * sa[:, None] * sw[None, :]
        elif PROMOTE > 0:  # fp8 on sm_90a: wgmma's partial sums added to fp32 every PROMOTE values of K
            acc = tl.dot(x, tl.trans(y), acc, max_num_imprecise_acc=PROMOTE)
        else:
            acc = tl.dot(x, tl.trans(y), acc)
        a_ptrs += BK
        w_ptrs += BK
    if SCALED:  # per channel: row scale times weight-row scale
        acc = acc * tl.load(a_scale + rm)[:, None] * tl.load(w_scale + e64 * w_rows + wr)[None, :]
    rn = pn * BN + tl.arange(0, BN)
    if GATED:
        g, u = tl.split(tl.reshape(acc, (BM, BN, 2)))
        _store(out, rm, rn, ldo, n, valid, _gated(g, u, act), out_kind)
    elif splits > 1:
        _store_part(out, q, valid, pairs, rn, ldo, n, acc)
    elif combine != 0:
        _accumulate(out, q, valid, topk, rn, ldo, n, acc, weights, weights_stride, combine)
    else:
        _store(out, tl.where(valid, q, 0), rn, ldo, n, valid, acc, out_kind)
