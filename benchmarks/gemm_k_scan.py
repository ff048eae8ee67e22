#!/usr/bin/env python3
"""Times one GEMM variant and its peer against K at fixed M x N, in one run.
Time grows with K at the mainloop's rate; what is left at K = 0 is the cost
per tile outside it (the epilogue, filling the pipeline), e.g.:
  python3 benchmarks/gemm_k_scan.py wgmma_ws.bf16.128x256.s4      # vs F.linear
  python3 benchmarks/gemm_k_scan.py wgmma_ws.e4m3fn.128x256.s4    # vs torch._scaled_mm, rowwise
  python3 benchmarks/gemm_k_scan.py wgmma_ws.e4m3fn.128x128.s6.bs # vs F.scaled_mm, 1x128 / 128x128 blocks
Times are medians of triton.testing.do_bench (inputs stay in L2 where they fit:
this compares the two kernels' shapes of cost, it is not bench_gemm.py's method)."""
import sys

import torch
import torch.nn.functional as F
import triton

import aiter

SIZES = [(4096, 4096), (8192, 8192)]
KS = [512, 1024, 2048, 4096, 8192]


def median_us(fn):
    return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median") * 1e3


def calls(variant, m, n, k):
    """(op, ours, peer name, peer) for one problem of the variant's kind (bf16, fp8, block-scaled fp8)."""
    a = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    if ".e4m3fn." not in variant:
        a, w = a.bfloat16(), w.bfloat16()
        return "gemm_a16w16", lambda: aiter.gemm_a16w16(a, w), "cuBLAS", lambda: F.linear(a, w)
    a, w = (a * 4).to(torch.float8_e4m3fn), (w * 4).to(torch.float8_e4m3fn)
    if variant.endswith(".bs"):
        sa = torch.rand(m, k // 128, device="cuda") / 16 + 0.01
        sw = torch.rand(n // 128, k // 128, device="cuda") / 16 + 0.01
        blocks = F.ScalingType
        return ("gemm_a8w8_blockscale", lambda: aiter.gemm_a8w8_blockscale(a, w, sa, sw), "F.scaled_mm",
                lambda: F.scaled_mm(a, w.t(), sa.t().contiguous().t(), blocks.BlockWise1x128, sw.t(),
                                    blocks.BlockWise128x128, output_dtype=torch.bfloat16))
    sa = torch.rand(m, 1, device="cuda") / 16 + 0.01
    sw = torch.rand(1, n, device="cuda") / 16 + 0.01
    return ("gemm_a8w8", lambda: aiter.gemm_a8w8(a, w, sa, sw), "_scaled_mm",
            lambda: torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16))


def main(variant):
    warm = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    median_us(lambda: F.linear(warm, warm))  # clocks up before the first timed case
    for m, n in SIZES:
        for k in KS:
            op, run_ours, peer_name, run_peer = calls(variant, m, n, k)
            with aiter.tuning.force_variant(op, variant):
                ours = median_us(run_ours)
            peer = median_us(run_peer)
            flop = 2 * m * n * k / 1e6
            print(f"M {m} N {n} K {k}: {variant} {ours:.1f} us {flop / ours:.0f} TFLOP/s | "
                  f"{peer_name} {peer:.1f} us {flop / peer:.0f} TFLOP/s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "wgmma_ws.bf16.128x256.s4")
