#!/usr/bin/env python3
"""Named GEMM variants, each forced on every shape of a kind's shape sets and
timed against the same peer as bench_gemm.py, in one run: for choosing between
kernels before tuning, or for an A/B of two builds of one variant (run twice
with AITER_KERNEL_PATH pointing at each).

usage: python3 benchmarks/bench_gemm_variants.py --kind blockscale --m 1024,4096 \\
           wgmma_ws.e4m3fn.128x128.s6.bs wgmma_ws.e4m3fn.192x128.s4.bs

Prints, per shape, each variant's time, TFLOP/s, peer time / ours and
relative difference from the peer, then per variant the geometric mean of
peer time / ours at each M.  Timing as in bench_gemm.py (graph replays past
the L2, ours and the peer's in turns).  A variant that cannot run a shape is
reported and left out of the means.
"""
import argparse
import collections

import torch

import aiter
from bench_gemm import KIND_SETS, SETS, copies_for, geomean, inputs, ours, paired_time_us, peer

OPS = {"bf16": "gemm_a16w16", "fp8": "gemm_a8w8", "blockscale": "gemm_a8w8_blockscale"}


def forced(kind, variant, s, out):
    call = ours(kind, s, out)

    def run():
        with aiter.tuning.force_variant(OPS[kind], variant):
            return call()
    return run


def measure_shape(kind, m, n, k, variants, ratios):
    itemsize = 2 if kind == "bf16" else 1
    sets = inputs(kind, m, n, k, copies_for((m * k + n * k) * itemsize + m * n * 2))
    outs = [torch.empty(m, n, dtype=torch.bfloat16, device="cuda") for _ in sets]
    peer_calls = [peer(kind, s) for s in sets]
    ref = peer_calls[0]().float()
    line = f"M={m} N={n} K={k}:"
    for variant in variants:
        calls = [forced(kind, variant, s, o) for s, o in zip(sets, outs)]
        try:
            calls[0]()
        except aiter.AiterError as e:
            line += f" {variant}: {str(e).splitlines()[0][:80]};"
            continue
        diff = float((outs[0].float() - ref).norm() / ref.norm())
        us, peer_us = paired_time_us(calls, peer_calls)
        ratios[(m, variant)].append(peer_us / us)
        line += f" {variant} {us:.1f} us {2 * m * n * k / us / 1e6:.0f} TFLOP/s x{peer_us / us:.2f} diff {diff:.1e};"
    print(line, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", default="blockscale", choices=list(KIND_SETS))
    p.add_argument("--m", default="1024,2048,4096,8192")
    p.add_argument("variants", nargs="+")
    args = p.parse_args()
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, libaiter {aiter.__version__}")
    ms = [int(x) for x in args.m.split(",")]
    ratios = collections.defaultdict(list)
    for m in ms:
        for set_name in KIND_SETS[args.kind]:
            for n, k in SETS[set_name]:
                measure_shape(args.kind, m, n, k, args.variants, ratios)
    for variant in args.variants:
        per_m = " ".join(f"M={m} {geomean(ratios[(m, variant)]):.3f}x" for m in ms if ratios[(m, variant)])
        every = [r for m in ms for r in ratios[(m, variant)]]
        print(f"{variant}: peer time / ours, geometric mean: {per_m}; all {geomean(every):.3f}x")


if __name__ == "__main__":
    main()
