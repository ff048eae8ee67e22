#!/usr/bin/env python3
"""libaiter's MoE layer (routing + sorting + both expert stages + combine)
against the peers of issue 33, in one run.

usage: python3 benchmarks/bench_moe.py [--shapes mixtral,qwen3,deepseek-bf16] [--tokens 1,8,64,128,1024,4096]
                                       [--kinds bf16,fp8] [--markdown FILE] [--json FILE] [--show-kernels]
                                       [--ours-only]
                                       [--variant mma|mma_n128|mma_n64|triton|triton_wide|triton_narrow|decode|portable]

The stages' path is the library's choice (the tuned table, configs/moe_*.csv,
else Triton stages for prefill sizes where built, on sm_90a the TMA + wgmma
stages for fp8 per channel with K >= 4096; mma.sync stages for decode) unless
--variant forces one of the tuned variants or AITER_MOE_KERNEL=wgmma|triton|mma|portable
a path (where the tuned table chose "mma", the heuristic); the header names it, and the Triton path's switches
AITER_MOE_COMBINE=sums (stage 2 adds its rows to fp32 sums by atomics instead
of a row a pair read back by the combine kernel) and AITER_MOE_SORT=single (the
one-block sort), for before/after timings in one run.  --show-kernels lists the GPU
kernels one call of each row launched with their times (torch.profiler, one
call), to confirm the path and see where the time goes.  --json writes the
rows (for benchmarks/ab_builds.py --metric ours_us); --ours-only skips the
peers' timings (A/B runs of libaiter builds).

Peers, same run, same inputs: a PyTorch loop over experts (eager, its
nonzero() syncs included); torch._grouped_mm (bf16) for the two expert GEMMs
given tokens already sorted by expert (timed alone: "gmm", and with torch's
routing (softmax top-k), argsort, gather, SiLU-and-mul and weighted
index_add: "gmm+route", eager); the device copy bandwidth.  libaiter and the
two grouped-mm calls are captured in CUDA graphs and timed by events over
replays (median of 5 timings); the loop and gmm+route are timed eagerly.  Routing is balanced-random
(softmax of random logits).  Prints TFLOP/s of useful expert work
(2 * T * k * 3 * H * I) and, for decode, the bytes of the touched experts'
weights over the layer's time against the copy bandwidth.  Also checks our
output against the loop's (max relative difference).

fp8 (--kinds fp8): e4m3fn experts with per-channel scales (fused_moe_fp8,
its activations quantized per row inside); peers: the loop on the dequantized
weights, and torch._scaled_grouped_mm (rowwise scales) for the two GEMMs on
tokens already sorted and quantized (the intermediate too), timed alone.
"""
import argparse
import json
import functools
import os
import statistics
import time

import torch
import torch.nn.functional as F

import aiter

SHAPES = {  # name: (experts, k, hidden, inter)
    "mixtral": (8, 2, 4096, 14336),
    "qwen3": (128, 8, 2048, 768),
    "deepseek-bf16": (256, 8, 7168, 2048),
}


# --warm-seconds: each timing first replays its call this long.  Held at it,
# a large fp8 layer runs at the GPU's power limit and lower clocks than a
# short burst gets (an H200 at DeepSeek-V3 T4096: 6.2 ms sustained against
# 5.4-5.9 ms in bursts; docs/performance_moe.md run 41).
WARM_SECONDS = 0.0
OURS_ONLY = False  # --ours-only


def timed(fn, iters):
    until = time.perf_counter() + WARM_SECONDS
    while time.perf_counter() < until:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / iters)
    return statistics.median(times)


def graphed(fn):
    fn()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def copy_bandwidth():
    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = timed(lambda: dst.copy_(src), 10)
    return 2 * src.numel() / us / 1e6  # TB/s


def launched_kernels(fn):
    """'name us' of each GPU kernel a warm call of fn launches, in launch order
    (one profiled call: a breakdown, not a timing)."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            times[e.name[:48]] = times.get(e.name[:48], 0.0) + getattr(e, "device_time_total", 0.0)
    return [f"{name} {us:.0f}" for name, us in times.items()]


def torch_loop(x, w1, w2, weights, ids):
    out = torch.zeros_like(x, dtype=torch.float32)
    inter = w1.shape[1] // 2
    for e in range(w1.shape[0]):
        tok, slot = torch.nonzero(ids == e, as_tuple=True)
        if tok.numel() == 0:
            continue
        h = x[tok] @ w1[e].t()
        h = F.silu(h[:, :inter]) * h[:, inter:]
        out.index_add_(0, tok, (h @ w2[e].t()).float() * weights[tok, slot, None])
    return out.to(x.dtype)


class GroupedMM:
    """torch._grouped_mm on tokens sorted by expert."""

    def __init__(self, x, w1, w2, weights, ids):
        self.x, self.w1t, self.w2t, self.weights, self.ids = x, w1.transpose(-2, -1), w2.transpose(-2, -1), weights, ids
        self.inter = w1.shape[1] // 2
        self.route()

    def route(self):
        tokens, k = self.ids.shape
        flat = self.ids.reshape(-1)
        self.order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=self.w1t.shape[0])
        self.offs = torch.cumsum(counts, 0).to(torch.int32)
        self.tok = self.order // k
        self.xs = self.x[self.tok]

    def gemms(self):
        h = torch._grouped_mm(self.xs, self.w1t, offs=self.offs)
        h = F.silu(h[:, :self.inter]) * h[:, self.inter:]
        return torch._grouped_mm(h, self.w2t, offs=self.offs)

    def layer(self, gating):
        w, ids = torch.topk(torch.softmax(gating.float(), -1), self.ids.shape[1], -1)
        self.ids = ids.to(torch.int32)
        self.route()
        y = self.gemms()
        out = torch.zeros_like(self.x, dtype=torch.float32)
        out.index_add_(0, self.tok, y.float() * w.reshape(-1)[self.order, None])
        return out


def quantize_channels(w):
    """fp8 e4m3fn codes and per-row (output channel) fp32 scales."""
    scale = (w.float().abs().amax(dim=-1, keepdim=True) / 448.0).clamp(min=1e-12)
    return (w.float() / scale).to(torch.float8_e4m3fn), scale.squeeze(-1)


def quantize_rows(x):
    scale = (x.float().abs().amax(dim=-1, keepdim=True) / 448.0).clamp(min=1e-12)
    return (x.float() / scale).to(torch.float8_e4m3fn), scale.squeeze(-1)


class ScaledGroupedMM:
    """torch._scaled_grouped_mm (rowwise) on sorted, quantized tokens."""

    def __init__(self, gmm, w1q, s1, w2q, s2):
        self.xq, self.xs = quantize_rows(gmm.xs)
        self.w1t, self.s1, self.w2t, self.s2, self.offs = w1q.transpose(-2, -1), s1, w2q.transpose(-2, -1), s2, gmm.offs
        h = torch._scaled_grouped_mm(self.xq, self.w1t, self.xs, self.s1, offs=self.offs, out_dtype=torch.bfloat16)
        inter = h.shape[1] // 2
        self.hq, self.hs = quantize_rows(F.silu(h[:, :inter]) * h[:, inter:])

    def gemms(self):
        torch._scaled_grouped_mm(self.xq, self.w1t, self.xs, self.s1, offs=self.offs, out_dtype=torch.bfloat16)
        return torch._scaled_grouped_mm(self.hq, self.w2t, self.hs, self.s2, offs=self.offs, out_dtype=torch.bfloat16)


def bench_shape(name, tokens, copy_tbs, rows, kind="bf16", show_kernels=False):
    experts, k, hidden, inter = SHAPES[name]
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    x = torch.randn(tokens, hidden, device=dev, dtype=dt)
    w1 = torch.randn(experts, 2 * inter, hidden, device=dev, dtype=dt) / hidden ** 0.5
    w2 = torch.randn(experts, hidden, inter, device=dev, dtype=dt) / inter ** 0.5
    gating = torch.randn(tokens, experts, device=dev, dtype=dt)
    weights, ids = aiter.topk_softmax(gating, k, renormalize=False)
    ws = torch.empty(aiter.fused_moe_workspace_size(tokens, k, experts, hidden, inter), dtype=torch.uint8, device=dev)
    out = torch.empty_like(x)
    w_buf, id_buf = torch.empty_like(weights), torch.empty_like(ids)

    fp8 = kind == "fp8"
    if fp8:
        w1q, s1 = quantize_channels(w1)
        w2q, s2 = quantize_channels(w2)
        w1 = (w1q.float() * s1[..., None]).to(dt)  # the loop's weights: the dequantized codes
        w2 = (w2q.float() * s2[..., None]).to(dt)
        ws = torch.empty(aiter.fused_moe_workspace_size(tokens, k, experts, hidden, inter, elem_bytes=1),
                         dtype=torch.uint8, device=dev)

    def ours():
        aiter.topk_softmax(gating, k, topk_weights=w_buf, topk_ids=id_buf)
        if fp8:
            aiter.fused_moe_fp8(x, w1q, w2q, s1, s2, w_buf, id_buf, out=out, workspace=ws)
        else:
            aiter.fused_moe(x, w1, w2, w_buf, id_buf, out=out, workspace=ws)

    if show_kernels:
        print(f"  kernels: {', '.join(launched_kernels(ours))}")
    ours_g = graphed(ours)
    torch.cuda.synchronize()
    ref = torch_loop(x, w1, w2, w_buf, id_buf)
    diff = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    iters = max(3, min(200, int(2e12 / (2 * tokens * k * 3 * hidden * inter + 1e9))))
    t_ours = timed(ours_g, iters)
    t_loop = t_gmm = t_gmm_route = float("nan")
    if not OURS_ONLY:
        t_loop = timed(lambda: torch_loop(x, w1, w2, w_buf, id_buf), max(2, iters // 10))
        try:
            gmm = GroupedMM(x, w1, w2, w_buf, id_buf)
            if fp8:
                t_gmm = timed(graphed(ScaledGroupedMM(gmm, w1q, s1, w2q, s2).gemms), iters)
            else:
                t_gmm = timed(graphed(gmm.gemms), iters)
                t_gmm_route = timed(lambda: gmm.layer(gating), iters)  # eager: bincount / argsort do not capture
        except (RuntimeError, TypeError, AttributeError) as e:
            print(f"  torch._grouped_mm / _scaled_grouped_mm unavailable: {str(e).splitlines()[0][:100]}")
    flops = 2.0 * tokens * k * 3 * hidden * inter
    touched = len(torch.unique(id_buf))
    weight_bytes = touched * 3 * hidden * inter * (1 if fp8 else 2)
    row = dict(case=f"{name} {kind} T{tokens}", shape=name, kind=kind, T=tokens, ours_us=t_ours, loop_us=t_loop,
               gmm_us=t_gmm, gmm_route_us=t_gmm_route,
               tflops=flops / t_ours / 1e6, weight_tbs=weight_bytes / t_ours / 1e6, copy_tbs=copy_tbs,
               gmm_ratio=t_gmm / t_ours, loop_ratio=t_loop / t_ours, diff=diff)
    rows.append(row)
    print(f"{name:8s} {kind:4s} T{tokens:<5d} ours {t_ours:9.1f} us {row['tflops']:6.1f} TF/s {row['weight_tbs']:5.2f} TB/s "
          f"({100 * row['weight_tbs'] / copy_tbs:4.0f}% of copy) | loop {t_loop:9.1f} (x{row['loop_ratio']:.2f}) | "
          f"gmm {t_gmm:9.1f} (x{row['gmm_ratio']:.2f}) gmm+route {t_gmm_route:9.1f} | rel diff {diff:.1e}", flush=True)


@functools.lru_cache(maxsize=1)
def deepseek_weights(experts, hidden, inter):
    dev = "cuda"
    w1 = torch.empty(experts, 2 * inter, hidden, device=dev, dtype=torch.float8_e4m3fn)
    w2 = torch.empty(experts, hidden, inter, device=dev, dtype=torch.float8_e4m3fn)
    for e in range(experts):
        w1[e] = (torch.randn(2 * inter, hidden, device=dev) * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
        w2[e] = (torch.randn(hidden, inter, device=dev) * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
    s1 = torch.rand(experts, 2 * inter // 128, hidden // 128, device=dev) / (100 * hidden ** 0.5)
    s2 = torch.rand(experts, hidden // 128, inter // 128, device=dev) / (100 * inter ** 0.5)
    return w1, w2, s1, s2


def read_bandwidth(*tensors):
    """TB/s at which a torch reduction reads these tensors (each read once a call)."""
    us = timed(lambda: [t.view(torch.int32).amax() for t in tensors], 3)
    return sum(t.numel() * t.element_size() for t in tensors) / us / 1e6


def bench_blockscale(tokens, copy_tbs, rows, show_kernels=False, expert_bias=0.1):
    """DeepSeek-V3 (E256 top-8 after biased grouped routing, H7168, I2048),
    block-scaled fp8: random e4m3fn codes with 128 x 128 block scales (made an
    expert at a time: the bf16 weights would take 22 GB).  No torch peer;
    checked against libaiter's portable stages (fp32 FMA).  expert_bias: the
    spread (std) of the per-expert correction bias.  A trained model's bias
    evens the experts' loads out; a random one of 0.1 makes them uneven (at
    T4096 some experts get no rows, others ten times the mean), 0 gives the
    even loads of random gating."""
    experts, k, hidden, inter = 256, 8, 7168, 2048
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    x = torch.randn(tokens, hidden, device=dev, dtype=dt)
    w1, w2, s1, s2 = deepseek_weights(experts, hidden, inter)
    gating, bias = torch.randn(tokens, experts, device=dev, dtype=dt), torch.randn(experts, device=dev) * expert_bias
    w_buf = torch.empty(tokens, k, device=dev)
    id_buf = torch.empty(tokens, k, device=dev, dtype=torch.int32)
    ws = torch.empty(aiter.fused_moe_workspace_size(tokens, k, experts, hidden, inter, elem_bytes=1),
                     dtype=torch.uint8, device=dev)
    out = torch.empty_like(x)

    def ours():
        aiter.biased_grouped_topk(gating, bias, k, 8, 4, routed_scaling_factor=2.5, topk_weights=w_buf,
                                  topk_ids=id_buf)
        aiter.fused_moe_fp8(x, w1, w2, s1, s2, w_buf, id_buf, out=out, workspace=ws)

    if show_kernels:
        print(f"  kernels: {', '.join(launched_kernels(ours))}")
    ours_g = graphed(ours)
    ref = aiter.fused_moe_fp8(x, w1, w2, s1, s2, w_buf, id_buf, variant="portable")  # fp32 FMA stages: a check
    diff = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    flops = 2.0 * tokens * k * 3 * hidden * inter
    t_ours = timed(ours_g, max(3, min(200, int(2e12 / (flops + 1e9)))))
    weight_bytes = len(torch.unique(id_buf)) * 3 * hidden * inter
    load = torch.bincount(id_buf.flatten().long(), minlength=experts)
    print(f"  routing (expert bias std {expert_bias}): {int((load > 0).sum())} of {experts} experts touched, "
          f"rows an expert {int(load.min())}-{int(load.max())} (mean {tokens * k / experts:.0f})", flush=True)
    read_tbs = read_bandwidth(w1, w2)
    row = dict(case=f"deepseek-v3 fp8-bs T{tokens}", shape="deepseek-v3", kind="fp8-bs", T=tokens, ours_us=t_ours, loop_us=float("nan"),
               gmm_us=float("nan"), gmm_route_us=float("nan"), tflops=flops / t_ours / 1e6,
               weight_tbs=weight_bytes / t_ours / 1e6, copy_tbs=copy_tbs, gmm_ratio=float("nan"),
               loop_ratio=float("nan"), diff=diff)
    rows.append(row)
    print(f"deepseek fp8-bs T{tokens:<5d} ours {t_ours:9.1f} us {row['tflops']:6.1f} TF/s {row['weight_tbs']:5.2f} TB/s "
          f"({100 * row['weight_tbs'] / copy_tbs:4.0f}% of copy) | rel diff to portable {diff:.1e}", flush=True)
    # Every touched expert's weights cross the memory bus at least once a call (11.3 GB
    # at T4096, L2 holds 50 MB): the layer's time is at least their bytes over the best
    # read rate, which bounds its TFLOP/s whatever the kernels.
    for label, tbs in ((f"these tensors read by a reduction, {read_tbs:.2f} TB/s", read_tbs),
                       ("an H100 SXM's HBM3 peak, 3.35 TB/s (issue 33's GPU)", 3.35)):
        floor_us = weight_bytes / tbs / 1e6
        print(f"  bound: {weight_bytes / 1e9:.2f} GB of touched weights at {label}: {floor_us:.1f} us, "
              f"{flops / floor_us / 1e6:.0f} TFLOP/s at most", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="mixtral,qwen3")
    ap.add_argument("--tokens", default="1,8,64,128,1024,4096")
    ap.add_argument("--kinds", default="bf16,fp8,blockscale")
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    ap.add_argument("--ours-only", action="store_true")
    ap.add_argument("--show-kernels", action="store_true")
    ap.add_argument("--warm-seconds", type=float, default=0.0,
                    help="replay each call this long before timing it (the clocks of sustained load)")
    ap.add_argument("--expert-bias", type=float, default=0.1,
                    help="DeepSeek-V3's correction bias spread: 0.1 uneven loads (default), 0 even loads")
    ap.add_argument("--variant", help="force this tuned variant of the three fused MoE ops (aiter.tuning.variants: "
                    "mma, mma_n128, mma_n64, triton, triton_wide, triton_narrow, decode, portable)")
    args = ap.parse_args()
    global WARM_SECONDS, OURS_ONLY
    WARM_SECONDS, OURS_ONLY = args.warm_seconds, args.ours_only
    if args.variant:
        for op in ("fused_moe", "fused_moe_fp8", "fused_moe_fp8_blockscale"):
            aiter.tuning.force_variant(op, args.variant)
    copy_tbs = copy_bandwidth()
    path = os.environ.get("AITER_MOE_KERNEL", "heuristic")
    # The Triton path's A/B switches (libaiter/gpu/moe_fused.cpp, moe.cpp): stage
    # 2's fp32 sums instead of the pair rows and combine kernel; the one-block sort.
    path += f", combine: {os.environ.get('AITER_MOE_COMBINE', 'default')}, sort: {os.environ.get('AITER_MOE_SORT', 'default')}"
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  device copy {copy_tbs:.2f} TB/s  "
          f"MoE stages: {path}, variant: {args.variant or 'tuned'}")
    rows = []
    for kind in args.kinds.split(","):
        if kind == "blockscale":
            for tokens in map(int, args.tokens.split(",")):
                try:
                    bench_blockscale(tokens, copy_tbs, rows, args.show_kernels, args.expert_bias)
                except Exception as e:  # noqa: BLE001
                    print(f"deepseek blockscale T{tokens}: failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
                torch.cuda.empty_cache()
            continue
        for name in args.shapes.split(","):
            for tokens in map(int, args.tokens.split(",")):
                try:
                    bench_shape(name, tokens, copy_tbs, rows, kind, args.show_kernels)
                except Exception as e:  # one failing shape must not lose the others' numbers
                    print(f"{name} {kind} T{tokens}: failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
                torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"MoE stages: {path}\n\n| shape | kind | T | libaiter us | TFLOP/s | weights TB/s (% of copy) | loop us (ratio) "
                    "| (_scaled)_grouped_mm us (ratio) | _grouped_mm + routing us | rel. diff |\n"
                    "|---|---|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {r['shape']} | {r['kind']} | {r['T']} | {r['ours_us']:.1f} | {r['tflops']:.1f} | {r['weight_tbs']:.2f} "
                        f"({100 * r['weight_tbs'] / r['copy_tbs']:.0f}%) | {r['loop_us']:.1f} ({r['loop_ratio']:.2f}) | "
                        f"{r['gmm_us']:.1f} ({r['gmm_ratio']:.2f}) | {r['gmm_route_us']:.1f} | {r['diff']:.1e} |\n")


if __name__ == "__main__":
    main()
