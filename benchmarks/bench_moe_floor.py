#!/usr/bin/env python3
"""The fixed cost of libaiter's MoE layer at decode: the same chain of kernels
(routing, sort, [quantization], stage 1, [quantization], stage 2, combine)
with the experts, k and dtypes of a model preset but hidden = inter = 128, so
that the weights stream in well under a microsecond and what is timed is the
chain itself; set beside the device copy of the real layer's touched expert
weights, it bounds the share of the copy bandwidth the real layer can reach:
bytes / copy_rate / (floor + bytes / copy_rate).

A second bound, of any layer behind this ABI (routing is its own op, whose ids
fused_moe reads): the routing kernel alone, then the fastest plain read of the
touched weights (read_floor.py, timed the same way): bytes / copy_rate /
(routing + read).

A third, of any layer whatever its routing kernel: one call of a kernel that
only writes the k expert ids, then the plain read of those experts' weights,
found through the ids (read_floor.routed_read_floor_ms): bytes / copy_rate /
that time.  Where a target asks more than this, it is past a measured bound.

usage: python3 benchmarks/bench_moe_floor.py [--tokens 1,8,64]

The touched experts are those the floor layer's routing of random logits picks
(at T 1 a token's k distinct experts: the real layer's bytes exactly).

Same timing as bench_moe.py (CUDA-graph replays, median of 5).  Needs a
CUDA GPU and torch."""
import argparse
import itertools
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_moe import SHAPES, copy_bandwidth, deepseek_weights, graphed, quantize_channels, timed  # noqa: E402
from read_floor import read_floor_ms, routed_read_floor_ms  # noqa: E402

import aiter  # noqa: E402

TINY = 128  # hidden and inter of the floor's layer: one K step of every kernel


def layer(experts, k, tokens, kind, hidden, inter):
    """(routing, the MoE op, the ids routing writes) of a routed layer of this shape (random weights), as
    bench_moe.py runs them."""
    dev, dt = "cuda", torch.bfloat16
    x = torch.randn(tokens, hidden, device=dev, dtype=dt)
    gating = torch.randn(tokens, experts, device=dev, dtype=dt)
    w_buf = torch.empty(tokens, k, device=dev)
    id_buf = torch.empty(tokens, k, device=dev, dtype=torch.int32)
    elem = 2 if kind == "bf16" else 1
    ws = torch.empty(aiter.fused_moe_workspace_size(tokens, k, experts, hidden, inter, elem_bytes=elem),
                     dtype=torch.uint8, device=dev)
    out = torch.empty_like(x)
    if kind == "blockscale":
        w1, w2, s1, s2 = deepseek_weights(experts, hidden, inter)
        bias = torch.randn(experts, device=dev) / 10
        return (lambda: aiter.biased_grouped_topk(gating, bias, k, 8, 4, routed_scaling_factor=2.5, topk_weights=w_buf,
                                                  topk_ids=id_buf),
                lambda: aiter.fused_moe_fp8(x, w1, w2, s1, s2, w_buf, id_buf, out=out, workspace=ws), id_buf)
    w1 = torch.randn(experts, 2 * inter, hidden, device=dev, dtype=dt) / hidden ** 0.5
    w2 = torch.randn(experts, hidden, inter, device=dev, dtype=dt) / inter ** 0.5
    routing = lambda: aiter.topk_softmax(gating, k, topk_weights=w_buf, topk_ids=id_buf)  # noqa: E731
    if kind == "fp8":
        (w1q, s1), (w2q, s2) = quantize_channels(w1), quantize_channels(w2)
        return routing, lambda: aiter.fused_moe_fp8(x, w1q, w2q, s1, s2, w_buf, id_buf, out=out, workspace=ws), id_buf
    return routing, lambda: aiter.fused_moe(x, w1, w2, w_buf, id_buf, out=out, workspace=ws), id_buf


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", default="1", help="comma-separated token counts")
    args = ap.parse_args()
    copy_tbs = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  device copy {copy_tbs:.2f} TB/s")
    presets = [("mixtral", "bf16"), ("mixtral", "fp8"), ("qwen3", "bf16"), ("qwen3", "fp8"),
               ("deepseek-bf16", "blockscale")]
    graph_ms = lambda fn: timed(graphed(fn), 50) / 1e3  # noqa: E731  (one function: read_floor's caches key on it)
    for tokens, (name, kind) in itertools.product(map(int, args.tokens.split(",")), presets):
        experts, k, hidden, inter = SHAPES[name]
        torch.manual_seed(0)
        routing, moe, ids = layer(experts, k, tokens, kind, TINY, TINY)
        floor = timed(graphed(lambda: (routing(), moe())), 200)
        routing_us = timed(graphed(routing), 200)
        touched = torch.unique(ids).numel()
        expert_bytes = 3 * hidden * inter * (2 if kind == "bf16" else 1)
        weight_bytes = touched * expert_bytes
        stream_us = weight_bytes / copy_tbs / 1e6
        read_us = 1e3 * read_floor_ms(weight_bytes, graph_ms)
        any_us = 1e3 * routed_read_floor_ms(expert_bytes, touched, graph_ms)
        print(f"{name:13s} {kind:10s} T{tokens:<3d} floor {floor:6.1f} us (H = I = {TINY}) | the real layer's "
              f"{touched} experts "
              f"{weight_bytes / 1e6:7.1f} MB: {stream_us:6.1f} us at the copy's rate | best share of copy "
              f"{100 * stream_us / (floor + stream_us):4.0f}% | routing alone {routing_us:5.1f} us + plain read "
              f"{read_us:6.1f} us: {100 * stream_us / (routing_us + read_us):4.0f}% | any layer: ids then read "
              f"{any_us:6.1f} us: {100 * stream_us / any_us:4.0f}%", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
