#!/usr/bin/env python3
"""One libaiter rmsnorm and one torch.compile rmsnorm (16384 x 4096 bf16), for
Nsight Compute to compare side by side:
  ncu --kernel-name regex:'aiter_norm|triton' --launch-skip 3 --launch-count 2 \\
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \\
      python3 benchmarks/profile_rmsnorm.py"""
import torch

import aiter
from bench_memory_ops import t_rmsnorm

x = torch.randn(16384, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
compiled = torch.compile(t_rmsnorm)
import sys
only_aiter = "aiter" in sys.argv[1:]  # profile libaiter's kernel alone: simpler for --kernel-name
for _ in range(4):
    aiter.rmsnorm(x, w)
    if not only_aiter:
        compiled(x, w)
torch.cuda.synchronize()
