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
import torch.nn.functional as F

import aiter

FP8 = torch.float8_e4m3fn
m, n, k = (int(x) for x in sys.argv[1:4]) if len(sys.argv) >= 4 else (4096, 7168, 16384)
a = (torch.randn(m, k, device="cuda") * 4).to(FP8)
w = (torch.randn(n, k, device="cuda") * 4).to(FP8)
groups = -(-k // 128)
block_a = torch.rand(m, groups, device="cuda") / 16 + 0.01
block_w = torch.rand(-(-n // 128), groups, device="cuda") / 16 + 0.01
row_a = torch.rand(m, 1, device="cuda") / 16 + 0.01
row_w = torch.rand(1, n, device="cuda") / 16 + 0.01


def forced(variant):
    def call():
        with aiter.tuning.force_variant("gemm_a8w8", variant):
            return aiter.gemm_a8w8(a, w, row_a, row_w)
    return call


S = F.ScalingType
calls = [
    ("aiter block-scaled", lambda: aiter.gemm_a8w8_blockscale(a, w, block_a, block_w)),
    ("F.scaled_mm block-wise", lambda: F.scaled_mm(a, w.t(), block_a.t().contiguous().t(), S.BlockWise1x128,
                                                    block_w.t(), S.BlockWise128x128, output_dtype=torch.bfloat16)),
    ("torch._scaled_mm rowwise", lambda: torch._scaled_mm(a, w.t(), scale_a=row_a, scale_b=row_w,
                                                          out_dtype=torch.bfloat16)),
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
