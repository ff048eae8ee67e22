#!/usr/bin/env python3
"""One Llama-3-8B decoder layer built from libaiter ops, against the same layer in
PyTorch eager and under torch.compile, in one run (issue 31, item 6).

usage: python3 benchmarks/bench_layer.py [--cases prefill,decode_b64,decode_b1] [--warmup MS] [--rep MS]
                                         [--device cuda|cpu] [--tiny] [--json FILE]

The layer (bf16, random weights): RMSNorm -> QKV GEMM -> RoPE (NeoX, theta
500000) -> K/V written into the cache -> attention -> O GEMM -> add + RMSNorm ->
gate/up GEMM -> SiLU-and-mul -> down GEMM.  It returns the MLP output and the
residual; the residual add that follows belongs to the next layer's add + RMSNorm
(as in vLLM), in every contender alike.

- libaiter: rmsnorm, gemm_a16w16, rope, reshape_and_cache into a paged cache
  (page 16, shuffled block table), prefill_attention over the packed sequences
  (prefill) or paged_decode_attention in its split-KV form with a workspace
  (decode), gemm_a16w16, add_rmsnorm, gemm_a16w16, silu_and_mul, gemm_a16w16;
  every output preallocated, so a decode step is graph-capturable.
- eager: the same layer in PyTorch (F.rms_norm, F.linear, RoPE in fp32,
  F.scaled_dot_product_attention on the cuDNN back end over a contiguous
  [B, Hkv, S, D] KV cache, F.silu).
- compile: torch.compile of that function (inductor, default mode, static shapes).

Cases: prefill of 4 x 2048 tokens (causal; packed for libaiter, [B, H, S, D] for
torch), and decode steps of one new token per sequence at batch 64 / context 4096
and batch 1 / context 32768.  Decode steps of every contender are captured in a
torch.cuda.CUDAGraph and its replays timed (compile: captured after warm-up, the
same way).  Before any timing, the libaiter layer's output is checked against
the eager layer's (bf16 tolerance), so the benchmark cannot time a wrong layer.

Times are medians of triton.testing.do_bench (L2 flushed before each run); the
ratio is compile time / libaiter time (> 1: libaiter faster; issue 31's target
is >= 1.1).  A per-op table then times each op of the libaiter layer and of the
eager layer alone (decode: each op in its own graph), to show where time goes.

`--device cpu --tiny` runs a tiny layer (hidden 256, 4/2 heads of 64, 2 and 1
sequences of 16-128 tokens) on the CPU, timed with perf_counter medians, so the
code path runs without a GPU; its numbers mean nothing.
"""
import argparse
import contextlib
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import aiter
import aiter.torch  # noqa: F401  (aiter ops on torch tensors)

BF16 = torch.bfloat16
LLAMA3_8B = {"hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "intermediate": 14336,
             "eps": 1e-5, "rope_theta": 500000.0, "page": 16}
TINY = dict(LLAMA3_8B, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=512)
# case: (phase, sequences, tokens of context each)
CASES = {"prefill": ("prefill", 4, 2048), "decode_b64": ("decode", 64, 4096), "decode_b1": ("decode", 1, 32768)}
TINY_CASES = {"prefill": ("prefill", 2, 16), "decode_b64": ("decode", 2, 64), "decode_b1": ("decode", 1, 128)}
# Relative Frobenius error allowed between two bf16 layers: each rounds ~10
# intermediates to bf16 in its own order (the demo sees ~3e-3 against float64).
TOLERANCE = 2e-2
NO_SPLIT = "(attention without split-KV)"


# ---- inputs ------------------------------------------------------------------------------
def make_weights(c, dev):
    def linear(n, k):
        return (torch.randn(n, k, device=dev) / math.sqrt(k)).to(BF16)

    def norm():
        return (1 + 0.1 * torch.randn(c["hidden"], device=dev)).to(BF16)
    q_rows = (c["heads"] + 2 * c["kv_heads"]) * c["head_dim"]
    return {"ln1": norm(), "qkv": linear(q_rows, c["hidden"]), "o": linear(c["hidden"], c["heads"] * c["head_dim"]),
            "ln2": norm(), "gate_up": linear(2 * c["intermediate"], c["hidden"]),
            "down": linear(c["hidden"], c["intermediate"])}


def cos_sin_cache(c, max_position, dev):
    """fp32 [max_position, D]: cos then sin of position * theta^(-2i/D)."""
    return torch.from_numpy(aiter.rope_cos_sin_cache(max_position, c["head_dim"], c["rope_theta"])).to(dev)


class Step:
    """One step's inputs: hidden states, positions, a paged KV cache (libaiter)
    and a contiguous one (torch) holding the same earlier keys and values."""

    def __init__(self, c, phase, seqs, context, dev):
        self.phase, self.seqs, self.context = phase, seqs, context
        new = context if phase == "prefill" else 1
        self.tokens = seqs * new
        hkv, d, page = c["kv_heads"], c["head_dim"], c["page"]
        self.x = torch.randn(self.tokens, c["hidden"], device=dev).to(BF16)
        first = context - new  # position of each sequence's first new token
        self.positions = torch.arange(first, context, device=dev).repeat(seqs)
        per_seq = -(-context // page)
        num_blocks = seqs * per_seq + 1  # a spare block nobody reads
        self.block_table = torch.randperm(num_blocks, device=dev)[:seqs * per_seq].view(seqs, per_seq).int()
        self.k_cache = torch.randn(num_blocks, page, hkv, d, device=dev).to(BF16)
        self.v_cache = torch.randn(num_blocks, page, hkv, d, device=dev).to(BF16)
        self.context_lens = torch.full((seqs,), context, dtype=torch.int32, device=dev)
        self.cu_seqlens = torch.arange(0, self.tokens + 1, new, dtype=torch.int32, device=dev)
        seq = torch.arange(self.tokens, device=dev) // new
        self.slots = self.block_table[seq, self.positions // page].long() * page + self.positions % page
        self.k_contig, self.v_contig = (self.contiguous(cache, per_seq * page, c) for cache in
                                        (self.k_cache, self.v_cache))

    def contiguous(self, cache, padded, c):
        """[B, Hkv, context, D]: the paged cache's tokens in order."""
        rows = cache[self.block_table.flatten().long()].view(self.seqs, padded, c["kv_heads"], c["head_dim"])
        return rows[:, :self.context].transpose(1, 2).contiguous()


# ---- the libaiter layer --------------------------------------------------------------------
class AiterLayer:
    """The layer as a list of libaiter calls on preallocated buffers."""

    def __init__(self, c, w, s, cos_sin):
        t, hq, hkv, d = s.tokens, c["heads"], c["kv_heads"], c["head_dim"]

        def empty(*shape):
            return torch.empty(*shape, dtype=BF16, device=s.x.device)
        self.h, self.qkv = empty(t, c["hidden"]), empty(t, (hq + 2 * hkv) * d)
        qkv = self.qkv.view(t, hq + 2 * hkv, d)
        self.q, self.k, self.v = qkv[:, :hq], qkv[:, hq:hq + hkv], qkv[:, hq + hkv:]  # strided views
        self.attn, self.o = empty(t, hq, d), empty(t, c["hidden"])
        self.h2, self.resid = empty(t, c["hidden"]), empty(t, c["hidden"])
        self.gate_up, self.act = empty(t, 2 * c["intermediate"]), empty(t, c["intermediate"])
        self.out = empty(t, c["hidden"])
        if s.phase == "decode":
            nbytes = aiter.paged_decode_workspace_size(self.q, s.k_cache, s.block_table)
            self.workspace = torch.empty(max(nbytes // 4, 1), dtype=torch.float32, device=s.x.device)
        eps, cache = c["eps"], (s.k_cache, s.v_cache)
        self.steps = [
            ("rmsnorm", lambda: aiter.rmsnorm(s.x, w["ln1"], eps, out=self.h)),
            ("qkv_gemm", lambda: aiter.gemm_a16w16(self.h, w["qkv"], out=self.qkv)),
            ("rope", lambda: aiter.rope(self.q, self.k, s.positions, cos_sin)),
            ("kv_write", lambda: aiter.reshape_and_cache(self.k, self.v, *cache, s.slots)),
            ("attention", self.prefill_attention(s) if s.phase == "prefill" else self.decode_attention(s)),
            ("o_gemm", lambda: aiter.gemm_a16w16(self.attn.view(t, hq * d), w["o"], out=self.o)),
            ("add_rmsnorm", lambda: aiter.add_rmsnorm(self.o, s.x, w["ln2"], eps, out=self.h2,
                                                      residual_out=self.resid)),
            ("gate_up_gemm", lambda: aiter.gemm_a16w16(self.h2, w["gate_up"], out=self.gate_up)),
            ("silu_and_mul", lambda: aiter.silu_and_mul(self.gate_up, out=self.act)),
            ("down_gemm", lambda: aiter.gemm_a16w16(self.act, w["down"], out=self.out)),
        ]

    def prefill_attention(self, s):
        return lambda: aiter.prefill_attention(self.q, self.k, self.v, s.cu_seqlens, causal=True, out=self.attn)

    def decode_attention(self, s):
        return lambda: aiter.paged_decode_attention(self.q, s.k_cache, s.v_cache, s.block_table, s.context_lens,
                                                    workspace=self.workspace, out=self.attn)

    def __call__(self):
        for _, step in self.steps:
            step()
        return self.out, self.resid


# ---- the PyTorch layer ---------------------------------------------------------------------
def torch_rope(x, cos, sin):
    """NeoX rotation of x [T, H, D] in fp32, rounded back to x's dtype."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


class TorchLayer:
    """The same layer in plain PyTorch; each op goes through `op` so that one
    recorded run gives every op's inputs for the per-op table."""

    def __init__(self, c, w, s, cos_sin):
        self.c, self.w, self.s, self.cos_sin = c, w, s, cos_sin
        self.record = None  # a list while recording: (name, fn, args)
        self.batch_index = torch.arange(s.seqs, device=s.x.device)

    def op(self, name, fn, *args):
        if self.record is not None:
            self.record.append((name, fn, args))
        return fn(*args)

    def forward(self, x):
        c, w = self.c, self.w
        t, hq, hkv, d = x.shape[0], c["heads"], c["kv_heads"], c["head_dim"]
        h = self.op("rmsnorm", F.rms_norm, x, (c["hidden"],), w["ln1"], c["eps"])
        qkv = self.op("qkv_gemm", F.linear, h, w["qkv"]).view(t, hq + 2 * hkv, d)
        q, k = self.op("rope", self.rope, qkv[:, :hq], qkv[:, hq:hq + hkv])
        v = qkv[:, hq + hkv:]
        self.op("kv_write", self.write_kv, k, v)
        attn = self.op("attention", self.attend, q)
        o = self.op("o_gemm", F.linear, attn, w["o"])
        h2, resid = self.op("add_rmsnorm", self.add_rmsnorm, o, x)
        gate_up = self.op("gate_up_gemm", F.linear, h2, w["gate_up"])
        act = self.op("silu_and_mul", self.silu_and_mul, gate_up)
        return self.op("down_gemm", F.linear, act, w["down"]), resid

    def rope(self, q, k):
        half = self.c["head_dim"] // 2
        cs = self.cos_sin[self.s.positions]
        cos, sin = cs[:, None, :half], cs[:, None, half:]
        return torch_rope(q, cos, sin), torch_rope(k, cos, sin)

    def write_kv(self, k, v):
        s = self.s
        if s.phase == "prefill":  # the whole context is new: [B*S, Hkv, D] -> [B, Hkv, S, D]
            s.k_contig.copy_(k.view(s.seqs, s.context, *k.shape[1:]).transpose(1, 2))
            s.v_contig.copy_(v.view(s.seqs, s.context, *v.shape[1:]).transpose(1, 2))
        else:  # one new token a sequence, at its last position
            s.k_contig[self.batch_index, :, s.positions] = k
            s.v_contig[self.batch_index, :, s.positions] = v

    def attend(self, q):
        s, hq, d = self.s, self.c["heads"], self.c["head_dim"]
        new = q.shape[0] // s.seqs
        qs = q.view(s.seqs, new, hq, d).transpose(1, 2)
        out = F.scaled_dot_product_attention(qs, s.k_contig, s.v_contig, is_causal=s.phase == "prefill",
                                             enable_gqa=True)
        return out.transpose(1, 2).reshape(q.shape[0], hq * d)

    def add_rmsnorm(self, o, x):
        resid = o + x
        return F.rms_norm(resid, (self.c["hidden"],), self.w["ln2"], self.c["eps"]), resid

    @staticmethod
    def silu_and_mul(x):
        half = x.shape[-1] // 2
        return F.silu(x[:, :half]) * x[:, half:]


# ---- timing --------------------------------------------------------------------------------
class Timer:
    """Medians: triton.testing.do_bench on a GPU (L2 flushed), perf_counter on the CPU."""

    def __init__(self, dev, warmup, rep):
        self.dev, self.warmup, self.rep = dev, warmup, rep

    def __call__(self, fn):
        if self.dev == "cuda":
            import triton.testing
            return triton.testing.do_bench(fn, warmup=self.warmup, rep=self.rep, return_mode="median")
        return self.cpu_median(fn)

    def cpu_median(self, fn):
        end = time.perf_counter() + self.warmup / 1e3
        while time.perf_counter() < end:
            fn()
        times, end = [], time.perf_counter() + self.rep / 1e3
        while time.perf_counter() < end or len(times) < 3:
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)


def graphed(fn, dev):
    """fn captured in a CUDA graph (after warm-up on a side stream, which also
    loads modules and compiles): returns the graph's replay and its outputs."""
    if dev != "cuda":
        return fn, fn()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = fn()
    graph.replay()
    return graph.replay, outputs


def relative_error(got, ref):
    got, ref = got.double(), ref.double()
    return float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))


class Mismatch(Exception):
    """A layer's output is not the eager layer's: the case is not timed."""


def check(ours, eager, what):
    """The layers' two outputs (MLP output, residual) must agree to bf16 precision."""
    errors = [relative_error(a, b) for a, b in zip(ours, eager)]
    finite = all(bool(torch.isfinite(a).all()) for a in ours)
    print(f"  check {what} vs eager: relative error of the mlp out {errors[0]:.2e}, residual {errors[1]:.2e}"
          f" (tolerance {TOLERANCE:.0e})", flush=True)
    if not finite or max(errors) > TOLERANCE:
        raise Mismatch(f"{what} does not match the eager layer (errors {errors}, finite {finite}); not timed")
    return max(errors)


def sdpa_backends(dev):
    """The SDPA back ends to try, in order (None: torch's own choice, on the CPU).
    cuDNN is the peer; flash only if cuDNN cannot run (or be captured) here."""
    return ["cudnn", "flash"] if dev == "cuda" else [None]


def sdpa_backend(name):
    if name is None:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([{"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[name]])


def first_backend_that_runs(dev, what, attempt):
    """attempt(backend) under each back end in turn; returns (backend, result)."""
    for backend in sdpa_backends(dev):
        try:
            with sdpa_backend(backend):
                return backend, attempt(backend)
        except Mismatch:
            raise
        except Exception as e:  # noqa: BLE001 (RuntimeError, or Dynamo's own errors wrapping it)
            print(f"  {what} with SDPA back end {backend} failed: {str(e).splitlines()[0][:160]}", flush=True)
    raise RuntimeError(f"{what}: no SDPA back end ran")


# ---- one case ------------------------------------------------------------------------------
def run_case(name, c, w, cos_sin, dev, timer):
    phase, seqs, context = (TINY_CASES if c is TINY else CASES)[name]
    s = Step(c, phase, seqs, context, dev)
    ours, eager = AiterLayer(c, w, s, cos_sin), TorchLayer(c, w, s, cos_sin)
    graph = phase == "decode" and dev == "cuda"
    row = {"case": name, "phase": phase, "seqs": seqs, "context": context, "tokens": s.tokens, "graph": graph}
    replay = " (graph replay)" if graph else ""
    with torch.no_grad():
        backend, reference = first_backend_that_runs(
            dev, "eager layer", lambda _: [t.clone() for t in eager.forward(s.x)])
        # libaiter against the eager layer; eager's graph and compile's code must still be that layer
        run, outputs = graphed(ours, dev) if graph else (ours, ours())
        row["libaiter_error"] = check(outputs, reference, f"{name}: libaiter{replay}")
        row["libaiter_ms"] = timer(run)
        for who in ("eager", "compile"):
            def attempt(_backend, who=who):
                torch._dynamo.reset()  # a retry under another back end compiles afresh
                layer = eager.forward if who == "eager" else torch.compile(eager.forward, dynamic=False)
                fn = lambda: layer(s.x)  # noqa: E731
                run, outputs = graphed(fn, dev) if graph else (fn, fn())
                error = check(outputs, reference, f"{name}: {who}{replay}")
                return error, timer(run)
            row[f"{who}_sdpa"], (row[f"{who}_error"], row[f"{who}_ms"]) = first_backend_that_runs(dev, who, attempt)
        row["ratio_vs_compile"] = row["compile_ms"] / row["libaiter_ms"]
        row["ratio_vs_eager"] = row["eager_ms"] / row["libaiter_ms"]
        with sdpa_backend(row["eager_sdpa"]):
            row["per_op"] = per_op_times(ours, eager, s, dev, timer, graph)
    return row


def per_op_times(ours, eager, s, dev, timer, graph):
    """Each op of both layers alone (decode: each in its own CUDA graph), in ms."""
    eager.record = []
    eager.forward(s.x)
    recorded, eager.record = eager.record, None
    times = {}
    for (name, fn), (_, torch_fn, args) in zip(ours.steps, recorded):
        times[name] = {}
        for who, call in (("libaiter", fn), ("eager", lambda f=torch_fn, a=args: f(*a))):
            run = graphed(call, dev)[0] if graph else call
            times[name][who] = timer(run)
    if s.phase == "decode":  # the form without a workspace (no split-KV), for comparison; not in the sum
        plain = lambda: aiter.paged_decode_attention(ours.q, s.k_cache, s.v_cache, s.block_table,  # noqa: E731
                                                     s.context_lens, out=ours.attn)
        times[NO_SPLIT] = {"libaiter": timer(graphed(plain, dev)[0] if graph else plain), "eager": float("nan")}
    return times


# ---- bounds --------------------------------------------------------------------------------
def copy_rate(timer):
    """Bytes read + written per ms by a 1 GiB device-to-device copy: the memory ceiling."""
    a = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    return 2 * a.numel() / timer(lambda: b.copy_(a))


def bytes_read(c, w, row):
    """The fewest bytes a decode step must read: every weight once, and each
    sequence's keys and values (activations of a few tokens are left out)."""
    weights = sum(t.numel() * t.element_size() for t in w.values())
    kv = 2 * row["seqs"] * row["context"] * c["kv_heads"] * c["head_dim"] * 2
    return weights + kv


def add_bounds(row, c, w, rate):
    """Decode: the time of the layer's bytes at the run's copy rate, and the
    ratio vs compile a layer at that floor would reach.  Prefill: the sum of the
    faster of libaiter and eager op by op, and compile's time over that."""
    ops = [t for name, t in row["per_op"].items() if name != NO_SPLIT]
    row["best_of_each_op_ms"] = sum(min(t["libaiter"], t["eager"]) for t in ops)
    if row["phase"] == "decode" and rate is not None:
        row["floor_bytes"] = bytes_read(c, w, row)
        row["copy_bytes_per_ms"] = rate
        row["floor_ms"] = row["floor_bytes"] / rate


def show_bounds(r):
    best = r["best_of_each_op_ms"]
    print(f"bound: the faster of libaiter and eager op by op sums to {best:.3f} ms (compile / that = "
          f"{r['compile_ms'] / best:.2f})")
    if "floor_ms" in r:
        print(f"bound: {r['floor_bytes'] / 1e9:.3f} GB of weights and KV at this run's copy rate "
              f"({r['copy_bytes_per_ms'] / 1e9:.2f} TB/s) take {r['floor_ms']:.3f} ms: compile / floor = "
              f"{r['compile_ms'] / r['floor_ms']:.2f} is the most any layer reading at copy speed could show")


# ---- report --------------------------------------------------------------------------------
def git_commit():
    """AITER_GIT_COMMIT when set (a copied tree's .git may be stale), else git describe."""
    if os.environ.get("AITER_GIT_COMMIT"):
        return os.environ["AITER_GIT_COMMIT"]
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["git", "-C", here, "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0:
            return out.stdout.strip()
    except OSError:
        pass
    return "unknown (no git; set AITER_GIT_COMMIT)"


def header(dev):
    gpu = torch.cuda.get_device_name() if dev == "cuda" else "CPU"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{gpu} | torch {torch.__version__} | {stamp} | libaiter commit {git_commit()}"


def dev_is_cuda(row):
    return row["eager_sdpa"] is not None


def describe(row):
    if row["phase"] == "prefill":
        return f"prefill {row['seqs']}x{row['context']}"
    return f"decode B{row['seqs']} ctx{row['context']}{' (graph)' if row['graph'] else ''}"


def show(rows):
    print(f"\n{'case':<26}{'libaiter ms':>12}{'eager ms':>10}{'compile ms':>12}{'compile/libaiter':>18}"
          f"{'eager/libaiter':>16}")
    for r in rows:
        print(f"{describe(r):<26}{r['libaiter_ms']:>12.3f}{r['eager_ms']:>10.3f}{r['compile_ms']:>12.3f}"
              f"{r['ratio_vs_compile']:>18.2f}{r['eager_ms'] / r['libaiter_ms']:>16.2f}")
    print("(target of issue 31: compile/libaiter >= 1.1 in every case)")
    for r in rows:
        if dev_is_cuda(r) and (r["eager_sdpa"], r["compile_sdpa"]) != ("cudnn", "cudnn"):
            print(f"note: {describe(r)}: SDPA back end eager {r['eager_sdpa']}, compile {r['compile_sdpa']}")
    for r in rows:
        print(f"\nper op, {describe(r)} (each op alone; ms)\n{'op':<14}{'libaiter':>10}{'eager':>10}{'% of ours':>11}")
        ops = {name: t for name, t in r["per_op"].items() if name != NO_SPLIT}
        total, eager_total = (sum(t[who] for t in ops.values()) for who in ("libaiter", "eager"))
        for name, t in ops.items():
            print(f"{name:<14}{t['libaiter']:>10.4f}{t['eager']:>10.4f}{100 * t['libaiter'] / total:>10.1f}%")
        print(f"{'sum':<14}{total:>10.4f}{eager_total:>10.4f}")
        if NO_SPLIT in r["per_op"]:
            print(f"{NO_SPLIT}: libaiter {r['per_op'][NO_SPLIT]['libaiter']:.4f} ms")
        show_bounds(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--warmup", type=float, default=25, help="warm-up of each timing, ms")
    ap.add_argument("--rep", type=float, default=100, help="timed repetitions of each timing, ms")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a tiny layer (for a run without a GPU)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    cases = args.cases.split(",")
    unknown = [n for n in cases if n not in CASES]
    if unknown:
        ap.error(f"--cases: unknown {', '.join(unknown)} (known: {', '.join(CASES)})")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: torch sees no CUDA GPU (use --device cpu --tiny)")
    torch._dynamo.config.cache_size_limit = 64  # one static-shape compile a case
    torch.manual_seed(0)
    c = TINY if args.tiny else LLAMA3_8B
    print(header(args.device), flush=True)
    print(f"layer: hidden {c['hidden']}, heads {c['heads']}/{c['kv_heads']} x {c['head_dim']}, intermediate "
          f"{c['intermediate']}, bf16, page {c['page']}; do_bench warmup {args.warmup} ms, rep {args.rep} ms",
          flush=True)
    w = make_weights(c, args.device)
    max_context = max((TINY_CASES if args.tiny else CASES)[n][2] for n in cases)
    cos_sin = cos_sin_cache(c, max_context, args.device)
    timer = Timer(args.device, args.warmup, args.rep)
    rate = copy_rate(timer) if args.device == "cuda" else None
    rows, failed = [], []
    for name in cases:
        try:
            rows.append(run_case(name, c, w, cos_sin, args.device, timer))
            add_bounds(rows[-1], c, w, rate)
        except Mismatch as e:
            failed.append(name)
            print(f"bench_layer: {e}", file=sys.stderr, flush=True)
        if args.device == "cuda":
            torch.cuda.empty_cache()
    show(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header(args.device), "rows": rows, "failed": failed}, f, indent=1)
    if failed:
        sys.exit(f"bench_layer: not timed, the layers disagree: {', '.join(failed)}")


if __name__ == "__main__":
    main()
