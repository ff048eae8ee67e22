#!/usr/bin/env python3
"""MLA decode on the GPU against a PyTorch version on contiguous latents, and a
device copy, in one run (issue 34's cases).

usage: python3 benchmarks/bench_mla.py [--quick] [--kinds memory,compute,split-KV] [--json results.json]

libaiter's mla_decode reads a paged latent cache (page 64, shuffled blocks, bf16
or fp8 e4m3fn); the peer (there is no PyTorch MLA decode) is bmm -> softmax ->
bmm in bf16 on the same latents gathered into a contiguous [B, L, 576] tensor
outside the timing; the copy moves as many bytes as the cache holds.  Each is
captured in a CUDA graph and its replay timed by triton.testing.do_bench
(median, L2 flushed between runs).  Prints ms, TB/s of latent bytes read,
TFLOP/s (2 * rows * L * (576 + 512) a sequence), the peer's time over ours
(> 1: libaiter faster), our bandwidth over the copy's (read + write bytes),
and the fastest plain read of the latent bytes (read_floor.py) with its
bandwidth over the copy's: no kernel reading the cache gets under that time.
"""
import argparse
import json

import torch
import triton.testing

import aiter
from read_floor import read_floor_ms

D, DV, PAGE = 576, 512, 64
SCALE = 0.1352  # DeepSeek-V3's softmax scale (mscale^2 / sqrt(192)); the value does not change the work


def bench(fn):
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return triton.testing.do_bench(graph.replay, warmup=10, rep=100, return_mode="median")


def paged_latents(b, ctx, cache_dtype):
    pages = ctx // PAGE
    blocks = b * pages
    latents = torch.randn(blocks, PAGE, D, device="cuda", dtype=torch.bfloat16)
    table = torch.randperm(blocks, device="cuda", dtype=torch.int32).view(b, pages)
    cache = latents if cache_dtype == "bf16" else (latents.float() / 0.02).to(torch.float8_e4m3fn)
    return latents, cache, table


def case(b, hq, s_q, ctx, cache_dtype, copy_cache):
    latents, cache, table = paged_latents(b, ctx, cache_dtype)
    lens = torch.full((b,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(b, s_q, hq, D, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(b, s_q, hq, DV, device="cuda", dtype=torch.bfloat16)
    size = aiter.mla_decode_workspace_size(q, cache, table)
    ws = torch.empty(max(size // 4, 1), device="cuda", dtype=torch.float32)
    kv_scale = 0.02 if cache_dtype == "fp8" else 1.0
    ours = bench(lambda: aiter.mla_decode(q, cache, table, lens, SCALE, kv_scale=kv_scale, workspace=ws, out=out))

    gathered = latents[table.long()].view(b, ctx, D)  # outside the timing
    qr = q.view(b, s_q * hq, D)
    peer = bench(lambda: torch.bmm(torch.softmax(torch.bmm(qr, gathered.transpose(1, 2)) * SCALE, -1),
                                   gathered[..., :DV]))
    latent_bytes = b * ctx * D * cache.element_size()
    if copy_cache.get(latent_bytes) is None:
        src = torch.empty(latent_bytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy_cache[latent_bytes] = (2 * latent_bytes / bench(lambda: dst.copy_(src)) / 1e9,
                                    read_floor_ms(latent_bytes, bench))
        del src, dst
    copy_tbs, read_ms = copy_cache[latent_bytes]
    flops = 2 * b * s_q * hq * ctx * (D + DV)
    tbs = latent_bytes / ours / 1e9
    return {"case": f"B{b} Hq{hq} s_q{s_q} ctx{ctx} {cache_dtype}", "ours_ms": ours, "ours_tbs": tbs,
            "ours_tflops": flops / ours / 1e9, "torch_ms": peer, "torch_over_ours": peer / ours,
            "copy_tbs": copy_tbs, "of_copy": tbs / copy_tbs,
            "read_ms": read_ms, "read_of_copy": latent_bytes / read_ms / 1e9 / copy_tbs}


CASES = ([("memory", b, 16, 1, ctx, dt) for b in (64, 128) for ctx in (4096, 8192) for dt in ("bf16", "fp8")]
         + [("compute", b, 128, s_q, 4096, "bf16") for b in (64, 128) for s_q in (1, 2)]
         + [("split-KV", b, 16, 1, 32768, dt) for b in (1, 4) for dt in ("bf16", "fp8")])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one case of each kind")
    parser.add_argument("--kinds", default="memory,compute,split-KV", help="comma-separated kinds of case to run")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    unknown = set(kinds) - {c[0] for c in CASES}
    if unknown:
        parser.error(f"--kinds: unknown {sorted(unknown)}")
    cases = [c for c in (CASES[::4] if args.quick else CASES) if c[0] in kinds]
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'kind':9} {'case':34} {'ours ms':>8} {'TB/s':>6} {'TFLOP/s':>8} {'torch ms':>9} {'torch/ours':>10} "
          f"{'copy TB/s':>9} {'of copy':>7} {'read ms':>8} {'read of copy':>12}")
    rows, copies = [], {}
    for kind, *shape in cases:
        r = dict(case(*shape, copies), kind=kind)
        rows.append(r)
        print(f"{kind:9} {r['case']:34} {r['ours_ms']:8.4f} {r['ours_tbs']:6.2f} {r['ours_tflops']:8.1f} "
              f"{r['torch_ms']:9.4f} {r['torch_over_ours']:10.2f} {r['copy_tbs']:9.2f} {r['of_copy']:7.2f} "
              f"{r['read_ms']:8.4f} {r['read_of_copy']:12.2f}", flush=True)
        torch.cuda.empty_cache()
    by_case = {r["case"]: r for r in rows}
    for r in rows:
        twin = by_case.get(r["case"].replace(" fp8", " bf16"))
        if r["case"].endswith("fp8") and twin:
            print(f"fp8 / bf16 time, {r['case'][:-4]}: {r['ours_ms'] / twin['ours_ms']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
