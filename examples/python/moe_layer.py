#!/usr/bin/env python3
"""One mixture-of-experts layer with libaiter (Mixtral-style: softmax router,
top-k experts, SiLU-gated experts), in bf16 and with fp8 experts (per-channel
scales), checked against a float64 NumPy reference.

usage: python3 examples/python/moe_layer.py [--device cuda|cpu] [--tokens 16] [--experts 8]
       [--topk 2] [--hidden 256] [--inter 128] [--kind bf16,fp8]

The router logits come from gemm_a16w16 (x times the router's weights),
topk_softmax picks each token's k experts and their weights (renormalized to
sum to 1), and fused_moe runs the experts: per token and chosen expert e,
w2_e (silu(w1_gate_e x) * (w1_up_e x)), summed with the routing weights.  The
fp8 layer quantizes each expert's rows to float8_e4m3fn with one scale a row
(amax / 448) and calls fused_moe_fp8, which quantizes each stage's input row
the same way on the fly.

The reference does every step again in float64 NumPy: the logits (checked to
bf16 precision), the softmax and the top-k choice over the layer's bf16 logits
(the same experts must come out: an independent float64 router could order two
near-equal experts the other way), then each routed expert's two products; for
fp8 it rounds the stage inputs to fp8 where the layer does, so that what
remains is the order of fp32 sums.
"""
import argparse
import math

import numpy as np
import torch

import aiter

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


def make_layer(experts, hidden, inter, seed=0):
    """bf16 weights: the router [E, H], w1 [E, 2I, H] (gate rows, then up rows), w2 [E, H, I]."""
    g = torch.Generator().manual_seed(seed)

    def w(*shape, fan_in):
        return (torch.randn(*shape, generator=g) / math.sqrt(fan_in)).to(torch.bfloat16)
    return {"router": w(experts, hidden, fan_in=hidden), "w1": w(experts, 2 * inter, hidden, fan_in=hidden),
            "w2": w(experts, hidden, inter, fan_in=inter)}


def quantize_rows(w):
    """fp8 codes of w with one scale per row (its last axis): scale = amax / 448."""
    amax = w.float().abs().amax(dim=-1, keepdim=True)
    scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
    return (w.float() / scale).to(FP8), scale[..., 0].contiguous()


def moe_layer(layer, x, topk, kind):
    """The layer on libaiter ops: returns (out [T, H], logits, topk_ids, topk_weights)."""
    logits = aiter.gemm_a16w16(x, layer["router"])  # [T, E]
    weights, ids = aiter.topk_softmax(logits, topk, renormalize=True)
    if kind == "bf16":
        out = aiter.fused_moe(x, layer["w1"], layer["w2"], weights, ids)
    else:
        (w1q, s1), (w2q, s2) = quantize_rows(layer["w1"]), quantize_rows(layer["w2"])
        layer.update(w1q=w1q, s1=s1, w2q=w2q, s2=s2)
        out = aiter.fused_moe_fp8(x, w1q, w2q, s1, s2, weights, ids)
    return out, logits, ids, weights


# ---- the float64 reference ------------------------------------------------------------

def f64(t):
    return t.detach().to("cpu", torch.float64).numpy()


def round_to(a, dtype):
    """float64 values rounded to a torch dtype (bf16, fp8) and back."""
    return torch.from_numpy(a).to(dtype).to(torch.float64).numpy()


def quantize_input(rows):
    """Each row's fp8 codes (scale amax / 448, in fp32 as the layer computes it) as values."""
    r32 = rows.astype(np.float32)
    amax = np.abs(r32).max(axis=1, keepdims=True)
    scale = np.where(amax > 0, amax / np.float32(FP8_MAX), np.float32(1)).astype(np.float32)
    return round_to((r32 * (np.float32(1) / scale)).astype(np.float64), FP8) * scale


def reference_routing(logits, topk):
    """Softmax of the logits in float64, the k largest (ties to the lower id), renormalized."""
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ids = np.argsort(-p, axis=1, kind="stable")[:, :topk]
    w = np.take_along_axis(p, ids, axis=1)
    return ids, w / w.sum(axis=1, keepdims=True)


def reference_experts(x, w1, w2, ids, weights, fp8):
    """float64 sum_j weights[t, j] * w2_e (silu(gate_e x_t) * up_e x_t), one routed expert at a time;
    with fp8 the stage inputs quantized per row and the intermediate rounded to bf16 first."""
    inter = w1.shape[1] // 2
    out = np.zeros_like(x)
    for e in np.unique(ids):
        t, j = np.nonzero(ids == e)
        rows = quantize_input(x[t]) if fp8 else x[t]
        gate, up = rows @ w1[e, :inter].T, rows @ w1[e, inter:].T
        h = gate / (1.0 + np.exp(-gate)) * up
        if fp8:
            h = quantize_input(round_to(h, torch.bfloat16))
        np.add.at(out, t, (h @ w2[e].T) * weights[t, j][:, None])
    return out


def check(layer, x, topk, kind, out, logits, ids, weights):
    """Max |out - reference| over max |reference|; the logits and routing must agree first."""
    ref_logits = f64(x) @ f64(layer["router"]).T
    logit_err = np.abs(f64(logits) - ref_logits).max() / np.abs(ref_logits).max()
    if logit_err > 1e-2:  # a bf16 rounding of an fp32 sum
        raise AssertionError(f"router logits differ from the reference by {logit_err:.3g} of the largest")
    ref_ids, ref_w = reference_routing(f64(logits), topk)
    got_ids = ids.cpu().numpy()
    if not np.array_equal(got_ids, ref_ids):
        raise AssertionError(f"routing: libaiter chose {got_ids.tolist()}, the reference {ref_ids.tolist()}")
    weight_err = np.abs(f64(weights) - ref_w).max()
    if weight_err > 1e-5:  # fp32 softmax
        raise AssertionError(f"routing weights differ from the reference by {weight_err:.3g}")
    if kind == "bf16":
        w1, w2 = f64(layer["w1"]), f64(layer["w2"])
    else:
        w1 = f64(layer["w1q"].float()) * f64(layer["s1"])[..., None]
        w2 = f64(layer["w2q"].float()) * f64(layer["s2"])[..., None]
    ref = reference_experts(f64(x), w1, w2, ref_ids, ref_w, kind == "fp8")
    return float(np.abs(f64(out) - ref).max() / np.abs(ref).max())


def run(device="cpu", tokens=16, experts=8, topk=2, hidden=256, inter=128, kinds=("bf16", "fp8"), seed=0):
    """Runs each kind of layer on `device`; returns {kind: relative error}."""
    layer = {k: v.to(device) for k, v in make_layer(experts, hidden, inter, seed).items()}
    x = torch.randn(tokens, hidden, generator=torch.Generator().manual_seed(seed + 1)).to(torch.bfloat16).to(device)
    errors = {}
    for kind in kinds:
        out, logits, ids, weights = moe_layer(layer, x, topk, kind)
        errors[kind] = check(layer, x, topk, kind, out, logits, ids, weights)
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--topk", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--inter", type=int, default=128)
    parser.add_argument("--kind", default="bf16,fp8", help="bf16, fp8 or both (comma-separated)")
    args = parser.parse_args()
    kinds = [k for k in args.kind.split(",") if k]
    errors = run(args.device, args.tokens, args.experts, args.topk, args.hidden, args.inter, kinds)
    for kind, err in errors.items():
        print(f"{kind}: T={args.tokens} E={args.experts} k={args.topk} H={args.hidden} I={args.inter} "
              f"on {args.device}: max |out - float64 reference| / max |reference| = {err:.2e}")


if __name__ == "__main__":
    main()
