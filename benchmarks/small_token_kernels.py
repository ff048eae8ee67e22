#!/usr/bin/env python3
"""Kernel durations of the memory-bound ops at 1 and 16 tokens, libaiter's and
torch.compile's, from Nsight Compute (the launch left out, unlike graph replay):

  ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \\
      python3 benchmarks/small_token_kernels.py run cases.json [op,op,...] > ncu.csv
  python3 benchmarks/small_token_kernels.py table cases.json ncu.csv

`run` calls each case twice between marker kernels (torch.cuda._sleep) inside
cudaProfilerStart/Stop and writes the cases' order; `table` sums each case's
kernels between markers and prints µs a call, ours / torch.compile's."""
import csv
import io
import json
import sys


def run(cases_path, ops):
    import torch

    import bench_memory_ops as b
    cases = []
    for op in ops:
        compiled = torch.compile(b.case_for(op, 1, 4096).peer)
        for tokens in (1, 16):
            for hidden in (4096, 8192):
                case = b.case_for(op, tokens, hidden)
                for who, call in (("aiter", case.ours), ("compile", compiled)):
                    for _ in range(3):
                        call(*case.inputs)
                    cases.append(((op, tokens, hidden, who), call, case.inputs))
    torch.cuda.synchronize()
    with open(cases_path, "w") as f:
        json.dump([key for key, _, _ in cases], f)
    torch.cuda.cudart().cudaProfilerStart()
    for _, call, inputs in cases:
        torch.cuda._sleep(10)
        call(*inputs)
        call(*inputs)
    torch.cuda._sleep(10)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def table(cases_path, csv_path):
    text = open(csv_path).read()
    rows = list(csv.DictReader(io.StringIO(text[text.index('"ID"'):])))
    kernels = {}
    for r in rows:
        if r["Metric Name"] == "gpu__time_duration.sum":
            kernels[(r["Process ID"], int(r["ID"]))] = (r["Kernel Name"], float(r["Metric Value"].replace(",", "")))
    segments, current = [], None
    for _, (name, ns) in sorted(kernels.items()):
        if "spin_kernel" in name:
            if current is not None:
                segments.append(current)
            current = 0.0
        elif current is not None:
            current += ns
    us = {tuple(key): total / 2 / 1000 for key, total in zip(json.load(open(cases_path)), segments)}
    print("op                  tokens hidden   aiter us  compile us")
    for (op, tokens, hidden, who), t in us.items():
        if who == "aiter":
            print(f"{op:20s}{tokens:6d}{hidden:7d}{t:11.2f}{us[(op, tokens, hidden, 'compile')]:12.2f}")


if __name__ == "__main__":
    if sys.argv[1] == "run":
        import bench_memory_ops
        run(sys.argv[2], sys.argv[3].split(",") if len(sys.argv) > 3 else bench_memory_ops.OPS)
    else:
        table(sys.argv[2], sys.argv[3])
