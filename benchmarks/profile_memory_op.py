#!/usr/bin/env python3
"""Runs one op of bench_memory_ops.py, libaiter's and torch.compile's, a few
times, for Nsight Compute to compare the kernels side by side, e.g.:
  ncu --kernel-name regex:'aiter_|triton' --launch-skip 6 --launch-count 2 \\
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \\
      python3 benchmarks/profile_memory_op.py layernorm 16384 8192
Add `aiter` after the sizes to run libaiter's kernel alone."""
import sys

import torch

from bench_memory_ops import case_for

op, tokens, hidden = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
only_aiter = "aiter" in sys.argv[4:]
case = case_for(op, tokens, hidden)
compiled = torch.compile(case.peer)
for _ in range(4):
    case.ours(*case.inputs)
    if not only_aiter:
        compiled(*case.inputs)
torch.cuda.synchronize()
