#!/usr/bin/env python3
"""Streams fp8 weight rows against 8 input rows two ways (benchmarks/fp8_stream.cu:
the decode MoE kernel's mma.sync with every weight widened to fp16, and fp8
wgmma with the codes as register operands), checks both against torch, and
times them beside the plain read of the same bytes.  Where wgmma_rs streams
near the plain read and mma_cvt well below it, the fp8 decode misses of issue
33 are the widening's, and the decode kernel's fp8 path wants wgmma
(docs/performance_moe.md, run 48).

usage: python3 benchmarks/fp8_stream.py [--shapes 57344x4096,86016x2048,32768x7168]

rows x K of the weights (Mixtral fp8 T1's stage 1, about Qwen3-30B fp8 T8's,
DeepSeek-V3's K).  nvcc builds the .cu for sm_90a on the GPU machine (libaiter
never compiles at run time; this is a benchmark).  Timed as bench_moe.py times
(CUDA-graph replays back to back, median of 5).  (Written 2026-11-29 without a
GPU at hand: both kernels compiled for sm_90a here, not yet run.)"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_moe import graphed, timed  # noqa: E402
from read_floor import read_floor_ms  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
THREADS, PER_SM = 256, 2
MAX_DYNAMIC_SMEM = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed: CUDA error {result}")


def load_kernels():
    cubin = os.path.join(tempfile.mkdtemp(), "fp8_stream.cubin")
    subprocess.run(["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-DAITER_NVIDIA",
                    "-I" + os.path.join(os.path.dirname(HERE), "kernels"), "-o", cubin,
                    os.path.join(HERE, "fp8_stream.cu")], check=True)
    torch.zeros(1, device="cuda")  # the primary context, current
    cuda = ctypes.CDLL("libcuda.so.1")
    module = ctypes.c_void_p()
    check(cuda.cuModuleLoad(ctypes.byref(module), cubin.encode()), "cuModuleLoad")
    kernels = {}
    for name in ("mma_cvt", "wgmma_rs"):
        fn = ctypes.c_void_p()
        check(cuda.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), "cuModuleGetFunction")
        kernels[name] = fn
    return cuda, kernels


def launcher(cuda, fn, args, smem):
    """A callable launching fn(*args) (pointers and ints) on torch's current stream."""
    values = [ctypes.c_void_p(a.data_ptr()) if isinstance(a, torch.Tensor) else ctypes.c_int(a) for a in args]
    params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
    if smem > 48 * 1024:
        check(cuda.cuFuncSetAttribute(fn, MAX_DYNAMIC_SMEM, smem), "cuFuncSetAttribute")
    blocks = torch.cuda.get_device_properties(0).multi_processor_count * PER_SM

    def launch():
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(cuda.cuLaunchKernel(fn, blocks, 1, 1, THREADS, 1, 1, smem, stream, params, None), "cuLaunchKernel")
    launch.keep = (values, params)  # the argument storage lives as long as the callable
    return launch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="57344x4096,86016x2048,32768x7168", help="rows x K of the weights")
    args = ap.parse_args()
    cuda, kernels = load_kernels()
    graph_us = lambda fn: timed(graphed(fn), 20)  # noqa: E731
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}")
    for shape in args.shapes.split(","):
        rows, k = map(int, shape.split("x"))
        assert rows % 64 == 0 and k % 256 == 0, "rows a multiple of 64, K of 256"
        torch.manual_seed(0)
        w = (torch.randn(rows, k, device="cuda") * 2).to(torch.float8_e4m3fn)
        x = (torch.randn(8, k, device="cuda") * 2).to(torch.float8_e4m3fn)
        want = x.float() @ w.float().t()  # [8, rows]
        plain_us = 1e3 * read_floor_ms(rows * k, lambda fn: graph_us(fn) / 1e3)
        print(f"W {rows} x {k} e4m3, {rows * k / 1e6:.0f} MB: plain read {plain_us:7.1f} us "
              f"({rows * k / plain_us / 1e6:.2f} TB/s)")
        inputs = {"mma_cvt": (x.to(torch.float16), 0), "wgmma_rs": (x.view(torch.uint8), 8 * k + 1024)}
        for name, (xin, smem) in inputs.items():
            y = torch.full((8, rows), float("nan"), device="cuda")
            run = launcher(cuda, kernels[name], (w.view(torch.uint8), xin, y, rows, k), smem)
            run()
            torch.cuda.synchronize()
            err = ((y - want).abs().max() / want.abs().max()).item()
            us = graph_us(run)
            print(f"  {name:8s} {us:7.1f} us ({rows * k / us / 1e6:.2f} TB/s, {plain_us / us:.2f} of the plain "
                  f"read), max error / max |y| {err:.1e}", flush=True)
        del w
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
