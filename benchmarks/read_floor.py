"""The fastest plain read of N bytes we know on this GPU: a Triton kernel that
streams them once (xor-folded into one word a program), best of a few shapes,
timed by the caller's time_fn, the one its benchmark times libaiter with
(bench_mla.py, bench_attention.py: triton.testing.do_bench, L2 flushed between
runs; bench_moe_floor.py, like bench_moe.py: CUDA-graph replays back to back,
L2 not flushed).

A kernel that must read N bytes cannot take less than this; where a target asks
more of such a kernel than the plain read reaches, the target is past a measured
bound (bench_mla.py and bench_attention.py print it beside the copy).

routed_read_floor_ms: the same read of a few experts' weights, located through
expert ids that a kernel before it writes, both in one timed call: the least a
MoE layer behind an ABI whose routing is its own op can take (bench_moe_floor.py).
"""
import functools

import torch
import triton
import triton.language as tl

SHAPES = ((1024, 4, 4), (2048, 4, 8), (4096, 4, 8), (2048, 8, 8))  # (elements a step, steps, warps)


@triton.jit
def _read(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in range(STEPS):
        offs = (pid * STEPS + i) * BLOCK + tl.arange(0, BLOCK)
        acc ^= tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + pid, tl.sum(acc))


@functools.lru_cache(maxsize=None)  # cases of the same size share one measurement
def read_floor_ms(nbytes, time_fn):
    """The least time_fn(callable) in ms over SHAPES for a plain read of nbytes (rounded up to 4)."""
    x = torch.empty((nbytes + 3) // 4, dtype=torch.int32, device="cuda")
    best = None
    for block, steps, warps in SHAPES:
        grid = triton.cdiv(x.numel(), block * steps)
        out = torch.empty(grid, dtype=torch.int32, device="cuda")
        ms = time_fn(lambda: _read[(grid,)](x, out, x.numel(), BLOCK=block, STEPS=steps, num_warps=warps))
        best = ms if best is None else min(best, ms)
    del x
    return best


@triton.jit
def _pick(ids_ptr, n):
    """The least a routing op does before any expert's weights can be read: n ids in memory."""
    offs = tl.arange(0, 1024)
    tl.store(ids_ptr + offs, offs, mask=offs < n)


@triton.jit
def _read_picked(w_ptr, ids_ptr, out_ptr, expert_words, programs_an_expert, BLOCK: tl.constexpr,
                 STEPS: tl.constexpr):
    pid = tl.program_id(0)
    chunk = pid % programs_an_expert
    expert = tl.load(ids_ptr + pid // programs_an_expert).to(tl.int64)  # where to read is known only now
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for i in range(STEPS):
        offs = (chunk * STEPS + i) * BLOCK + tl.arange(0, BLOCK)
        acc ^= tl.load(w_ptr + expert * expert_words + offs, mask=offs < expert_words, other=0)
    tl.store(out_ptr + pid, tl.sum(acc))


def routed_read(w, ids, out, expert_words, block, steps, warps):
    """Writes len(ids) expert ids, then reads those experts' expert_words int32 words of w
    (each xor-folded into out, a word a program); returns nothing."""
    programs_an_expert = triton.cdiv(expert_words, block * steps)
    _pick[(1,)](ids, ids.numel())
    _read_picked[(ids.numel() * programs_an_expert,)](w, ids, out, expert_words, programs_an_expert, BLOCK=block,
                                                      STEPS=steps, num_warps=warps)


@functools.lru_cache(maxsize=None)
def routed_read_floor_ms(expert_bytes, experts, time_fn):
    """The least time_fn(callable) in ms over SHAPES for routed_read of `experts`
    (<= 1024) experts of expert_bytes each (rounded up to 4)."""
    assert 0 < experts <= 1024, "_pick writes at most 1024 ids"
    words = (expert_bytes + 3) // 4
    w = torch.empty(experts * words, dtype=torch.int32, device="cuda")
    ids = torch.empty(experts, dtype=torch.int32, device="cuda")
    best = None
    for block, steps, warps in SHAPES:
        out = torch.empty(experts * triton.cdiv(words, block * steps), dtype=torch.int32, device="cuda")
        ms = time_fn(lambda: routed_read(w, ids, out, words, block, steps, warps))
        best = ms if best is None else min(best, ms)
    del w
    return best
