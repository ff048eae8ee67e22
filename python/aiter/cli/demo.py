"""python -m aiter demo: one Llama-style decoder layer run with libaiter ops.

RMSNorm -> QKV GEMM -> RoPE -> KV written into a paged cache -> attention
(prefill of a batch of sequences, then decode steps over the paged cache) ->
O-proj GEMM -> add + RMSNorm -> gate/up GEMM -> SiLU-and-mul -> down GEMM.
Every phase is checked against a float64 NumPy version of the same layer
(demo_reference.py), and the time of each op is printed.  On a CUDA GPU (torch
present) every op runs there, on torch tensors; results come back to NumPy only
for the check.
"""
import time
from collections import defaultdict

import numpy as np

import aiter

from .demo_reference import ReferenceLayer

CONFIG = {
    "hidden": 1024, "heads": 16, "kv_heads": 4, "head_dim": 64, "intermediate": 2816,
    "page_size": 16, "prompt_lens": (45, 128, 7, 60), "eps": 1e-5, "rope_base": 10000.0,
}
# Relative error (Frobenius) allowed against float64: intermediates are rounded
# to the dtype between ops, so errors add up over the layer's ~10 ops.
TOLERANCE = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1e-2}


class OpTimer:
    """Calls an op and adds its wall time under a name (GPU ops: synchronized
    before and after, so the time is the op's own)."""

    def __init__(self, sync=lambda: None):
        self.total = defaultdict(float)
        self.calls = defaultdict(int)
        self.sync = sync

    def __call__(self, name, fn, *args, **kwargs):
        self.sync()
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        self.sync()
        self.total[name] += time.perf_counter() - start
        self.calls[name] += 1
        return result

    def table(self):
        lines = [f"  {'op':<24}{'calls':>6}{'total ms':>11}{'per call ms':>13}"]
        for name, seconds in sorted(self.total.items(), key=lambda kv: -kv[1]):
            n = self.calls[name]
            lines.append(f"  {name:<24}{n:>6}{seconds * 1e3:>11.2f}{seconds * 1e3 / n:>13.3f}")
        lines.append(f"  {'all ops':<24}{sum(self.calls.values()):>6}{sum(self.total.values()) * 1e3:>11.2f}")
        return "\n".join(lines)


def make_weights(rng, c, dtype):
    hq, hkv, d, hidden, inter = c["heads"], c["kv_heads"], c["head_dim"], c["hidden"], c["intermediate"]

    def linear(n, k):
        return (rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype)

    return {
        "ln1": (1.0 + 0.1 * rng.standard_normal(hidden)).astype(dtype),
        "qkv": linear((hq + 2 * hkv) * d, hidden),
        "o": linear(hidden, hq * d),
        "ln2": (1.0 + 0.1 * rng.standard_normal(hidden)).astype(dtype),
        "gate_up": linear(2 * inter, hidden),
        "down": linear(hidden, inter),
    }


class Device:
    """Where the layer's arrays live: NumPy for the CPU, torch tensors on a CUDA GPU."""

    def __init__(self, name):
        self.name = name
        if name == "cuda":
            import torch
            self.torch = torch

    def put(self, a):
        if self.name == "cpu":
            return a
        a = np.ascontiguousarray(a)
        if a.dtype.name == "bfloat16":  # torch cannot take ml_dtypes arrays directly
            return self.torch.from_numpy(a.view(np.uint16)).view(self.torch.bfloat16).to("cuda")
        return self.torch.from_numpy(a).to("cuda")

    def host(self, a, dtype):
        if self.name == "cpu":
            return np.asarray(a)
        a = a.detach().cpu()
        if a.dtype == self.torch.bfloat16:
            return a.view(self.torch.uint16).numpy().view(dtype)
        return a.numpy()

    def sync(self):
        if self.name == "cuda":
            self.torch.cuda.synchronize()


def pick_device(requested):
    if requested in ("cpu", "cuda"):
        return requested
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


class PagedCache:
    """A paged KV cache whose blocks are handed out in a shuffled order, so that
    each sequence's blocks are scattered across the cache."""

    def __init__(self, rng, c, dtype, max_len_per_seq, dev):
        self.page = c["page_size"]
        per_seq = -(-max_len_per_seq // self.page)
        n_seq = len(c["prompt_lens"])
        num_blocks = per_seq * n_seq + 3
        shape = (num_blocks, self.page, c["kv_heads"], c["head_dim"])
        self.k = dev.put(np.zeros(shape, dtype))
        self.v = dev.put(np.zeros(shape, dtype))
        self.block_table_host = rng.permutation(num_blocks)[: n_seq * per_seq].reshape(n_seq, per_seq).astype(np.int32)
        self.block_table = dev.put(self.block_table_host)

    def slots(self, seq_ids, positions):
        blocks = self.block_table_host[seq_ids, positions // self.page].astype(np.int64)
        return blocks * self.page + positions % self.page


class AiterLayer:
    def __init__(self, weights, c, cache, timer, dev):
        self.w = {name: dev.put(w) for name, w in weights.items()}
        self.c, self.cache, self.t, self.dev = c, cache, timer, dev
        self.cos_sin = dev.put(aiter.rope_cos_sin_cache(8192, c["head_dim"], c["rope_base"]))

    def forward(self, x, positions, slots, attend):
        c, w, t = self.c, self.w, self.t
        hq, hkv, d = c["heads"], c["kv_heads"], c["head_dim"]
        n = x.shape[0]
        dtype = x.dtype
        x, positions, slots = (self.dev.put(a) for a in (x, positions, slots))
        h = t("rmsnorm", aiter.rmsnorm, x, w["ln1"], c["eps"])
        qkv = t("gemm_a16w16 qkv", aiter.gemm_a16w16, h, w["qkv"]).reshape(n, hq + 2 * hkv, d)
        q, k, v = qkv[:, :hq], qkv[:, hq:hq + hkv], qkv[:, hq + hkv:]  # strided views, no copies
        t("rope", aiter.rope, q, k, positions, self.cos_sin)
        t("reshape_and_cache", aiter.reshape_and_cache, k, v, self.cache.k, self.cache.v, slots)
        attn = attend(q, k, v)
        o = t("gemm_a16w16 o", aiter.gemm_a16w16, attn.reshape(n, hq * d), w["o"])
        h2, resid = t("add_rmsnorm", aiter.add_rmsnorm, o, x, w["ln2"], c["eps"])
        gate_up = t("gemm_a16w16 gate_up", aiter.gemm_a16w16, h2, w["gate_up"])
        act = t("silu_and_mul", aiter.silu_and_mul, gate_up)
        down = t("gemm_a16w16 down", aiter.gemm_a16w16, act, w["down"])
        return self.dev.host(resid, dtype).astype(np.float64) + self.dev.host(down, dtype).astype(np.float64)


def relative_error(got, ref):
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def default_dtype():
    try:
        import ml_dtypes
        return "bfloat16", np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return "float32", np.dtype(np.float32)


def numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def run(dtype=None, decode_steps=4, seed=0, device="auto"):
    name, dt = default_dtype() if dtype is None else (dtype, numpy_dtype(dtype))
    dev = Device(pick_device(device))
    c = CONFIG
    rng = np.random.default_rng(seed)
    lens = np.array(c["prompt_lens"])
    n_seq, total = len(lens), int(lens.sum())
    info = aiter.library_info()
    where = (f"the GPU ({dev.torch.cuda.get_device_name()})" if dev.name == "cuda"
             else f"the CPU ({info['cpu_threads']} threads)")
    print(f"libaiter {aiter.__version__} demo: one Llama-style decoder layer on {where}, {name}")
    print(f"  hidden {c['hidden']}, {c['heads']} query / {c['kv_heads']} kv heads of {c['head_dim']}, "
          f"intermediate {c['intermediate']}, KV page size {c['page_size']}")
    print(f"  prefill of {n_seq} sequences ({', '.join(map(str, lens))} tokens), then {decode_steps} decode steps")

    weights = make_weights(rng, c, dt)
    timer = OpTimer(dev.sync)
    cache = PagedCache(rng, c, dt, int(lens.max()) + decode_steps, dev)
    layer = AiterLayer(weights, c, cache, timer, dev)
    reference = ReferenceLayer(weights, c)

    # Prefill: all prompts packed into one [total, hidden] batch.
    x = rng.standard_normal((total, c["hidden"])).astype(dt)
    seq_of_token = np.repeat(np.arange(n_seq), lens)
    positions = np.concatenate([np.arange(n) for n in lens]).astype(np.int32)
    cu_seqlens = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    cu_seqlens_dev = dev.put(cu_seqlens)
    prefill_out = layer.forward(x, positions, cache.slots(seq_of_token, positions),
                                lambda q, k, v: timer("prefill_attention", aiter.prefill_attention, q, k, v,
                                                      cu_seqlens_dev))
    prefill = (x, positions)

    # Decode: one new token per sequence, attending over its paged history.
    context = lens.copy()
    seqs = np.arange(n_seq)
    steps = []  # (input, positions, output) of each step, checked below
    for step in range(decode_steps):
        x = rng.standard_normal((n_seq, c["hidden"])).astype(dt)
        pos = context.astype(np.int32)
        lens_after = dev.put((context + 1).astype(np.int32))
        out = layer.forward(x, pos, cache.slots(seqs, pos), lambda q, k, v: timer(
            "paged_decode_attention", aiter.paged_decode_attention, q, cache.k, cache.v, cache.block_table,
            lens_after))
        steps.append((x, pos, out))
        context += 1

    # The float64 check runs after the timed steps, not between them: its NumPy
    # matmuls leave OpenBLAS's threads spinning for a while after each call,
    # and a decode step started then would share the CPUs with them.
    x, positions = prefill
    ref = np.concatenate([reference.forward(s, x[cu_seqlens[s]:cu_seqlens[s + 1]].astype(np.float64),
                                            positions[cu_seqlens[s]:cu_seqlens[s + 1]]) for s in range(n_seq)])
    errors = [("prefill", relative_error(prefill_out, ref))]
    for step, (x, pos, out) in enumerate(steps):
        ref = np.concatenate([reference.forward(s, x[s:s + 1].astype(np.float64), pos[s:s + 1]) for s in seqs])
        errors.append((f"decode step {step + 1}", relative_error(out, ref)))

    print(timer.table())
    if dev.name == "cuda":
        print("  (an op's first call also loads its GPU code objects, and the first op the CUDA context:\n"
              "   per-call times above include those one-time costs)")
    tolerance = TOLERANCE[name]
    worst = max(e for _, e in errors)
    print("  check against NumPy float64 (relative error of the layer output):")
    for phase, err in errors:
        print(f"    {phase:<16}{err:.2e}")
    verdict = "PASS" if worst <= tolerance else "FAIL"
    print(f"  {verdict}: worst {worst:.2e}, tolerance {tolerance:.0e} for {name}")
    return 0 if verdict == "PASS" else 1
