#!/usr/bin/env python3
"""quant_per_tensor (bf16 -> fp8 e4m3fn, dynamic scale) at many sizes: the
single-call CUDA-graph replay of bench_memory_ops.py (L2 flushed before each,
median of 3 graphs) and, up to 2^20 elements, 20 calls back to back a graph.
Which library: AITER_LIBRARY / AITER_KERNEL_PATH, so that two builds can be
compared in turns, each in its own process, e.g.:
  python3 benchmarks/bench_per_tensor_sizes.py 2048x4096,4096x4096 --tag new"""
import argparse
import statistics

import bench_memory_ops as bench

p = argparse.ArgumentParser()
p.add_argument("sizes", help="tokens x hidden, comma-separated: 4096x4096,8192x4096")
p.add_argument("--tag", default="", help="printed at the start of each line")
args = p.parse_args()
for size in args.sizes.split(","):
    tokens, hidden = (int(n) for n in size.split("x"))
    case = bench.case_for("quant_per_tensor", tokens, hidden)
    call = lambda case=case: case.ours(*case.inputs)
    one = statistics.median(bench.bench_graph(call) for _ in range(3))
    x20 = bench.bench_graph(call, calls=bench.BACK_TO_BACK) if tokens * hidden <= 1 << 20 else float("nan")
    print(f"{args.tag} {tokens:6d} x {hidden:5d}  one call {one:7.2f} us  20 calls {x20:6.2f} us a call", flush=True)
