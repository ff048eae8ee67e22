#!/usr/bin/env python3
"""Times one bf16 GEMM variant and cuBLAS (F.linear) against K at fixed M x N,
in one run.  Time grows with K at the mainloop's rate; what is left at K = 0
is the cost per tile outside it (the epilogue, filling the pipeline), e.g.:
  python3 benchmarks/gemm_k_scan.py wgmma_ws.bf16.128x256.s4
Times are medians of triton.testing.do_bench (inputs stay in L2 where they fit:
this compares the two kernels' shapes of cost, it is not bench_gemm.py's method)."""
import sys

import torch
import torch.nn.functional as F
import triton

import aiter

SIZES = [(4096, 4096), (8192, 8192)]
KS = [512, 1024, 2048, 4096, 8192]


def median_us(fn):
    return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median") * 1e3


def main(variant):
    warm = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    median_us(lambda: F.linear(warm, warm))  # clocks up before the first timed case
    for m, n in SIZES:
        for k in KS:
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            with aiter.tuning.force_variant("gemm_a16w16", variant):
                ours = median_us(lambda: aiter.gemm_a16w16(a, w))
            peer = median_us(lambda: F.linear(a, w))
            flop = 2 * m * n * k / 1e6
            print(f"M {m} N {n} K {k}: {variant} {ours:.1f} us {flop / ours:.0f} TFLOP/s | "
                  f"cuBLAS {peer:.1f} us {flop / peer:.0f} TFLOP/s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "wgmma_ws.bf16.128x256.s4")
