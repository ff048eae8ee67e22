#!/usr/bin/env python3
"""The MoE routing kernels alone on the GPU: microseconds a call.

usage: python3 benchmarks/bench_moe_routing.py [--tokens 1,64,1024,4096]

biased_grouped_topk at DeepSeek-V3's shape (256 experts in 8 groups, the best
4 groups, top 8) at each T, and topk_softmax at T 1 for 8, 128 and 256
experts.  Each call is captured 20 times in one CUDA graph; 10 replays are
timed by events and the median of 5 such timings printed, so launch gaps and
Python stay out of the numbers (they are the kernels' latency at small T).
Run it against two builds (AITER_LIBRARY=...) for a before / after.
"""
import argparse
import os
import sys

import torch

import aiter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_moe import graphed, timed  # noqa: E402


def per_call_us(fn, calls=20, replays=10):
    """fn's time a call: `calls` calls captured in one graph, its replays timed."""
    replay = graphed(lambda: [fn() for _ in range(calls)])
    return timed(replay, replays) / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,64,1024,4096")
    args = ap.parse_args()
    dev = "cuda"
    print(torch.cuda.get_device_name())
    for tokens in map(int, args.tokens.split(",")):
        gating = torch.randn(tokens, 256, device=dev, dtype=torch.bfloat16)
        bias = torch.randn(256, device=dev) / 10
        w = torch.empty(tokens, 8, device=dev)
        ids = torch.empty(tokens, 8, device=dev, dtype=torch.int32)
        us = per_call_us(lambda: aiter.biased_grouped_topk(gating, bias, 8, 8, 4, routed_scaling_factor=2.5,
                                                           topk_weights=w, topk_ids=ids))
        print(f"biased_grouped_topk E256 groups 8/4 k8 T{tokens:<5d} {us:8.2f} us")
    for experts, k in ((8, 2), (128, 8), (256, 8)):
        gating = torch.randn(1, experts, device=dev, dtype=torch.bfloat16)
        w = torch.empty(1, k, device=dev)
        ids = torch.empty(1, k, device=dev, dtype=torch.int32)
        us = per_call_us(lambda: aiter.topk_softmax(gating, k, topk_weights=w, topk_ids=ids))
        print(f"topk_softmax E{experts:<3d} k{k} T1 {us:8.2f} us")


if __name__ == "__main__":
    main()
