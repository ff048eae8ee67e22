#!/usr/bin/env python3
"""Graph replay of silu/gelu_and_mul (bf16) against torch.compile, in one process
on the current GPU: x 16-byte aligned ("aligned": the launcher's pick of kernel,
16-byte chunks, or 2-element ones for an exact GELU on few rows) and x one
element off ("unaligned": the one-element kernel).  Run from the repository root:
  python3 benchmarks/bench_gated_small.py [--tokens 1,16]"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_memory_ops as b  # noqa: E402
import aiter  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--tokens", default="1,16", help="comma-separated token counts")
args = parser.parse_args()

# aiter's gelu_and_mul defaults to the exact (erf) GELU, as F.gelu does; bench_memory_ops times the tanh form.
comp = {"silu": torch.compile(b.t_silu_and_mul),
        "gelu": torch.compile(lambda x: F.gelu(x[..., :x.shape[-1] // 2]) * x[..., x.shape[-1] // 2:])}
for act in ("silu", "gelu"):
    fn = getattr(aiter, act + "_and_mul")
    for tokens in (int(t) for t in args.tokens.split(",")):
        for hidden in (4096, 8192):
            buf = torch.randn(tokens, 2 * hidden + 8, device="cuda", dtype=torch.bfloat16)
            xa, xm = buf[:, :2 * hidden], buf[:, 1:1 + 2 * hidden]
            out = torch.empty(tokens, hidden, device="cuda", dtype=torch.bfloat16)
            torch.testing.assert_close(fn(xm, out=out), comp[act](xm), rtol=2e-2, atol=2e-2)
            torch.testing.assert_close(fn(xa, out=out), comp[act](xa), rtol=2e-2, atol=2e-2)
            va = b.bench_graph(lambda: fn(xa, out=out))
            vm = b.bench_graph(lambda: fn(xm, out=out))
            vc = b.bench_graph(lambda: comp[act](xa))
            print(f"{act} {tokens:4d} x {hidden}: aligned {va:.2f}  unaligned {vm:.2f}  compile {vc:.2f} us"
                  " (graph replay)", flush=True)
