#!/usr/bin/env python3
"""Where the one-kernel decode MoE layer (kernels/moe/moe_decode.cu) spends its
time: builds it with -DAITER_PHASE_CLOCK (nvcc on the GPU machine; libaiter itself
never compiles at run time), launches it as libaiter/gpu/moe_decode.cpp does (two
blocks of 256 threads an SM, cooperatively), checks its output against the
library's own launch of the same kernel, and prints, over the blocks, when each
phase ended, in us from the first block's start (%globaltimer):
  python3 benchmarks/profile_moe_decode_phases.py qwen3|mixtral bf16|fp8 TOKENS [sm_90a]
(Written 2026-11-29 without a GPU at hand: not yet run.  benchmarks/phase_clock.py builds and loads it.)"""
import ctypes
import sys

import torch

import aiter
from phase_clock import check, load, print_phases

SHAPES = {"qwen3": (128, 8, 2048, 768), "mixtral": (8, 2, 4096, 14336)}  # E, k, H, I
PHASES = ["table", "[x quantized, barrier]", "stage 1 (this block)", "barrier", "[h quantized, barrier]",
          "stage 2 (this block)", "barrier + combine"]
THREADS, PER_SM, STEPS = 256, 2, 4  # kernels/moe/moe_params.h (kMoeDecodeThreads, ...BlocksPerSm, ...Steps)
MIN_PART_STEPS, MIN_SPARE_STEPS = 16, 6  # libaiter/gpu/moe_decode.cpp
E4M3FN = 2  # kernels/common/quant_kind.h

P = ctypes.c_void_p


class FusedMoeParams(ctypes.Structure):  # kernels/moe/moe_params.h, field for field
    _fields_ = [(n, P) for n in ("x", "w1", "w2", "out", "weights", "ids", "mask", "sorted", "block_experts",
                                 "num_valid", "x_sorted", "inter_buf", "pair_out", "w1_scale", "w2_scale", "xq",
                                 "x_scale", "hq", "h_scale")]
    _fields_ += [(n, ctypes.c_longlong) for n in ("tokens", "x_stride", "out_stride", "weights_stride",
                                                  "ids_stride", "rows", "blocks")]
    _fields_ += [(n, ctypes.c_int) for n in ("topk", "hidden", "inter", "local_experts", "experts", "block",
                                             "mask_bytes", "act", "weights_on_input", "quant", "group",
                                             "quant_source")]
    _fields_ += [("partials", P), ("splits", ctypes.c_int), ("team1", ctypes.c_int), ("team2", ctypes.c_int)]


def stage1_team(items, blocks, steps):  # libaiter/gpu/moe_decode.cpp
    best, fewest, warps, parts = 1, None, THREADS // 32, 1
    while parts <= warps and steps // parts >= MIN_PART_STEPS:
        teams = blocks * (warps // parts)
        batches = -(-items // teams) * -(-(-(-steps // parts)) // STEPS)
        if fewest is None or batches * 10 < fewest * 9:
            best, fewest = parts, batches
        parts *= 2
    return best


def stage2_team(items, blocks, steps):  # libaiter/gpu/moe_decode.cpp (moe_k_splits)
    parts = 1
    while parts < THREADS // 32 and items * parts < 2 * blocks * THREADS // 32 and steps // (2 * parts) >= MIN_PART_STEPS:
        parts *= 2
    warps = blocks * THREADS // 32
    while parts < THREADS // 32 and items * parts * 2 <= warps and steps // (2 * parts) >= MIN_SPARE_STEPS:
        parts *= 2
    return parts


def layer(shape, kind, tokens):
    experts, topk, hidden, inter = SHAPES[shape]
    dev = "cuda"
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device=dev)
    ids = torch.rand(tokens, experts, device=dev).argsort(dim=1)[:, :topk].to(torch.int32).contiguous()
    weights = torch.rand(tokens, topk, device=dev)
    w1 = torch.randn(experts, 2 * inter, hidden, device=dev, dtype=torch.bfloat16) / hidden ** 0.5
    w2 = torch.randn(experts, hidden, inter, device=dev, dtype=torch.bfloat16) / inter ** 0.5
    if kind == "bf16":
        return x, w1, w2, None, None, weights, ids
    s1 = (w1.float().abs().amax(dim=2) / 448).clamp_min(1e-12)
    s2 = (w2.float().abs().amax(dim=2) / 448).clamp_min(1e-12)
    w1q = (w1.float() / s1[..., None]).to(torch.float8_e4m3fn)
    w2q = (w2.float() / s2[..., None]).to(torch.float8_e4m3fn)
    return x, w1q, w2q, s1, s2, weights, ids


def main():
    shape, kind, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
    arch = sys.argv[4] if len(sys.argv) > 4 else "sm_90a"
    cuda = ctypes.CDLL("libcuda.so.1")
    torch.zeros(1, device="cuda")  # the primary context, current
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    blocks = sms * PER_SM
    symbol = "aiter_moe_decode_bf16" if kind == "bf16" else "aiter_moe_decode_e4m3fn_bf16"
    kernel, stamps = load(cuda, "moe/moe_decode.cu", symbol, arch, blocks)
    x, w1, w2, s1, s2, weights, ids = layer(shape, kind, tokens)
    experts, topk, hidden, inter = SHAPES[shape]
    pairs, fp8 = tokens * topk, kind == "fp8"
    buf = lambda n, dt: torch.empty(n, dtype=dt, device="cuda")  # noqa: E731
    sorted_area = buf(pairs + 64, torch.int32)
    inter_buf, pair_out = buf(pairs * inter, torch.bfloat16), buf(pairs * hidden, torch.bfloat16)
    xq, hq = buf(tokens * hidden, torch.uint8), buf(pairs * inter, torch.uint8)
    x_scale, h_scale = buf(tokens, torch.float32), buf(pairs, torch.float32)
    out = buf(tokens * hidden, torch.bfloat16).view(tokens, hidden)
    ptr = lambda t: None if t is None else t.data_ptr()  # noqa: E731
    p = FusedMoeParams(x=ptr(x), w1=ptr(w1), w2=ptr(w2), out=ptr(out), weights=ptr(weights), ids=ptr(ids),
                       sorted=ptr(sorted_area), inter_buf=ptr(inter_buf), pair_out=ptr(pair_out),
                       w1_scale=ptr(s1), w2_scale=ptr(s2), xq=ptr(xq), x_scale=ptr(x_scale), hq=ptr(hq),
                       h_scale=ptr(h_scale), tokens=tokens, x_stride=hidden, out_stride=hidden,
                       weights_stride=topk, ids_stride=topk, topk=topk, hidden=hidden, inter=inter,
                       local_experts=experts, experts=experts, quant=E4M3FN if fp8 else 0, splits=1)
    used, elem = min(experts, pairs), 1 if fp8 else 2
    p.team1 = stage1_team(used * (inter // 8), blocks, hidden * elem // 64)
    p.team2 = stage2_team(used * (hidden // 16), blocks, inter * elem // 64)
    args = (P * 1)(ctypes.cast(ctypes.byref(p), P))
    flush = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    for _ in range(3):  # the last run's stamps are printed
        flush.zero_()
        check(cuda.cuLaunchCooperativeKernel(kernel, blocks, 1, 1, THREADS, 1, 1, 0,
                                             P(torch.cuda.current_stream().cuda_stream), args),
              "cuLaunchCooperativeKernel")
        torch.cuda.synchronize()
    ws = torch.empty(aiter.fused_moe_workspace_size(tokens, topk, experts, hidden, inter, elem_bytes=1 if fp8 else 2),
                     dtype=torch.uint8, device="cuda")
    ref = torch.empty_like(out)
    op = "fused_moe_fp8" if fp8 else "fused_moe"
    with aiter.tuning.force_variant(op, "decode"):
        if fp8:
            aiter.fused_moe_fp8(x, w1, w2, s1, s2, weights, ids, out=ref, workspace=ws)
        else:
            aiter.fused_moe(x, w1, w2, weights, ids, out=ref, workspace=ws)
    torch.cuda.synchronize()
    same = torch.equal(out.view(torch.int16), ref.view(torch.int16))
    print(f"{shape} {kind} T{tokens}: {blocks} blocks, teams {p.team1} / {p.team2}; output "
          f"{'equal to the library launch' if same else 'DIFFERENT from the library launch'}")
    print_phases(stamps, blocks, PHASES)

if __name__ == "__main__":
    main()
