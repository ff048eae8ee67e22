#!/usr/bin/env python3
"""libaiter's GEMMs on shapes no shipped table was tuned for, against the library
a PyTorch user would call, in one run.

usage: python3 benchmarks/bench_gemm_untuned.py [--kinds bf16,fp8,blockscale] [--models llama3.2-1b,...]
           [--m 1,2,4,...,8192] [--sides ours,own,vendor] [--reps 9] [--json FILE] [--markdown FILE]

Shapes: the (N, K) of q, kv (k and v together), o, gate-up (together) and down
of Llama-3.2-1B and 3B, Qwen2.5-7B and 14B, Mistral-7B and Gemma-2-9B at M = 1,
2, 4, ..., 8192, bf16 against F.linear (cuBLAS) and fp8 (e4m3, per-token x
per-channel scales) against torch._scaled_mm (rowwise); then the hidden-2048
Llama of issue 35 (TinyLlama-1.1B: q/o 2048 x 2048, kv 512, gate-up 11264,
down K 5632) at M = 256 and 8192.  Mistral-7B's q/o, gate-up and down are
Llama-3-8B's, which the shipped tables cover (such rows say "tuned").
--kinds blockscale --models deepseek-v3 --no-small-llama times block-scaled fp8
(1 x 128 / 128 x 128 scales) against F.scaled_mm on DeepSeek-V3's shapes.

Sides: "ours" is libaiter's selection (a tuned row, else the heuristic with the
vendor BLAS among its choices); "own" the same with AITER_VENDOR_BLAS=0 (its own
kernels only, the selection before the vendor variants); "vendor" the cuBLASLt
variant forced; "vendor-col" (block-scaled only) the same with a_scale
column-major (strides (1, M), as F.scaled_mm takes it: no transpose of the
scales in the call; the peer's copy is made the same way, outside the graph).  Timing as benchmarks/bench_gemm.py: each side captured in a
CUDA graph cycling through input copies past the L2, replays of all sides in
turns, median per call.  Every graph is warmed up and captured on one side
stream (as vLLM captures), so the vendor variant has its per-stream workspace.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aiter  # noqa: E402
from bench_gemm import copies_for, geomean, inputs, ours, peer, replay_us  # noqa: E402

MODELS = {  # projection: (N, K)
    "llama3.2-1b": {"q": (2048, 2048), "kv": (1024, 2048), "o": (2048, 2048), "gate-up": (16384, 2048),
                    "down": (2048, 8192)},
    "llama3.2-3b": {"q": (3072, 3072), "kv": (2048, 3072), "o": (3072, 3072), "gate-up": (16384, 3072),
                    "down": (3072, 8192)},
    "qwen2.5-7b": {"q": (3584, 3584), "kv": (1024, 3584), "o": (3584, 3584), "gate-up": (37888, 3584),
                   "down": (3584, 18944)},
    "qwen2.5-14b": {"q": (5120, 5120), "kv": (2048, 5120), "o": (5120, 5120), "gate-up": (27648, 5120),
                    "down": (5120, 13824)},
    "mistral-7b": {"q": (4096, 4096), "kv": (2048, 4096), "o": (4096, 4096), "gate-up": (28672, 4096),
                   "down": (4096, 14336)},
    "gemma-2-9b": {"q": (4096, 3584), "kv": (4096, 3584), "o": (3584, 4096), "gate-up": (28672, 3584),
                   "down": (3584, 14336)},
}
# Not in the default sweep (the shipped tables cover it): block-scaled fp8 with --kinds blockscale.
OTHER_MODELS = {
    "deepseek-v3": {"q_a+kv_a": (2112, 7168), "q_b": (24576, 1536), "kv_b": (32768, 512), "o": (7168, 16384),
                    "shared gate-up": (4096, 7168), "shared down": (7168, 2048)},
}
SMALL_LLAMA = {"q": (2048, 2048), "kv": (512, 2048), "o": (2048, 2048), "gate-up": (11264, 2048),
               "down": (2048, 5632)}
VENDOR = {"bf16": ("gemm_a16w16", "cublaslt.bf16"), "fp8": ("gemm_a8w8", "cublaslt.e4m3fn"),
          "blockscale": ("gemm_a8w8_blockscale", "cublaslt.e4m3fn.bs")}


def unique_shapes(models):
    """(N, K) -> the "model proj" labels that have it, in first-seen order."""
    shapes = {}
    for model in models:
        for proj, nk in {**MODELS, **OTHER_MODELS}[model].items():
            shapes.setdefault(nk, []).append(f"{model} {proj}")
    return shapes


_stream = None


def side_stream():
    global _stream
    if _stream is None:
        _stream = torch.cuda.Stream()
    return _stream


def capture(calls):
    """A CUDA graph of every call once, warmed up and captured on the side stream."""
    stream = side_stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:
            call()
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for call in calls:
            call()
    graph.replay()
    torch.cuda.synchronize()
    return graph


@contextlib.contextmanager
def selection(side, kind):
    """libaiter's calls inside run the side's selection."""
    if side == "own":
        os.environ["AITER_VENDOR_BLAS"] = "0"
        aiter.tuning.reload()
        try:
            yield
        finally:
            del os.environ["AITER_VENDOR_BLAS"]
            aiter.tuning.reload()
    elif side in ("vendor", "vendor-col"):
        with aiter.tuning.force_variant(*VENDOR[kind]):
            yield
    else:
        yield


def column_major_scales(sets):
    """The sets with a_scale as the transpose of a [groups, M] tensor."""
    return [dict(s, a_scale=s["a_scale"].t().contiguous().t()) for s in sets]


def capture_side(side, kind, sets, outs, row):
    if side == "vendor-col":
        sets = column_major_scales(sets)
    try:
        with selection(side, kind):
            calls = [ours(kind, s, o) for s, o in zip(sets, outs)]
            calls[0]()
            _, variant, how = aiter.tuning.last_variant()
            graph = capture(calls)
    except aiter.AiterError as e:
        row[f"{side}_error"] = str(e).splitlines()[0][:100]
        return None
    row[f"{side}_variant"] = variant + (" (tuned)" if how == 1 else "")
    return graph


def measure(kind, m, n, k, sides, reps):
    itemsize = 2 if kind == "bf16" else 1
    sets = inputs(kind, m, n, k, copies_for((m * k + n * k) * itemsize + m * n * 2))
    outs = [torch.empty(m, n, dtype=torch.bfloat16, device="cuda") for _ in sets]
    row = dict(kind=kind, m=m, n=n, k=k)
    graphs = {side: capture_side(side, kind, sets, outs, row) for side in sides}
    peer_calls = [peer(kind, s) for s in sets]
    try:
        ref = peer_calls[0]()
        graphs["peer"] = capture(peer_calls)
    except (RuntimeError, TypeError, ValueError) as e:
        row["peer_error"] = str(e).splitlines()[0][:100]
    else:  # outs[0] holds the result of the last side captured (each capture replays once)
        ran = [side for side in sides if graphs.get(side) is not None]
        if ran:
            row["rel_diff"] = float((outs[0].float() - ref.float()).norm() / ref.float().norm())
            row["rel_diff_side"] = ran[-1]
    graphs = {side: g for side, g in graphs.items() if g is not None}
    times = {side: [] for side in graphs}
    for _ in range(reps):  # in turns: every side sees the same clocks
        for side, graph in graphs.items():
            times[side].append(replay_us(graph, len(sets)))
    for side, ts in times.items():
        row[f"{side}_us"] = statistics.median(ts)
    return row


def ratio(row, side):
    """Peer time / the side's time (> 1: libaiter faster), or None."""
    if "peer_us" not in row or f"{side}_us" not in row:
        return None
    return row["peer_us"] / row[f"{side}_us"]


def table(rows, sides):
    head = "| kind | shape | N | K | M | " + " | ".join(f"{s} µs | {s} variant | peer/{s}" for s in sides) + \
           " | peer µs | rel diff |"
    out = [head, "|" + "---|" * (6 + 3 * len(sides) + 1)]
    for r in rows:
        cells = []
        for s in sides:
            x = ratio(r, s)
            cells += [f"{r[s + '_us']:.1f}" if s + "_us" in r else r.get(s + "_error", "-"),
                      r.get(s + "_variant", "-"), f"{x:.2f}" if x else "-"]
        peer_us = f"{r['peer_us']:.1f}" if "peer_us" in r else r.get("peer_error", "-")
        diff = f"{r['rel_diff']:.1e}" if "rel_diff" in r else "-"
        out.append(f"| {r['kind']} | {r['label']} | {r['n']} | {r['k']} | {r['m']} | " + " | ".join(cells) +
                   f" | {peer_us} | {diff} |")
    return out


def summary(rows, sides):
    lines = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        for side in sides:
            pairs = [(ratio(r, side), r) for r in rows if r["kind"] == kind and ratio(r, side)]
            if not pairs:
                continue
            worst, w = min(pairs, key=lambda p: p[0])
            below = sum(1 for x, _ in pairs if x < 0.95)
            lines.append(f"{kind} {side}: peer time / {side}, geometric mean {geomean([x for x, _ in pairs]):.3f}x "
                         f"over {len(pairs)} shapes; worst {worst:.2f}x ({w['label']}, N {w['n']} K {w['k']} "
                         f"M {w['m']}, {w.get(side + '_variant', '')}); {below} below 0.95x")
        if "ours" in sides and "vendor" in sides:
            lines.append(best_of_sides(kind, [r for r in rows if r["kind"] == kind]))

        def per_m(m, side):
            return geomean([ratio(r, side) for r in rows if r["kind"] == kind and r["m"] == m and ratio(r, side)])
        ms = sorted({r["m"] for r in rows if r["kind"] == kind})
        lines.append(f"{kind} per M (geometric mean of peer / side): " + "; ".join(
            f"M {m}: " + ", ".join(f"{s} {per_m(m, s):.2f}" for s in sides) for m in ms))
    return lines


def best_of_sides(kind, rows):
    """What a selection taking the faster of "ours" and "vendor" per shape would
    read (the bound for a rule between them), and where the vendor was faster."""
    best, vendor_won = [], []
    for r in rows:
        ours_x, vendor_x = ratio(r, "ours"), ratio(r, "vendor")
        if ours_x or vendor_x:
            best.append(max(ours_x or 0, vendor_x or 0))
        if ours_x and vendor_x and vendor_x > ours_x * 1.02:
            vendor_won.append(f"N {r['n']} K {r['k']} M {r['m']} {ours_x:.2f}->{vendor_x:.2f}")
    return (f"{kind} best of ours / vendor per shape: geometric mean {geomean(best):.3f}x over {len(best)} shapes, "
            f"{sum(1 for x in best if x < 0.95)} below 0.95x; vendor faster by > 2% at {len(vendor_won)}: "
            + "; ".join(vendor_won))


def _probe(label, op, variant, call, ref, out):
    try:
        with aiter.tuning.force_variant(op, variant):
            call()
        error = float((out.float() - ref).norm() / ref.norm())
        print(f"{label} {variant}: ran, relative error {error:.1e}", flush=True)
    except aiter.AiterError as e:
        print(f"{label} {variant}: declined ({str(e).splitlines()[0][:90]})", flush=True)


def probe_vendor_fp8():
    """Which fp8 scalings, outputs and shapes the cuBLASLt variants run on this
    GPU, with their error against an fp32 product of the same inputs
    (CUBLASLT_LOG_MASK=5 makes cuBLASLt say why it declines)."""
    q = lambda *shape: (torch.randn(*shape, device="cuda") * 4).to(torch.float8_e4m3fn)  # noqa: E731
    one = lambda x: torch.full((1,), x, device="cuda")  # noqa: E731
    for m, n, k in [(256, 2048, 2048), (70, 200, 528), (1, 2048, 2048), (1024, 5120, 5120)]:
        a, w = q(m, k), q(n, k)
        for name, sa, sw in [("per-tensor", one(0.5), one(0.25)),
                             ("per-token x per-channel", torch.rand(m, 1, device="cuda"),
                              torch.rand(1, n, device="cuda")),
                             ("per-token x per-tensor", torch.rand(m, 1, device="cuda"), one(0.25))]:
            for out_dtype in (torch.bfloat16, torch.float32):
                out = torch.empty(m, n, dtype=out_dtype, device="cuda")
                ref = (a.float() @ w.float().T) * sa.reshape(-1, 1) * sw.reshape(1, -1)
                for variant in ("cublaslt.e4m3fn", "cublaslt.e4m3fn.alg2", "cublaslt.e4m3fn.alg4"):
                    _probe(f"a8w8 M {m} N {n} K {k} {name} -> {out_dtype}", "gemm_a8w8", variant,
                           lambda: aiter.gemm_a8w8(a, w, sa, sw, out=out), ref, out)
    for m, n, k in [(1, 256, 512), (2, 256, 512), (3, 256, 512), (4, 256, 512), (8, 256, 512), (70, 300, 1024),
                    (130, 129, 512), (256, 2112, 7168), (273, 384, 2048), (1024, 7168, 2048), (4096, 24576, 1536)]:
        g = k // 128
        a, w = q(m, k), q(n, k)
        sa, sw = torch.rand(m, g, device="cuda") + 0.5, torch.rand(-(-n // 128), g, device="cuda") + 0.5
        full_sa = sa.repeat_interleave(128, dim=1)
        full_sw = sw.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:n]
        ref = (a.float() * full_sa) @ (w.float() * full_sw).T
        out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
        for variant in ("cublaslt.e4m3fn.bs", "cublaslt.e4m3fn.bs.alg2", "cublaslt.e4m3fn.bs.alg3",
                        "cublaslt.e4m3fn.bs.alg4"):
            out.fill_(float("nan"))
            _probe(f"blockscale M {m} N {n} K {k}", "gemm_a8w8_blockscale", variant,
                   lambda: aiter.gemm_a8w8_blockscale(a, w, sa, sw, out=out), ref, out)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", default="bf16,fp8")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--m", default=",".join(str(2**i) for i in range(14)))
    p.add_argument("--sides", default="ours", help="ours, own (no vendor BLAS), vendor (cuBLASLt forced), "
                   "vendor-col (block-scaled: forced, a_scale column-major)")
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--no-small-llama", action="store_true")
    p.add_argument("--probe-fp8", action="store_true", help="only report which fp8 scalings cuBLASLt runs")
    p.add_argument("--json")
    p.add_argument("--markdown")
    args = p.parse_args()
    sides = args.sides.split(",")
    torch.manual_seed(0)
    if args.probe_fp8:
        return probe_vendor_fp8()
    header = [f"{torch.cuda.get_device_name()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
              f"libaiter {aiter.__version__}", "tuned tables: " + "; ".join(aiter.tuning.config_sources()), ""]
    print("\n".join(header), flush=True)
    rows, small = [], []
    shapes = unique_shapes(args.models.split(","))
    kinds = args.kinds.split(",")
    if not args.no_small_llama:  # first: the issue's own case
        for proj, (n, k) in SMALL_LLAMA.items():
            for kind in kinds:
                for m in (256, 8192):
                    row = dict(measure(kind, m, n, k, sides, args.reps), label=f"hidden-2048 llama {proj}")
                    small.append(row)
                    print(table([row], sides)[-1], flush=True)
    for (n, k), labels in shapes.items():  # kinds inside: a run cut short still has both
        for kind in kinds:
            for m in map(int, args.m.split(",")):
                row = dict(measure(kind, m, n, k, sides, args.reps), label=" / ".join(labels))
                rows.append(row)
                print(table([row], sides)[-1], flush=True)
    text = header + ["## Untuned model shapes", ""] + table(rows, sides) + [""] + summary(rows, sides)
    if small:
        text += ["", "## The hidden-2048 Llama (TinyLlama-1.1B) at M = 256 and 8192", ""] + table(small, sides) + \
                [""] + summary(small, sides)
    print("\n".join(text))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "rows": rows, "small_llama": small}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
