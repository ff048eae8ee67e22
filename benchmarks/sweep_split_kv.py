"""Split-KV at small batch, measured apart from the tables of bench_attention.py
and bench_mla.py: paged decode at B1/B4 and long contexts, and MLA decode at
each split count, with the device copy of the same bytes in the same run.

usage: python3 benchmarks/sweep_split_kv.py decode
       python3 benchmarks/sweep_split_kv.py mla [--splits 0,32,64,96,128] [--mla-cases 1x32768,4x32768]
       python3 benchmarks/sweep_split_kv.py profile  (a few calls of each B1 case, for ncu)

Times are triton do_bench medians of CUDA-graph replays (the caller's steady
state: no host launch cost); a split count of 0 is the library's own plan.
"""
import argparse

import torch

import aiter
from bench_mla import D as MLA_D, DV as MLA_DV, PAGE as MLA_PAGE, SCALE as MLA_SCALE
from bench_mla import bench as graph_time  # a CUDA-graph replay's median time, ms


def copy_tbps(nbytes):
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    c = torch.empty_like(a)
    return 2 * nbytes / graph_time(lambda: c.copy_(a)) / 1e9


def decode_call(b, ctx, hq=32, hkv=8, d=128, page=16):
    pages = ctx // page
    table = torch.randperm(b * pages, device="cuda", dtype=torch.int32).view(b, pages)
    lens = torch.full((b,), ctx, dtype=torch.int32, device="cuda")
    k_cache = torch.randn(b * pages, page, hkv, d, device="cuda", dtype=torch.bfloat16)
    v_cache = torch.randn_like(k_cache)
    q = torch.randn(b, hq, d, dtype=torch.bfloat16, device="cuda")
    workspace = torch.empty(aiter.paged_decode_workspace_size(q, k_cache, table) // 4, device="cuda")
    out = torch.empty_like(q)
    fn = lambda: aiter.paged_decode_attention(q, k_cache, v_cache, table, lens, workspace=workspace, out=out)
    return fn, 2 * k_cache.numel() * k_cache.element_size()


def mla_call(b, ctx, splits, hq=16):
    pages = ctx // MLA_PAGE
    cache = torch.randn(b * pages, MLA_PAGE, MLA_D, device="cuda", dtype=torch.bfloat16)
    table = torch.randperm(b * pages, device="cuda", dtype=torch.int32).view(b, pages)
    lens = torch.full((b,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(b, 1, hq, MLA_D, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(b, 1, hq, MLA_DV, device="cuda", dtype=torch.bfloat16)
    ws = torch.empty(max(aiter.mla_decode_workspace_size(q, cache, table, splits) // 4, 1), device="cuda")
    fn = lambda: aiter.mla_decode(q, cache, table, lens, MLA_SCALE, workspace=ws, out=out, num_splits=splits)
    return fn, cache.numel() * cache.element_size()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["decode", "mla", "profile"])
    ap.add_argument("--splits", default="0,32,64,96,128", help="MLA split counts (0: the library's plan)")
    ap.add_argument("--mla-cases", default="1x32768,4x32768",
                    help="MLA batch x context pairs (Hq 16, one new token; e.g. 64x4096 for a memory-bound case)")
    args = ap.parse_args()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    if args.what == "profile":
        for fn, _ in (decode_call(1, 32768), mla_call(1, 32768, 0), mla_call(4, 32768, 0)):
            for _ in range(3):
                fn()
        torch.cuda.synchronize()
        return
    if args.what == "decode":
        for b, ctx in ((1, 32768), (1, 131072), (4, 32768)):
            fn, nbytes = decode_call(b, ctx)
            ms, copy = graph_time(fn), copy_tbps(nbytes)
            tbps = nbytes / ms / 1e9
            print(f"decode B{b} ctx{ctx}: {ms * 1e3:7.1f} us {tbps:5.2f} TB/s, copy {copy:5.2f} TB/s, "
                  f"{100 * tbps / copy:5.1f}% of copy", flush=True)
        return
    for b, ctx in (tuple(int(v) for v in case.split("x")) for case in args.mla_cases.split(",")):
        copy = None
        for splits in (int(s) for s in args.splits.split(",")):
            fn, nbytes = mla_call(b, ctx, splits)
            copy = copy or copy_tbps(nbytes)
            ms = graph_time(fn)
            tbps = nbytes / ms / 1e9
            print(f"mla B{b} Hq16 ctx{ctx} splits={splits:3}: {ms * 1e3:7.1f} us {tbps:5.2f} TB/s, copy {copy:5.2f} "
                  f"TB/s, {100 * tbps / copy:5.1f}% of copy", flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
