"""The fastest plain read of N bytes we know on this GPU: a Triton kernel that
streams them once (xor-folded into one word a program), best of a few shapes,
timed like the benchmarks time libaiter (CUDA-graph replay, L2 flushed).

A kernel that must read N bytes cannot take less than this; where a target asks
more of such a kernel than the plain read reaches, the target is past a measured
bound (bench_mla.py and bench_attention.py print it beside the copy).
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
