#!/usr/bin/env python3
"""One call each of libaiter's and the peer's fp8 GEMMs at one shape, block-scaled
and rowwise, for Nsight Compute to compare the kernels side by side, e.g.:
  ncu --clock-control none --profile-from-start off --set full --kernel-name regex:'aiter_gemm|nvjet' \\
      python3 benchmarks/profile_gemm.py 4096 7168 16384
Before profiling, prints each call's time (events around five calls, inputs hot
in L2; bench_gemm.py is the benchmark).  Only the calls between
cudaProfilerStart and cudaProfilerStop are profiled."""
import sys

import torch

import aiter
from bench_gemm import inputs, ours, peer

m, n, k = (int(x) for x in sys.argv[1:4]) if len(sys.argv) >= 4 else (4096, 7168, 16384)
block = inputs("blockscale", m, n, k, 1)[0]
row = inputs("fp8", m, n, k, 1)[0]


def forced(variant):
    call = ours("fp8", row, None)

    def forced_call():
        with aiter.tuning.force_variant("gemm_a8w8", variant):
            return call()
    return forced_call


calls = [
    ("aiter block-scaled", ours("blockscale", block, None)),
    ("F.scaled_mm block-wise", peer("blockscale", block)),
    ("torch._scaled_mm rowwise", peer("fp8", row)),
    ("aiter rowwise 128x128", forced("wgmma_ws.e4m3fn.128x128.s6")),
    ("aiter rowwise 128x256", forced("wgmma_ws.e4m3fn.128x256.s4")),
]
for name, call in calls:
    for _ in range(3):
        call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        call()
    end.record()
    end.synchronize()
    us = start.elapsed_time(end) * 1e3 / 5
    print(f"{name}: {us:.1f} us, {2 * m * n * k / us / 1e6:.0f} TFLOP/s", flush=True)
torch.cuda.cudart().cudaProfilerStart()
for _, call in calls:
    call()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
