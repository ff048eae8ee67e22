#!/usr/bin/env python3
"""Where a memory-bound MLA decode tile's time goes, from a diagnostic build.

usage: git apply tools/diag/mla_timeline.patch  (against fab856b's kernel; a
           developer build only: it writes SM clocks into the workspace)
       meson setup build-tl -Dgpu_targets=sm_90a -Dgpu_kernels=mla,mla_mma,mla_wgmma && ninja -C build-tl
       git apply -R tools/diag/mla_timeline.patch
       AITER_LIBRARY=$PWD/build-tl/libaiter.so.0 python3 tools/diag/mla_timeline.py

The patched kernel (one split, so that the workspace is free) has its copier and
the two consumers' first threads write clock64 at eight points of each of a
block's first 64 tiles: 0 the tile's copy issued (after its buffer came back),
1 S ready to issue, 2 / 3 its first / last copy landed, 4 S done, 5 P published,
6 / 7 warpgroup 1's / 2's P V done and the buffer handed back.  Printed: medians
over blocks and the middle tiles, in SM cycles, for 128, 64 and 32 blocks at
once (the same period at every count means latency, not bandwidth, bounds it).
Results: docs/performance_mla.md, "A third of a tile a copy".
"""
import sys

import numpy as np
import torch

sys.path.insert(0, "benchmarks")
from bench_mla import D, DV, PAGE, SCALE, bench  # noqa: E402

import aiter  # noqa: E402

STAMPS = 8


def timeline(b, ctx):
    pages = ctx // PAGE
    cache = torch.randn(b * pages, PAGE, D, device="cuda", dtype=torch.bfloat16)
    table = torch.randperm(b * pages, device="cuda", dtype=torch.int32).view(b, pages)
    lens = torch.full((b,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(b, 1, 16, D, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(b, 1, 16, DV, device="cuda", dtype=torch.bfloat16)
    ws = torch.zeros(b * 64 * STAMPS * 2 + 1024, device="cuda")  # u64 stamps [block][tile][8]
    call = lambda: aiter.mla_decode(q, cache, table, lens, SCALE, workspace=ws, out=out, num_splits=1)
    us = bench(call) * 1e3
    ws.zero_()
    call()
    torch.cuda.synchronize()
    tiles = min(ctx // 64, 64)
    st = ws[: b * 64 * STAMPS * 2].view(torch.int64).view(b, 64, STAMPS)[:, :tiles].cpu().numpy().astype(np.float64)
    return us, st, tiles


def report(b, ctx):
    us, st, tiles = timeline(b, ctx)
    mid = slice(4, tiles - 4)
    med = lambda x: f"{float(np.median(x)):,.0f}"
    span = lambda a, z: med((st[:, :, z] - st[:, :, a])[:, mid])
    handed_back = np.maximum(st[:, :, 6], st[:, :, 7])
    print(f"B{b} ctx{ctx}, one split ({b} blocks, {tiles} tiles): {us:.1f} us, "
          f"{b * ctx * D * 2 / us / 1e6:.2f} TB/s; SM cycles a tile:")
    print(f"  period (S done to S done) {med(np.diff(st[:, :, 4], axis=1)[:, mid])}")
    print(f"  copy issued to first / last part landed {span(0, 2)} / {span(0, 3)}; S ready to last landed {span(1, 3)}")
    print(f"  last landed to S done {span(3, 4)}; S done to P published {span(4, 5)}; "
          f"to warpgroup 1's P V done {span(5, 6)}; warpgroup 2's later by {span(6, 7)}")
    print(f"  buffer handed back to the copy of tile j + 2 issued "
          f"{med((st[:, 2:, 0] - handed_back[:, :-2])[:, 4:tiles - 6])}")


if __name__ == "__main__":
    for b, ctx in ((128, 4096), (64, 4096), (32, 4096)):
        report(b, ctx)
        torch.cuda.empty_cache()
