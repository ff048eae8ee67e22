#!/usr/bin/env python3
"""Does the order of a read's requests change its rate?  The decode MoE kernel
(kernels/moe/moe_decode.cu) streams expert weights a warp 16 rows at a time,
256 bytes of each row a batch, and reaches 76-88% of the copy's rate in its
stages, where a plain read of the same bytes reaches 100% or more
(docs/performance_moe.md, run 48).  Weight prefetches into L2 made it slower,
so the number of loads in flight is not what holds it back.  This times reads
of the same matrix in several orders:

  rows R, chunk C: each program reads R whole rows, C bytes of each at a time
                   (R 16, C 256: the decode kernel's batch; C 1024: four warps
                   of a team taking adjacent batches of the same rows);
  plain:           read_floor.py's contiguous read (the bound).

usage: python3 benchmarks/read_pattern.py [--row-bytes 2048,4096] [--mbytes 256]

Timed as bench_moe_floor.py times (CUDA-graph replays back to back, median of
5); the matrix (256 MB by default) is far larger than L2.  Needs a CUDA GPU,
torch and triton.  (Written 2026-11-29 without a GPU at hand: compiled for
sm_90 by Triton 3.9 here, not yet run.)"""
import argparse
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_moe import graphed, timed  # noqa: E402
from read_floor import read_floor_ms  # noqa: E402

ORDERS = ((16, 256, 1), (16, 256, 4), (16, 1024, 4), (16, 1024, 8), (8, 2048, 4), (1, 2048, 4))  # rows, chunk, warps


@triton.jit
def _read_rows(x_ptr, out_ptr, row_words, ROWS: tl.constexpr, CHUNK: tl.constexpr):
    """Program p xor-folds rows [p ROWS, (p + 1) ROWS) of x, CHUNK words of each a step."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros([ROWS, CHUNK], dtype=tl.int32)
    for k0 in range(0, row_words, CHUNK):
        cols = k0 + tl.arange(0, CHUNK)
        acc ^= tl.load(x_ptr + rows[:, None] * row_words + cols[None, :], mask=(cols < row_words)[None, :], other=0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc))


def read_rows(x, out, row_words, rows, chunk_words, warps):
    _read_rows[(x.numel() // row_words // rows,)](x, out, row_words, ROWS=rows, CHUNK=chunk_words, num_warps=warps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row-bytes", default="2048,4096,14336", help="bytes a row (the stages' K: Qwen3-30B fp8 "
                    "stage 1 2048, Mixtral fp8 stage 1 4096, stage 2 14336)")
    ap.add_argument("--mbytes", type=int, default=256, help="the matrix's size in MB")
    args = ap.parse_args()
    graph_us = lambda fn: timed(graphed(fn), 20)  # noqa: E731
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}")
    for row_bytes in map(int, args.row_bytes.split(",")):
        row_words = row_bytes // 4
        n_rows = args.mbytes * 2**20 // row_bytes // 16 * 16
        x = torch.randint(-2**31, 2**31 - 1, (n_rows * row_words,), dtype=torch.int32, device="cuda")
        nbytes = 4 * x.numel()
        plain_us = 1e3 * read_floor_ms(nbytes, lambda fn: graph_us(fn) / 1e3)
        print(f"rows of {row_bytes} B, {nbytes / 1e6:.0f} MB: plain read {plain_us:7.1f} us "
              f"({nbytes / plain_us / 1e6:.2f} TB/s)")
        for rows, chunk, warps in ORDERS:
            if chunk > row_bytes:
                continue
            out = torch.empty(n_rows // rows, dtype=torch.int32, device="cuda")
            us = graph_us(lambda: read_rows(x, out, row_words, rows, chunk // 4, warps))
            print(f"  rows {rows:2d}, {chunk:5d} B of each a step, {warps} warps: {us:7.1f} us "
                  f"({nbytes / us / 1e6:.2f} TB/s, {plain_us / us:.2f} of the plain read)", flush=True)
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
