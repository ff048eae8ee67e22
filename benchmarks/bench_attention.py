#!/usr/bin/env python3
"""Attention on the GPU against F.scaled_dot_product_attention, in one run.

usage: python3 benchmarks/bench_attention.py [--only prefill|decode|paged_prefill] [--quick] [--json results.json]
       python3 benchmarks/bench_attention.py --prefill B,HQ,HKV,S,D[,DV] [--prefill ...] [--json results.json]

--prefill times only the causal bf16 prefill cases given (B sequences of S
tokens, HQ/HKV heads, head dim D, v's DV), as many as are repeated: a sweep of
sequence lengths at a fixed token count shows a block's fixed cost, say
--prefill 64,32,32,128,128 ... --prefill 2,32,32,8192,128.

AITER_DECODE_KERNEL=portable times the portable decode kernel (AMD's) on NVIDIA;
AITER_PAGED_PREFILL_KERNEL=portable the portable paged-prefill kernel.

Times (triton.testing.do_bench: median, L2 flushed between runs) libaiter's
prefill_attention on packed sequences and paged_decode_attention on a paged
cache, and the peers a PyTorch user has: SDPA with the cuDNN and the flash back
ends on contiguous tensors (for decode, the KV gathered into contiguous form
outside the timing), and a device-to-device copy of the decode's KV bytes for
bandwidth; paged_prefill_attention (chunked prefill: new tokens after cached
prefixes) against SDPA on the same K/V gathered contiguous outside the timing,
with the causal mask aligned bottom-right (CausalBias lower-right: whichever
back end takes it) and cuDNN without a mask (all of every context: more work
than ours, an upper bound on its time).  Prints ms, TFLOP/s (prefill: the useful work of the causal mask) or
TB/s of KV bytes (decode; beside it the fastest plain read of those bytes,
read_floor.py, which no decode kernel can beat), and each peer's time over
libaiter's (> 1: libaiter faster).
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F
import triton.testing
from torch.nn.attention import SDPBackend, sdpa_kernel

import aiter
from read_floor import read_floor_ms

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def bench(fn):
    return triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median")


def sdpa_time(backend, q, k, v, causal, gqa):
    try:
        with sdpa_kernel([BACKENDS[backend]]):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
            torch.cuda.synchronize()
            return bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa))
    except RuntimeError as e:  # the back end does not take this shape
        print(f"  ({backend}: {str(e).splitlines()[0][:80]})", file=sys.stderr)
        return None


def prefill_case(b, hq, hkv, s, d, dv=None, dtype=torch.bfloat16):
    dv = dv or d
    q = torch.randn(b * s, hq, d, dtype=dtype, device="cuda")
    k = torch.randn(b * s, hkv, d, dtype=dtype, device="cuda")
    v = torch.randn(b * s, hkv, dv, dtype=dtype, device="cuda")
    cu = torch.arange(0, b * s + 1, s, dtype=torch.int32, device="cuda")
    out = torch.empty(b * s, hq, dv, dtype=dtype, device="cuda")
    ours = bench(lambda: aiter.prefill_attention(q, k, v, cu, out=out))
    qs, ks, vs = (t.view(b, s, -1, t.shape[-1]).transpose(1, 2) for t in (q, k, v))
    flops = 2 * b * hq * s * s * (d + dv) / 2  # causal: half the score matrix
    dims = f"D{d}" + (f"/{dv}" if dv != d else "")
    row = {"op": "prefill", "case": f"B{b} H{hq}/{hkv} S{s} {dims}", "ours_ms": ours, "ours_tflops": flops / ours / 1e9}
    for name in BACKENDS:
        t = sdpa_time(name, qs, ks, vs, True, hq != hkv)
        row[f"{name}_ms"] = t
        row[f"{name}_ratio"] = None if t is None else t / ours
    return row


def varlen_case(lengths, hq, hkv, d, dtype=torch.bfloat16):
    """One packed batch of sequences of mixed lengths, causal; TFLOP/s of the
    scores the causal masks keep (SDPA has no packed form to compare with)."""
    total = sum(lengths)
    q = torch.randn(total, hq, d, dtype=dtype, device="cuda")
    k, v = torch.randn(total, hkv, d, dtype=dtype, device="cuda"), torch.randn(total, hkv, d, dtype=dtype, device="cuda")
    cu = torch.tensor([0] + lengths, device="cuda").cumsum(0).to(torch.int32)
    out = torch.empty_like(q)
    ours = bench(lambda: aiter.prefill_attention(q, k, v, cu, out=out))
    flops = sum(4 * hq * d * n * (n + 1) / 2 for n in lengths)
    return {"op": "prefill", "case": f"varlen {len(lengths)} seqs {min(lengths)}-{max(lengths)} ({total} tok) "
            f"H{hq}/{hkv} D{d}", "ours_ms": ours, "ours_tflops": flops / ours / 1e9}


def decode_case(b, ctx, hq, hkv, d, page, cache_dtype=torch.bfloat16):
    blocks_per_seq = ctx // page
    num_blocks = b * blocks_per_seq
    table = torch.randperm(num_blocks, device="cuda", dtype=torch.int32).view(b, blocks_per_seq)
    lens = torch.full((b,), ctx, dtype=torch.int32, device="cuda")
    k_cache = torch.randn(num_blocks, page, hkv, d, device="cuda").to(cache_dtype)
    v_cache = torch.randn(num_blocks, page, hkv, d, device="cuda").to(cache_dtype)
    q = torch.randn(b, hq, d, dtype=torch.bfloat16, device="cuda")
    workspace = torch.empty(max(aiter.paged_decode_workspace_size(q, k_cache, table) // 4, 1), device="cuda")
    out = torch.empty_like(q)
    ours = bench(lambda: aiter.paged_decode_attention(q, k_cache, v_cache, table, lens, workspace=workspace,
                                                      k_scale=1.0, v_scale=1.0, out=out))
    kv_bytes = 2 * k_cache.numel() * k_cache.element_size()
    row = {"op": "decode", "case": f"B{b} ctx{ctx} H{hq}/{hkv} D{d} p{page} {str(cache_dtype)[6:]}",
           "ours_ms": ours, "ours_tbps": kv_bytes / ours / 1e9}
    a = torch.empty(kv_bytes // 2, dtype=torch.uint8, device="cuda")
    c = torch.empty_like(a)
    copy = bench(lambda: c.copy_(a))
    row["copy_tbps"] = 2 * a.numel() / copy / 1e9
    row["pct_of_copy"] = 100 * row["ours_tbps"] / row["copy_tbps"]
    del a, c
    row["read_ms"] = read_floor_ms(kv_bytes, bench)  # no kernel reading the cache gets under this
    row["read_pct_of_copy"] = 100 * kv_bytes / row["read_ms"] / 1e9 / row["copy_tbps"]
    if cache_dtype == torch.bfloat16:  # the peers read contiguous KV of the same bytes
        kc = k_cache[table.flatten().long()].view(b, ctx, hkv, d).transpose(1, 2).contiguous()
        vc = v_cache[table.flatten().long()].view(b, ctx, hkv, d).transpose(1, 2).contiguous()
        for name in BACKENDS:
            t = sdpa_time(name, q.view(b, hq, 1, d), kc, vc, False, hq != hkv)
            row[f"{name}_ms"] = t
            row[f"{name}_ratio"] = None if t is None else t / ours
    return row


def paged_prefill_case(b, ctx, new, hq, hkv, d, page, dtype=torch.bfloat16, cache_dtype=None):
    """b sequences of `ctx` positions whose last `new` are new tokens (chunked
    prefill); an fp8 cache_dtype: the peers read the same values in q's dtype."""
    cache_dtype = cache_dtype or dtype
    from torch.nn.attention.bias import causal_lower_right
    blocks_per_seq = ctx // page
    num_blocks = b * blocks_per_seq
    table = torch.randperm(num_blocks, device="cuda", dtype=torch.int32).view(b, blocks_per_seq)
    lens = torch.full((b,), ctx, dtype=torch.int32, device="cuda")
    k_cache = torch.randn(num_blocks, page, hkv, d, device="cuda", dtype=dtype).to(cache_dtype)
    v_cache = torch.randn(num_blocks, page, hkv, d, device="cuda", dtype=dtype).to(cache_dtype)
    q = torch.randn(b * new, hq, d, dtype=dtype, device="cuda")
    cu = torch.arange(0, b * new + 1, new, dtype=torch.int32, device="cuda")
    out = torch.empty_like(q)
    ours = bench(lambda: aiter.paged_prefill_attention(q, k_cache, v_cache, table, lens, cu, out=out))
    flops = 4 * b * hq * d * (new * (ctx - new) + new * (new + 1) / 2)  # the scores the causal mask keeps
    kind = "" if cache_dtype == dtype else f" {str(cache_dtype).replace('torch.', '')}"
    row = {"op": "pprefill", "case": f"B{b} ctx{ctx} new{new} H{hq}/{hkv} D{d} p{page}{kind}", "ours_ms": ours,
           "ours_tflops": flops / ours / 1e9}
    kc = k_cache[table.flatten().long()].to(dtype).view(b, ctx, hkv, d).transpose(1, 2).contiguous()
    vc = v_cache[table.flatten().long()].to(dtype).view(b, ctx, hkv, d).transpose(1, 2).contiguous()
    qs = q.view(b, new, hq, d).transpose(1, 2)
    mask = causal_lower_right(new, ctx)
    lower_right = lambda: F.scaled_dot_product_attention(qs, kc, vc, attn_mask=mask, enable_gqa=hq != hkv)
    try:
        lower_right()
        row["sdpa_lower_right_ms"] = bench(lower_right)
        row["sdpa_lower_right_ratio"] = row["sdpa_lower_right_ms"] / ours
    except RuntimeError as e:
        print(f"  (sdpa lower-right: {str(e).splitlines()[0][:80]})", file=sys.stderr)
    t = sdpa_time("cudnn", qs, kc, vc, False, hq != hkv)
    row["cudnn_full_ms"] = t
    row["cudnn_full_ratio"] = None if t is None else t / ours
    return row


def show(row):
    parts = [f"{row['op']:8s} {row['case']:38s} ours {row['ours_ms']:8.3f} ms"]
    if "ours_tflops" in row:
        parts.append(f"{row['ours_tflops']:6.1f} TFLOP/s")
    if "ours_tbps" in row:
        parts.append(f"{row['ours_tbps']:5.2f} TB/s ({row['pct_of_copy']:.0f}% of copy {row['copy_tbps']:.2f}; "
                     f"a plain read {row['read_ms']:.3f} ms, {row['read_pct_of_copy']:.0f}%)")
    for name in list(BACKENDS) + ["sdpa_lower_right", "cudnn_full"]:
        if row.get(f"{name}_ms") is not None:
            parts.append(f"{name} {row[f'{name}_ms']:.3f} ms (x{row[f'{name}_ratio']:.2f})")
    print(" | ".join(parts), flush=True)


def fp8_over_bf16(rows):
    """Each fp8 decode row's time over the bf16 row of the same shape."""
    bf16 = {r["case"].rsplit(" ", 1)[0]: r["ours_ms"] for r in rows if r["case"].endswith("bfloat16")}
    for r in rows:
        shape, dtype = r["case"].rsplit(" ", 1)
        if dtype.startswith("float8") and shape in bf16:
            r["over_bf16"] = r["ours_ms"] / bf16[shape]
            print(f"decode   {r['case']:38s} time / bf16's: {r['over_bf16']:.2f}", flush=True)


def default_cases(only, quick):
    """The issue's cases, printed as they are timed."""
    rows = []
    if only in (None, "paged_prefill"):
        fp8 = (torch.bfloat16, torch.float8_e4m3fn)
        cases = [(4, 2048, 512, 32, 8, 128, 16), (4, 4096, 1024, 32, 8, 128, 16), (16, 2048, 128, 32, 8, 128, 16),
                 (4, 2048, 512, 32, 8, 64, 64), (4, 2048, 2048, 32, 8, 128, 16), (4, 2048, 512, 32, 8, 128, 16, *fp8),
                 (4, 4096, 1024, 32, 8, 128, 16, *fp8)]
        for c in cases[:1] if quick else cases:
            rows.append(paged_prefill_case(*c))
            show(rows[-1])
    if only in (None, "decode"):
        cases = [(64, 4096, 32, 8, 128, 16, torch.bfloat16), (64, 4096, 32, 8, 128, 16, torch.float8_e4m3fn),
                 (1, 32768, 32, 8, 128, 16, torch.bfloat16), (1, 131072, 32, 8, 128, 16, torch.bfloat16),
                 (64, 4096, 32, 8, 128, 16, torch.float8_e5m2), (1, 32768, 32, 8, 128, 16, torch.float8_e4m3fn),
                 (1, 131072, 32, 8, 128, 16, torch.float8_e4m3fn), (64, 4096, 32, 8, 128, 1, torch.bfloat16),
                 (64, 4096, 32, 8, 64, 16, torch.bfloat16), (64, 4096, 32, 4, 128, 64, torch.bfloat16)]
        for c in cases[:2] if quick else cases:
            rows.append(decode_case(*c))
            show(rows[-1])
        fp8_over_bf16(rows)
    if only in (None, "prefill"):
        cases = [(4, 32, 32, 1024, 128), (4, 32, 32, 4096, 128), (4, 32, 8, 4096, 128), (4, 32, 32, 4096, 64),
                 (4, 32, 32, 2048, 128), (4, 32, 32, 8192, 128), (4, 32, 32, 4096, 256), (4, 32, 32, 4096, 192, 128)]
        for c in cases[:2] if quick else cases:
            rows.append(prefill_case(*c))
            show(rows[-1])
        mixed = torch.randint(16, 8193, (24,), generator=torch.Generator().manual_seed(0)).tolist()
        rows.append(varlen_case(mixed + [16, 8192], 32, 8, 128))
        show(rows[-1])
    return rows


def prefill_shape(text):
    """B,HQ,HKV,S,D[,DV] as integers."""
    try:
        shape = tuple(int(x) for x in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) not in (5, 6) or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"expected B,HQ,HKV,S,D[,DV] (positive integers), got {text!r}")
    return shape


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["prefill", "decode", "paged_prefill"])
    ap.add_argument("--quick", action="store_true", help="fewer cases")
    ap.add_argument("--prefill", action="append", type=prefill_shape, metavar="B,HQ,HKV,S,D[,DV]",
                    help="time only these prefill cases")
    ap.add_argument("--json")
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    rows = []
    for c in args.prefill or []:
        rows.append(prefill_case(*c))
        show(rows[-1])
    if not args.prefill:
        rows += default_cases(args.only, args.quick)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
