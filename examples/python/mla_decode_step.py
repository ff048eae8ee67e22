#!/usr/bin/env python3
"""One DeepSeek-V3-shaped MLA decode step with libaiter, checked against a
float64 NumPy reference of the unabsorbed attention.

usage: python3 examples/python/mla_decode_step.py [--device cuda|cpu] [--batch 4] [--heads 16]
       [--hidden 7168] [--context 1000]

The new token of each sequence goes through its projections (gemm_a16w16),
the latent's RMSNorm and the rotary embedding (rmsnorm, rope), is written to
the paged latent cache (concat_and_cache_mla), and attends over its context
with the up-projections absorbed: q_nope times W_UK per head
(batched_gemm_a16w16) gives the 512-wide latent query, mla_decode the latent
output, which W_UV per head (batched_gemm_a16w16) and the output projection
(gemm_a16w16) turn into the hidden state.  The reference does the attention
the unabsorbed way: per-head keys [W_UK kv_c, k_pe] and values W_UV kv_c.
"""
import argparse
import math

import numpy as np
import torch

import aiter

NOPE, ROPE, V, LATENT = 128, 64, 128, 512  # DeepSeek-V3's head dims and KV rank
PAGE = 64


def make_model(hidden, heads, seed=0):
    """bf16 weights [out, in] (gemm_a16w16 computes x @ w.T), scaled to keep activations O(1)."""
    g = torch.Generator().manual_seed(seed)

    def w(*shape, fan_in):
        return (torch.randn(*shape, generator=g) / math.sqrt(fan_in)).to(torch.bfloat16)
    return {"w_q": w(heads * (NOPE + ROPE), hidden, fan_in=hidden),  # the query projection (no q LoRA here)
            "w_kv_a": w(LATENT + ROPE, hidden, fan_in=hidden),          # to the latent and the shared rope key
            "kv_norm": (1 + 0.1 * torch.randn(LATENT, generator=g)).to(torch.bfloat16),
            "w_uk": w(heads, NOPE, LATENT, fan_in=LATENT),              # per head: latent -> key (nope part)
            "w_uv": w(heads, V, LATENT, fan_in=LATENT),                 # per head: latent -> value
            "w_o": w(hidden, heads * V, fan_in=heads * V)}


def make_state(batch, context, hidden, heads, seed=1):
    """The new tokens' hidden states, a paged cache already holding the earlier
    context's latents (shuffled blocks), and the new tokens' slots."""
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(max(context // 2, 1), context + 1, (batch,), generator=g, dtype=torch.int32)
    pages = (int(lens.max()) + PAGE - 1) // PAGE
    blocks = torch.randperm(batch * pages, generator=g, dtype=torch.int32).view(batch, pages)
    cache = torch.randn(batch * pages, PAGE, LATENT + ROPE, generator=g).to(torch.bfloat16)
    slots = torch.tensor([int(blocks[b, (n - 1) // PAGE]) * PAGE + (n - 1) % PAGE
                          for b, n in enumerate(lens.tolist())])
    x = torch.randn(batch, hidden, generator=g).to(torch.bfloat16)
    return {"x": x, "cache": cache, "table": blocks, "lens": lens, "slots": slots, "positions": lens.long() - 1}


def decode_step(model, state, rope_cache, scale):
    """The absorbed MLA step on libaiter ops; returns the new hidden states [B, hidden]
    (the cache gains the new tokens' latents)."""
    x, heads = state["x"], model["w_uk"].shape[0]
    batch = x.shape[0]
    q = aiter.gemm_a16w16(x, model["w_q"]).view(batch, heads, NOPE + ROPE)
    kv = aiter.gemm_a16w16(x, model["w_kv_a"])
    kv_c = aiter.rmsnorm(kv[:, :LATENT].contiguous(), model["kv_norm"])
    k_pe = kv[:, LATENT:].reshape(batch, 1, ROPE).contiguous()
    q_pe = q[:, :, NOPE:].contiguous()
    aiter.rope(q_pe, k_pe, state["positions"], rope_cache, "gptj")  # in place
    aiter.concat_and_cache_mla(kv_c, k_pe[:, 0], state["cache"], state["slots"])
    q_nope = q[:, :, :NOPE].transpose(0, 1).contiguous()                          # [H, B, 128]
    w_uk_t = model["w_uk"].transpose(1, 2).contiguous()                           # [H, 512, 128]
    q_latent = aiter.batched_gemm_a16w16(q_nope, w_uk_t)                           # [H, B, 512]
    q_mla = torch.cat([q_latent.transpose(0, 1), q_pe], dim=-1).unsqueeze(1)     # [B, 1, H, 576]
    o_latent = aiter.mla_decode(q_mla.contiguous(), state["cache"], state["table"], state["lens"], scale)
    o = aiter.batched_gemm_a16w16(o_latent[:, 0].transpose(0, 1).contiguous(), model["w_uv"])  # [H, B, 128]
    return aiter.gemm_a16w16(o.transpose(0, 1).reshape(batch, heads * V), model["w_o"])


# ---- the float64 reference ------------------------------------------------------------

def f64(t):
    return t.detach().cpu().double().numpy()


def rope_gptj(x, positions, rope_cache):
    """Rotates pairs (2i, 2i + 1) of the last dim by the cache's angles (float64)."""
    half = x.shape[-1] // 2
    cos, sin = rope_cache[positions, :half], rope_cache[positions, half:]
    ones = [1] * (x.ndim - 2)
    cos, sin = cos.reshape(cos.shape[0], *ones, half), sin.reshape(sin.shape[0], *ones, half)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = even * cos - odd * sin, even * sin + odd * cos
    return out


def reference(model, state, cache_before, rope_cache, scale, eps=1e-6):
    """Unabsorbed MLA attention in float64 over the earlier latents (from the cache)
    and the new token's own."""
    m = {k: f64(v) for k, v in model.items()}
    x, heads = f64(state["x"]), m["w_uk"].shape[0]
    batch = x.shape[0]
    q = (x @ m["w_q"].T).reshape(batch, heads, NOPE + ROPE)
    kv = x @ m["w_kv_a"].T
    latent = kv[:, :LATENT]
    kv_c = latent / np.sqrt((latent ** 2).mean(-1, keepdims=True) + eps) * m["kv_norm"]
    positions = state["positions"].cpu().numpy()
    k_pe = rope_gptj(kv[:, LATENT:], positions, rope_cache)
    q_nope, q_pe = q[..., :NOPE], rope_gptj(q[..., NOPE:], positions, rope_cache)
    cache, table = f64(cache_before), state["table"].cpu().numpy()
    out = np.zeros((batch, heads * V))
    for b, n in enumerate(state["lens"].cpu().tolist()):
        pos = np.arange(n - 1)
        rows = cache[table[b, pos // PAGE], pos % PAGE]
        c_all = np.concatenate([rows[:, :LATENT], kv_c[b:b + 1]])     # [n, 512]
        pe_all = np.concatenate([rows[:, LATENT:], k_pe[b:b + 1]])    # [n, 64]
        for h in range(heads):
            keys = np.concatenate([c_all @ m["w_uk"][h].T, pe_all], axis=1)  # [n, 192]
            values = c_all @ m["w_uv"][h].T                                  # [n, 128]
            logits = keys @ np.concatenate([q_nope[b, h], q_pe[b, h]]) * scale
            p = np.exp(logits - logits.max())
            out[b, h * V:(h + 1) * V] = p @ values / p.sum()
    return out @ m["w_o"].T


def run(device="cpu", batch=4, heads=16, hidden=7168, context=1000):
    """The step on `device` and its relative error against the reference."""
    model = {k: v.to(device) for k, v in make_model(hidden, heads).items()}
    state = {k: v.to(device) for k, v in make_state(batch, context, hidden, heads).items()}
    rope = aiter.rope_cos_sin_cache(context + 1, ROPE)
    scale = 1.0 / math.sqrt(NOPE + ROPE)
    cache_before = state["cache"].clone()
    got = f64(decode_step(model, state, torch.from_numpy(rope).to(device), scale))
    want = reference(model, state, cache_before, rope, scale)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=7168)
    parser.add_argument("--context", type=int, default=1000)
    a = parser.parse_args()
    error = run(a.device, a.batch, a.heads, a.hidden, a.context)
    print(f"MLA decode step on {a.device}: B {a.batch}, {a.heads} heads, hidden {a.hidden}, context <= {a.context}: "
          f"relative error against the float64 unabsorbed reference {error:.2e}")
    assert error < 2e-2, "the absorbed step does not match the reference"


if __name__ == "__main__":
    main()
