#!/usr/bin/env python3
"""The CPU backend against PyTorch's CPU ops, in one run.

usage: python3 benchmarks/bench_cpu.py [--ops gemm,memory,attention,moe,mla,cold] [--m 1,16,256] [--rounds 3] [--reps 5]
                                      [--variants cpu.openblas,...] [--attn 512,16,1024]
                                      [--gemm-shapes demo|MxNxK,...]
       python3 benchmarks/bench_cpu.py --demo-split 5

Every case times libaiter and what a PyTorch user would write on the same
tensors (F.linear for the GEMMs, torch._int_mm where it exists, else an fp32
F.linear of the same shape, for int8; eager expressions for the fused ops;
F.scaled_dot_product_attention for prefill and paged decode attention) in
blocks: `reps` calls of ours, then `reps` of the peer, `rounds` times, and
takes each side's fastest call (--stat median for the median).  Blocks rather
than alternating single calls, and a 50 ms pause after each block, because
PyTorch's OpenMP workers spin for a few ms after each call and take a core
from whatever runs next (libaiter's workers sleep at once).  The fastest
call rather than the median, because on a machine whose two cores other
processes share, a call that loses a core to them waits out a scheduler tick,
PyTorch's statically split OpenMP regions more than libaiter's dynamically
shared chunks (medians of 8, 16 or 48 ms for 0.02-0.6 ms of work were seen):
the minimum measures what each can do, not the neighbours.  Both use every CPU thread (torch.set_num_threads
= AITER_NUM_THREADS = the CPU's).  Printed: ms, GFLOP/s (GEMMs) or GB/s (bytes
an ideal kernel reads + writes), and the ratio peer time / ours (> 1: libaiter
faster), with the CPU model, the instruction-set level the CPU kernels use and
the GEMM variant each case ran.  --variants adds, for gemm_a16w16, a row per
named variant forced (aiter/tuning.h), e.g. the vendor library cpu.openblas.

--demo-split N runs the CPU demo's layer (`python -m aiter demo --device cpu`)
in N fresh processes instead and prints where its time goes, op by op, prefill
and decode: each call's wall time, the C call's share (the rest is the Python
layer) and the minor page faults it took, medians over the processes.
"""
import argparse
import json
import mmap
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import aiter
from aiter._lib import check as check_status, ffi, lib

FP8 = torch.float8_e4m3fn
GEMM_N = GEMM_K = 4096
COOL_DOWN_S = 0.05  # after each block: the other side's spinning threads go to sleep


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def last_variant():
    op, variant, how = ffi.new("const char **"), ffi.new("const char **"), ffi.new("int *")
    check_status(lib.aiter_last_kernel_variant(op, variant, how))
    return ffi.string(variant[0]).decode()


def timed(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def compare(ours, peer, rounds, reps, stat):
    ours(), peer()  # warm up: first-touch pages, one-time setup on both sides
    t_ours, t_peer = [], []
    for _ in range(rounds):
        t_ours += timed(ours, reps)
        time.sleep(COOL_DOWN_S)
        t_peer += timed(peer, reps)
        time.sleep(COOL_DOWN_S)
    return stat(t_ours), stat(t_peer)


# ---- the cases: (name, work, unit, ours, peer, peer name) ------------------------------
def forcing(op, variant, fn):
    """fn with `variant` forced for `op` on this thread."""
    def run():
        check_status(lib.aiter_force_kernel_variant(op.encode(), variant.encode()))
        try:
            fn()
        finally:
            check_status(lib.aiter_force_kernel_variant(op.encode(), ffi.NULL))
    return run


def gemm_cases(ms, variants=()):
    for dtype in (torch.bfloat16, torch.float32):
        for m in ms:
            a, w = torch.randn(m, GEMM_K, dtype=dtype), torch.randn(GEMM_N, GEMM_K, dtype=dtype)
            out = torch.empty(m, GEMM_N, dtype=dtype)
            ours = lambda a=a, w=w, out=out: aiter.gemm_a16w16(a, w, out=out)
            name = f"gemm_a16w16 {str(dtype)[6:]} M{m}"
            yield (name, 2 * m * GEMM_N * GEMM_K, "GFLOP/s", ours, lambda a=a, w=w: F.linear(a, w), "F.linear", True)
            for variant in variants:
                yield (name, 2 * m * GEMM_N * GEMM_K, "GFLOP/s", forcing("gemm_a16w16", variant, ours),
                       lambda a=a, w=w: F.linear(a, w), "F.linear", True)
    for m in ms:
        a = torch.randint(-128, 128, (m, GEMM_K), dtype=torch.int8)
        w = torch.randint(-128, 128, (GEMM_N, GEMM_K), dtype=torch.int8)
        a_scale, w_scale = torch.rand(m, 1) + 0.5, torch.rand(1, GEMM_N) + 0.5
        out = torch.empty(m, GEMM_N, dtype=torch.bfloat16)
        af, wf = a.float(), w.float()
        ours = lambda a=a, w=w, s=a_scale, t=w_scale, out=out: aiter.gemm_a8w8(a, w, s, t, out=out)
        name = f"gemm_a8w8 int8 M{m}"
        yield (name, 2 * m * GEMM_N * GEMM_K, "GFLOP/s", ours, lambda af=af, wf=wf: F.linear(af, wf),
               "F.linear fp32", True)
        wt = w.t().contiguous()
        try:
            torch._int_mm(a, wt)
            yield (name, 2 * m * GEMM_N * GEMM_K, "GFLOP/s", ours, lambda a=a, wt=wt: torch._int_mm(a, wt),
                   "torch._int_mm", True)
        except RuntimeError:
            pass  # not for this M on this build of PyTorch
    for m in ms:
        a, w = torch.randn(m, GEMM_K).to(FP8), torch.randn(GEMM_N, GEMM_K).to(FP8)
        one = torch.ones(1)
        out = torch.empty(m, GEMM_N, dtype=torch.bfloat16)
        # PyTorch has no fp8 GEMM on the CPU: the peer is its bf16 F.linear of the same shape.
        ab, wb = a.to(torch.bfloat16), w.to(torch.bfloat16)
        yield (f"gemm_a8w8 fp8 M{m}", 2 * m * GEMM_N * GEMM_K, "GFLOP/s",
               lambda a=a, w=w, one=one, out=out: aiter.gemm_a8w8(a, w, one, one, out=out),
               lambda ab=ab, wb=wb: F.linear(ab, wb), "F.linear bf16", True)


# The prefill GEMMs of `python -m aiter demo` (M x N x K: 240 tokens; qkv,
# o, gate/up, down of its layer), for --gemm-shapes demo.
DEMO_SHAPES = "240x1536x1024,240x1024x1024,240x5632x1024,240x1024x2816"


def gemm_shape_cases(shapes, variants=()):
    """bf16 gemm_a16w16 against F.linear at each M x N x K of `shapes`."""
    shapes = ",".join(DEMO_SHAPES if s == "demo" else s for s in shapes.split(","))
    for shape in shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        a, w = torch.randn(m, k, dtype=torch.bfloat16), torch.randn(n, k, dtype=torch.bfloat16)
        out = torch.empty(m, n, dtype=torch.bfloat16)
        ours = lambda a=a, w=w, out=out: aiter.gemm_a16w16(a, w, out=out)
        for fn in [ours] + [forcing("gemm_a16w16", v, ours) for v in variants]:
            yield (f"gemm_a16w16 bfloat16 {m}x{n}x{k}", 2 * m * n * k, "GFLOP/s", fn,
                   lambda a=a, w=w: F.linear(a, w), "F.linear", True)


# ---- the demo's GEMMs as the demo meets them (--ops cold) ------------------------------
# Each timed call comes after an untimed prepare(), whose result it takes:
# decode (M 4) with W evicted from the caches first (a 64 MB read: between two
# decode steps the demo's float64 check does that; evict_caches), against F.linear on the
# same evicted W and against one thread reading W (NumPy's max of its bits,
# the rate memory gives a plain sequential read); prefill (M 240) into an
# output in fresh pages (an anonymous mmap, as NumPy's np.empty of a few MB
# gets), against torch.matmul into fresh pages the same way.
DECODE_SHAPES = {"qkv": (1536, 1024), "o": (1024, 1024), "gate_up": (5632, 1024), "down": (1024, 2816)}
EVICT = None


def evict_caches():
    """A 64 MB read, then a small libaiter op, as the decode step's RMSNorm
    comes before its first GEMM in the demo (libaiter's worker, asleep after
    the read, is awake again; waking it costs 50-60 us here)."""
    global EVICT
    if EVICT is None:
        EVICT = (np.ones(16 << 20, np.float32), torch.ones(4, 1024, dtype=torch.bfloat16),
                 torch.ones(1024, dtype=torch.bfloat16))
    big, x, weight = EVICT
    big.sum()
    aiter.rmsnorm(x, weight, 1e-5)


def fresh_tensor(shape, dtype):
    """A tensor in pages no one has touched (kept alive by the tensor)."""
    count = int(np.prod(shape))
    buf = mmap.mmap(-1, count * torch.empty((), dtype=dtype).element_size())
    return torch.frombuffer(buf, dtype=dtype, count=count).view(shape)


def cold_cases(ms):
    bf = torch.bfloat16
    for name, (n, k) in DECODE_SHAPES.items():
        a, w = torch.randn(4, k, dtype=bf), torch.randn(n, k, dtype=bf)
        out = torch.empty(4, n, dtype=bf)
        bits = w.view(torch.int16).numpy()
        ours = lambda _, a=a, w=w, out=out: aiter.gemm_a16w16(a, w, out=out)
        case = f"decode {name} 4x{n}x{k}, W evicted"
        yield (case, n * k * 2, "GB/s W", ours, lambda _, a=a, w=w: F.linear(a, w), "F.linear", True, evict_caches)
        yield (case, n * k * 2, "GB/s W", ours, lambda _, bits=bits: bits.max(), "np.max(W), 1 thread", True,
               evict_caches)
    for shape in DEMO_SHAPES.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        a, w = torch.randn(m, k, dtype=bf), torch.randn(n, k, dtype=bf)
        wt = w.t()
        yield (f"prefill {m}x{n}x{k}, fresh output", 2 * m * n * k, "GFLOP/s",
               lambda out, a=a, w=w: aiter.gemm_a16w16(a, w, out=out),
               lambda out, a=a, wt=wt: torch.matmul(a, wt, out=out), "torch.matmul(out=)", True,
               lambda m=m, n=n: fresh_tensor((m, n), bf))


def compare_prepared(ours, peer, prepare, rounds, reps, stat):
    """compare() with prepare() before every call, outside the timed region."""
    def timed_prepared(fn):
        times = []
        for _ in range(reps):
            arg = prepare()
            start = time.perf_counter()
            fn(arg)
            times.append(time.perf_counter() - start)
        return times
    ours(prepare()), peer(prepare())
    t_ours, t_peer = [], []
    for _ in range(rounds):
        t_ours += timed_prepared(ours)
        time.sleep(COOL_DOWN_S)
        t_peer += timed_prepared(peer)
        time.sleep(COOL_DOWN_S)
    return stat(t_ours), stat(t_peer)


def t_gated(x, act):
    d = x.shape[-1] // 2
    return act(x[..., :d]) * x[..., d:]


def t_quant_per_token(y):
    y = y.float()
    scale = (y.abs().amax(-1, keepdim=True) / 448.0).clamp(min=torch.finfo(torch.float32).tiny)
    return (y / scale).clamp(-448.0, 448.0).to(FP8), scale


def t_rope_neox(q, k, cos, sin):
    out = []
    for t in (q, k):
        half = t.shape[-1] // 2
        a, b = t[..., :half].float(), t[..., half:].float()
        out.append(torch.cat([a * cos - b * sin, b * cos + a * sin], -1).to(t.dtype))
    return out


def memory_cases(ms):
    bf = torch.bfloat16
    for m in ms:
        d = 28672
        x, out = torch.randn(m, 2 * d, dtype=bf), torch.empty(m, d, dtype=bf)
        moved = (x.numel() + out.numel()) * 2
        yield (f"silu_and_mul bf16 {m}x{d}", moved, "GB/s", lambda x=x, out=out: aiter.silu_and_mul(x, out=out),
               lambda x=x: t_gated(x, F.silu), "F.silu(g) * u", False)
        yield (f"gelu_and_mul tanh bf16 {m}x{d}", moved, "GB/s",
               lambda x=x, out=out: aiter.gelu_and_mul(x, "tanh", out=out),
               lambda x=x: t_gated(x, lambda g: F.gelu(g, approximate="tanh")), "F.gelu(g) * u", False)
    for m in ms:
        h, w = torch.randn(m, 4096, dtype=bf), torch.randn(4096, dtype=bf)
        out = torch.empty_like(h)
        yield (f"rmsnorm bf16 {m}x4096", h.numel() * 4, "GB/s", lambda h=h, w=w, out=out: aiter.rmsnorm(h, w, out=out),
               lambda h=h, w=w: F.rms_norm(h, (4096,), w, 1e-6), "F.rms_norm", False)
        yield (f"quant_per_token fp8 {m}x4096", h.numel() * 3 + m * 4, "GB/s",
               lambda h=h: aiter.quant_per_token(h), lambda h=h: t_quant_per_token(h), "eager amax/scale/cast", False)
    for m in ms:
        q, k = torch.randn(m, 32, 128, dtype=bf), torch.randn(m, 8, 128, dtype=bf)
        positions = torch.arange(m) * 7 % 4096
        cache = torch.as_tensor(aiter.rope_cos_sin_cache(4096, 128))
        cs = cache[positions]
        cos, sin = cs[:, :64].unsqueeze(1), cs[:, 64:].unsqueeze(1)
        yield (f"rope neox bf16 {m} tok 32+8 heads", (q.numel() + k.numel()) * 4, "GB/s",
               lambda q=q, k=k, p=positions, c=cache: aiter.rope(q, k, p, c),
               lambda q=q, k=k, cos=cos, sin=sin: t_rope_neox(q, k, cos, sin), "eager rotate + cat", False)


ATTN_HEADS, ATTN_KV_HEADS, ATTN_DIM = 32, 8, 128  # the shape (Llama-3-8B's attention)


def attention_flops(q_len, k_len, causal, heads=ATTN_HEADS, d=ATTN_DIM):
    """2 (q k^T) + 2 (p v) flops per visible (query, key) pair and dim; causal with
    the ends aligned: query i sees k_len - q_len + i + 1 keys."""
    pairs = sum(k_len - q_len + i + 1 for i in range(q_len)) if causal else q_len * k_len
    return 4 * heads * d * pairs


def attention_cases(tokens, batch, context):
    """Prefill (one sequence of `tokens`, causal) and paged decode (`batch`
    sequences of `context` positions, one new token each) in bf16 against
    F.scaled_dot_product_attention (enable_gqa) on the same values, laid out as
    SDPA wants them ([B, H, L, D], contiguous); the decode cache is paged with
    the pages of each sequence in order, so both read the same bytes."""
    bf = torch.bfloat16
    q, k, v = (torch.randn(tokens, h, ATTN_DIM, dtype=bf) for h in (ATTN_HEADS, ATTN_KV_HEADS, ATTN_KV_HEADS))
    cu = torch.tensor([0, tokens], dtype=torch.int32)
    out = torch.empty_like(q)
    qs, ks, vs = (x.transpose(0, 1).unsqueeze(0).contiguous() for x in (q, k, v))
    yield (f"prefill_attention bf16 causal {tokens} tok", attention_flops(tokens, tokens, True), "GFLOP/s",
           lambda: aiter.prefill_attention(q, k, v, cu, out=out),
           lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=True, enable_gqa=True), "F.sdpa", False)
    page = 16
    pages = context // page
    k_cache = torch.randn(batch * pages, page, ATTN_KV_HEADS, ATTN_DIM, dtype=bf)
    v_cache = torch.randn(batch * pages, page, ATTN_KV_HEADS, ATTN_DIM, dtype=bf)
    table = torch.arange(batch * pages, dtype=torch.int32).reshape(batch, pages)
    lens = torch.full((batch,), context, dtype=torch.int32)
    qd = torch.randn(batch, ATTN_HEADS, ATTN_DIM, dtype=bf)
    outd = torch.empty_like(qd)
    kd, vd = (c.reshape(batch, context, ATTN_KV_HEADS, ATTN_DIM).transpose(1, 2).contiguous() for c in (k_cache, v_cache))
    qsd = qd.unsqueeze(2)
    yield (f"paged_decode bf16 B{batch} ctx {context}", attention_flops(1, context, False) * batch, "GFLOP/s",
           lambda: aiter.paged_decode_attention(qd, k_cache, v_cache, table, lens, out=outd),
           lambda: F.scaled_dot_product_attention(qsd, kd, vd, enable_gqa=True), "F.sdpa", False)
    # The KV write of `tokens` new tokens to shuffled slots of the same caches: a
    # copy (bf16), or x / scale in e4m3fn; the peer is eager indexing (+ the cast).
    slots = torch.randperm(batch * context)[:tokens]
    key, value = k[:, :ATTN_KV_HEADS], v[:, :ATTN_KV_HEADS]
    flat_k, flat_v = k_cache.view(-1, ATTN_KV_HEADS, ATTN_DIM), v_cache.view(-1, ATTN_KV_HEADS, ATTN_DIM)

    def eager_write(kc, vc, scale=None):
        for cache, x in ((kc, key), (vc, value)):
            cache[slots] = x if scale is None else (x.float() / scale).clamp(-448.0, 448.0).to(FP8)
    moved = key.numel() * 2 * 2 * 2  # bf16 in, bf16 out, keys and values
    yield (f"reshape_and_cache bf16 {tokens} tok", moved, "GB/s",
           lambda: aiter.reshape_and_cache(key, value, k_cache, v_cache, slots),
           lambda: eager_write(flat_k, flat_v), "index_put", False)
    k8, v8 = k_cache.to(FP8), v_cache.to(FP8)
    flat_k8, flat_v8 = k8.view(-1, ATTN_KV_HEADS, ATTN_DIM), v8.view(-1, ATTN_KV_HEADS, ATTN_DIM)
    yield (f"reshape_and_cache fp8 {tokens} tok", moved * 3 // 4, "GB/s",
           lambda: aiter.reshape_and_cache(key, value, k8, v8, slots, k_scale=0.5, v_scale=0.5),
           lambda: eager_write(flat_k8, flat_v8, 0.5), "scale/cast + index_put", False)


def moe_cases(experts, k, hidden, inter, tokens):
    """fused_moe (bf16, SiLU) and fused_moe_fp8 (e4m3fn, per-channel scales) on
    random routing against the eager expert loop a PyTorch user writes: per
    expert, its tokens' rows through F.linear (gate and up in one), SiLU, F.linear
    down, scaled by the routing weight and index_add-ed into the output (fp8:
    the weights dequantized to bf16 once, outside the timing, which favours the
    peer).  GFLOP/s over the routed rows: 2 * T * k * 3 * H * I * 2."""
    bf = torch.bfloat16
    x = torch.randn(tokens, hidden, dtype=bf)
    w1 = torch.randn(experts, 2 * inter, hidden, dtype=bf) * hidden ** -0.5
    w2 = torch.randn(experts, hidden, inter, dtype=bf) * inter ** -0.5
    weights, ids = torch.rand(tokens, experts).topk(k, dim=1)
    weights, ids = (weights / weights.sum(1, keepdim=True)).float(), ids.int()
    flops = 2 * tokens * k * 3 * hidden * inter
    out = torch.empty_like(x)

    def eager(w1e, w2e):
        y = torch.zeros(tokens, hidden, dtype=torch.float32)
        for e in range(experts):
            t, j = (ids == e).nonzero(as_tuple=True)
            if t.numel() == 0:
                continue
            gate, up = F.linear(x[t], w1e[e]).chunk(2, dim=-1)
            h = F.silu(gate) * up
            y.index_add_(0, t, (F.linear(h, w2e[e]).float() * weights[t, j, None]))
        return y.to(bf)
    shape = f"E{experts} k{k} H{hidden} I{inter} T{tokens}"
    yield (f"fused_moe bf16 {shape}", flops, "GFLOP/s", lambda: aiter.fused_moe(x, w1, w2, weights, ids, out=out),
           lambda: eager(w1, w2), "eager loop F.linear", False)
    s1 = w1.float().abs().amax(-1) / 448.0
    s2 = w2.float().abs().amax(-1) / 448.0
    q1 = (w1.float() / s1[..., None]).to(FP8)
    q2 = (w2.float() / s2[..., None]).to(FP8)
    d1, d2 = (q1.float() * s1[..., None]).to(bf), (q2.float() * s2[..., None]).to(bf)
    yield (f"fused_moe_fp8 e4m3fn {shape}", flops, "GFLOP/s",
           lambda: aiter.fused_moe_fp8(x, q1, q2, s1, s2, weights, ids, out=out),
           lambda: eager(d1, d2), "eager loop (bf16 deq.)", False)


def mla_cases(batch, heads, context):
    """mla_decode (bf16 query and cache, one new token, pages of 64 in order)
    against bmm-softmax-bmm on the same latents as a contiguous [B, ctx, 576]
    tensor (the gather a paged cache would need is left out, which favours the
    peer).  GFLOP/s: 2 * (576 + 512) per (head, position)."""
    bf, page, d, dv = torch.bfloat16, 64, 576, 512
    pages = context // page
    cache = torch.randn(batch * pages, page, d, dtype=bf)
    table = torch.arange(batch * pages, dtype=torch.int32).reshape(batch, pages)
    lens = torch.full((batch,), context, dtype=torch.int32)
    q = torch.randn(batch, 1, heads, d, dtype=bf)
    out = torch.empty(batch, 1, heads, dv, dtype=bf)
    scale = d ** -0.5
    latents = cache.reshape(batch, context, d)
    keys_t, values = latents.transpose(1, 2), latents[:, :, :dv]
    qs = q[:, 0]

    def eager():
        p = torch.softmax(torch.bmm(qs, keys_t).float() * scale, dim=-1).to(bf)
        return torch.bmm(p, values)
    yield (f"mla_decode bf16 B{batch} Hq{heads} ctx {context}", 2 * (d + dv) * heads * context * batch, "GFLOP/s",
           lambda: aiter.mla_decode(q, cache, table, lens, scale, out=out), eager, "bmm-softmax-bmm", False)


# ---- the demo's layer, call by call (--demo-split N) ----------------------------------
# Run in a fresh process each time: the demo times a process's first pass.
_SPLIT_CHILD = r"""
import contextlib, io, json, resource, time
import aiter._call as call
from aiter.cli import demo

c_ms = [0.0]
run_c = call.Call.run
def run(self, *args):
    t0 = time.perf_counter()
    try:
        return run_c(self, *args)
    finally:
        c_ms[0] += (time.perf_counter() - t0) * 1e3
call.Call.run = run

calls = []
timer_call = demo.OpTimer.__call__
def timed(self, name, fn, *args, **kwargs):
    c_ms[0] = 0.0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    result = timer_call(self, name, fn, *args, **kwargs)
    wall = (time.perf_counter() - t0) * 1e3
    calls.append((name, wall, c_ms[0], resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults))
    return result
demo.OpTimer.__call__ = timed
with contextlib.redirect_stdout(io.StringIO()) as out:
    status = demo.run(device="cpu")
if status != 0:
    raise SystemExit(out.getvalue())
print(json.dumps(calls))
"""


def demo_split(runs):
    """The demo's 50 op calls in `runs` fresh processes: per call the wall time,
    the C call's time and the minor faults, medians over the processes."""
    per_run = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _SPLIT_CHILD], capture_output=True, text=True, check=True)
        per_run.append(json.loads(done.stdout.strip().splitlines()[-1]))
    calls_per_pass = 10  # the layer's op calls: the prefill, then each decode step
    rows = {}
    for calls in per_run:
        for i, (name, wall, c_ms, faults) in enumerate(calls):
            phase = "prefill" if i < calls_per_pass else f"decode {i // calls_per_pass}"
            rows.setdefault((i, phase, name), []).append((wall, c_ms, faults))
    med = statistics.median
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; the demo's layer in {runs} fresh processes; "
          f"load average {os.getloadavg()[0]:.2f}; medians, ms (faults: minor page faults of the call)")
    print(f"{'phase':10} {'op':26} {'wall':>8} {'C call':>8} {'python':>8} {'faults':>7}")
    totals = {}
    for (i, phase, name), samples in sorted(rows.items()):
        wall, c_ms, faults = (med(s[j] for s in samples) for j in range(3))
        print(f"{phase:10} {name:26} {wall:8.3f} {c_ms:8.3f} {wall - c_ms:8.3f} {faults:7.0f}")
        total = totals.setdefault(phase, [0.0, 0.0])
        total[0], total[1] = total[0] + wall, total[1] + c_ms
    for phase, (wall, c_ms) in totals.items():
        print(f"{phase:10} {'(sum of the medians)':26} {wall:8.3f} {c_ms:8.3f} {wall - c_ms:8.3f}")
    run_totals = [sum(c[1] for c in calls) for calls in per_run]
    print(f"all ops per process: {' '.join(f'{t:.2f}' for t in run_totals)} ms (median {med(run_totals):.2f})")
    return 0


FAMILIES = {"gemm": gemm_cases, "memory": memory_cases, "cold": cold_cases}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="gemm,memory,attention",
                        help="families: gemm, memory, attention, moe, mla, cold (the demo's GEMMs, W evicted / fresh output)")
    parser.add_argument("--m", default="1,16,256", help="rows (tokens) per case")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--variants", default="", help="gemm_a16w16 variants to time forced as well")
    parser.add_argument("--gemm-shapes", default="",
                        help="gemm family: bf16 at these MxNxK instead (comma-separated; 'demo': the demo's 4 prefill GEMMs)")
    parser.add_argument("--stat", choices=["min", "median"], default="min")
    parser.add_argument("--moe", default="8,2,1024,2048,64",
                        help="moe: experts, top-k, hidden, intermediate, tokens (Mixtral-like, scaled down)")
    parser.add_argument("--mla", default="4,16,2048", help="mla: batch, query heads, context (a multiple of 64)")
    parser.add_argument("--attn", default="512,16,1024",
                        help="attention: prefill tokens, decode batch, decode context (a multiple of 16)")
    parser.add_argument("--demo-split", type=int, default=0, metavar="N",
                        help="instead: the CPU demo's layer in N fresh processes, each call's time split into C / Python")
    args = parser.parse_args(argv)
    if args.demo_split:
        return demo_split(args.demo_split)
    ms = [int(x) for x in args.m.split(",")]
    threads = aiter.library_info()["cpu_threads"]
    torch.set_num_threads(threads)
    info = aiter.library_info()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; CPU: {cpu_model()}, {os.cpu_count()} logical "
          f"CPUs; libaiter and PyTorch {torch.__version__} with {threads} threads; load average "
          f"{os.getloadavg()[0]:.2f} (other processes share these cores)")
    print(f"times: the {args.stat} of {args.rounds} rounds x {args.reps} calls per side")
    print(f"libaiter CPU kernels: {info['cpu_isa']}; vendor libraries: {', '.join(info['cpu_libraries']) or 'none'}; "
          f"library {info['library_path']}")
    print(f"{'case':40} {'variant':11} {'ours ms':>9} {'rate':>15} {'peer':>22} {'peer ms':>9} {'rate':>9} "
          f"{'ratio':>6}")
    for family in args.ops.split(","):
        variants = [v for v in args.variants.split(",") if v]
        if family == "gemm" and args.gemm_shapes:
            cases = gemm_shape_cases(args.gemm_shapes, variants)
        elif family == "gemm":
            cases = gemm_cases(ms, variants)
        elif family == "moe":
            cases = moe_cases(*(int(x) for x in args.moe.split(",")))
        elif family == "mla":
            cases = mla_cases(*(int(x) for x in args.mla.split(",")))
        elif family == "attention":
            cases = attention_cases(*(int(x) for x in args.attn.split(",")))
        else:
            cases = FAMILIES[family](ms)
        for name, work, unit, ours, peer, peer_name, is_gemm, *prepare in cases:
            stat = {"min": min, "median": statistics.median}[args.stat]
            if prepare:
                t_ours, t_peer = compare_prepared(ours, peer, prepare[0], args.rounds, args.reps, stat)
            else:
                t_ours, t_peer = compare(ours, peer, args.rounds, args.reps, stat)
            variant = last_variant() if is_gemm else "-"
            scale = 1e-9
            print(f"{name:40} {variant:11} {t_ours * 1e3:9.3f} {work * scale / t_ours:9.1f} {unit:7} "
                  f"{peer_name:>22} {t_peer * 1e3:9.3f} {work * scale / t_peer:9.1f} {t_peer / t_ours:6.2f}",
                  flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
