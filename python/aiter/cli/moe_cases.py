"""The fused MoE as a tuning problem: one layer, T tokens each routed to k of E
experts, hidden size H, intermediate size I, in bf16/fp16 (``fused_moe``) or
with fp8 experts (``fused_moe_fp8`` per channel, ``fused_moe_fp8_blockscale``
in 128 x 128 blocks).  Random inputs on the device of the run, the op's call,
and a float64 reference over the experts the tokens route to, computed on that
device (NumPy on the CPU, PyTorch on a GPU).

Table key (configs/README.md): batch = E, m = T (bucketed), n = I, k = H, topk,
a_dtype = the experts' dtype, out_dtype = x's."""
import math
from typing import NamedTuple

import numpy as np

import aiter
from ..errors import InvalidArgumentError

OPS = ("fused_moe", "fused_moe_fp8", "fused_moe_fp8_blockscale")

# (E, k, H, I) of each model's MoE layers.
MODELS = {
    "mixtral-8x7b": (8, 2, 4096, 14336),
    "qwen3-30b-a3b": (128, 8, 2048, 768),
    "deepseek-v3": (256, 8, 7168, 2048),
}
DEFAULT_MODEL = {"fused_moe": "qwen3-30b-a3b", "fused_moe_fp8": "qwen3-30b-a3b",
                 "fused_moe_fp8_blockscale": "deepseek-v3"}
X_DTYPES = ("bfloat16", "float16")
FP8_DTYPES = ("float8_e4m3fn", "float8_e4m3fnuz")
BLOCK = 128

QMAX = {"float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0}

# Largest error accepted, relative to the largest |reference| element.  The
# reference rounds where the layer does (the intermediate to x's dtype; for fp8
# each stage's input row quantized with its own scale) but sums in float64, and
# its fp8 roundings may fall on the other side of a tie; a wrong kernel misses
# by far more.  fp8: the largest error grows with T (more elements, more ties
# of the requantized h); on the H100 sweep of 2026-11-27 four per-channel
# shapes (Qwen3 T 256, 1024, 4096; Mixtral T 2048) gave 0.030-0.038 in every
# variant alike, the portable stages too, so 3e-2 left them without a row.
TOLERANCE = {"bfloat16": 3e-2, "float16": 1e-2, "fp8": 5e-2}


class MoeProblem(NamedTuple):
    op: str
    batch: int  # E, the experts
    m: int  # T, the tokens
    n: int  # I, the intermediate size
    k: int  # H, the hidden size
    a_dtype: str  # the experts' weights
    out_dtype: str  # x and out
    topk: int

    def label(self):
        return f"T={self.m} E={self.batch} k={self.topk} H={self.k} I={self.n} {self.a_dtype}->{self.out_dtype}"

    def flops(self):
        return 6.0 * self.m * self.topk * self.k * self.n  # stage 1 (2I x H) and stage 2 (H x I) per pair

    def fp8(self):
        return self.op != "fused_moe"


def is_moe(op):
    return op in OPS


def check_problem(p):
    """Refuses sizes the op cannot take, naming the option or row at fault."""
    if p.fp8() and p.a_dtype not in FP8_DTYPES:
        raise InvalidArgumentError(f"{p.op}: expert dtype {p.a_dtype} (expected {', '.join(FP8_DTYPES)})")
    if not p.fp8() and p.a_dtype != p.out_dtype:
        raise InvalidArgumentError(f"fused_moe: the experts' dtype ({p.a_dtype}) must be x's ({p.out_dtype})")
    if p.out_dtype not in X_DTYPES:
        raise InvalidArgumentError(f"{p.op}: x dtype {p.out_dtype} (expected {', '.join(X_DTYPES)})")
    if p.topk > p.batch:
        raise InvalidArgumentError(f"{p.op}: topk {p.topk} exceeds the {p.batch} experts")
    if p.op == "fused_moe_fp8_blockscale" and (p.k % BLOCK or p.n % BLOCK):
        raise InvalidArgumentError(f"{p.op}: H {p.k} and I {p.n} must be multiples of {BLOCK}")
    return p


def preset_problems(op, models, ms, dtypes, out_dtype=None):
    """Every model's layer x every token count; dtypes: the x dtype for fused_moe
    (default bfloat16), the experts' fp8 dtype for the fp8 ops (default e4m3fn)."""
    wanted = X_DTYPES if op == "fused_moe" else FP8_DTYPES
    a_dtypes = [d for d in dtypes if d in wanted] if dtypes else [wanted[0]]
    problems = []
    for model in models or [DEFAULT_MODEL[op]]:
        if model not in MODELS:
            raise InvalidArgumentError(f"--model: unknown MoE model {model!r} (expected {', '.join(MODELS)})")
        experts, topk, hidden, inter = MODELS[model]
        for a_dtype in a_dtypes:
            x_dtype = a_dtype if op == "fused_moe" else (out_dtype or "bfloat16")
            problems += [check_problem(MoeProblem(op, experts, t, inter, hidden, a_dtype, x_dtype, topk))
                         for t in ms]
    return problems


def problem_from_row(row):
    """An untuned CSV row (op, batch, m, n, k, a_dtype, out_dtype, topk) as a problem."""
    topk = int(row.get("topk") or 0)
    if topk < 1:
        raise ValueError(f"{row['op']}: expected a topk column of 1 or more, got {row.get('topk')!r}")
    return check_problem(MoeProblem(row["op"], int(row["batch"]), int(row["m"]), int(row["n"]), int(row["k"]),
                                    row["a_dtype"], row["out_dtype"], topk))


class _Backend:
    """The few array operations the reference needs, from NumPy or PyTorch."""

    def __init__(self, arrays):
        self.arrays = arrays
        self.torch = getattr(arrays, "torch", None)
        if self.torch is None and not hasattr(arrays, "rng"):
            raise InvalidArgumentError("the fused MoE tuner needs NumPy (CPU) or PyTorch (GPU) arrays")

    def from_host(self, a):
        return a if self.torch is None else self.torch.from_numpy(a).to(self.arrays.device)

    def empty_bytes(self, n):
        if self.torch is None:
            return np.empty(n, np.uint8)
        return self.torch.empty(n, dtype=self.torch.uint8, device=self.arrays.device)

    def experts_randn(self, shape, dtype, scale=1.0):
        """arrays.randn of [E, rows, cols], one expert at a time: the float32
        temporaries of a whole DeepSeek-V3 layer at once (30 GB for w1) would
        not fit beside the cold input sets on an 80 GB GPU."""
        first = self.arrays.randn(shape[1:], dtype, scale=scale)
        if self.torch is None:
            out = np.empty(shape, first.dtype)
        else:
            out = self.torch.empty(shape, dtype=first.dtype, device=self.arrays.device)
        out[0] = first
        for e in range(1, shape[0]):
            out[e] = self.arrays.randn(shape[1:], dtype, scale=scale)
        return out

    def zeros_like(self, a):
        return np.zeros_like(a) if self.torch is None else self.torch.zeros_like(a)

    def exp(self, a):
        return np.exp(a) if self.torch is None else self.torch.exp(a)

    def rounded(self, a, dtype):
        """float64 `a` rounded to `dtype` (bfloat16, float16, fp8), as float64."""
        if self.torch is None:
            return a.astype(self.arrays._dtype(dtype)).astype(np.float64)
        return a.to(self.arrays._dtype(dtype)).to(self.torch.float64)

    def f32(self, a):
        return a.astype(np.float32) if self.torch is None else a.to(self.torch.float32)

    def group_amax(self, a):
        """max |a| over the last axis of a 3-dim array, kept as an axis of 1."""
        if self.torch is None:
            return np.abs(a).max(axis=2, keepdims=True)
        return a.abs().amax(dim=2, keepdim=True)

    def add_rows(self, out, rows, values):
        if self.torch is None:
            np.add.at(out, rows, values)
        else:
            out.index_add_(0, rows, values)


def _routing(rng, tokens, experts, topk):
    """k distinct experts a token, uniformly at random, and their weights."""
    ids = np.argsort(rng.random((tokens, experts)), axis=1)[:, :topk].astype(np.int32)
    return ids, rng.uniform(0.1, 1.0, (tokens, topk)).astype(np.float32)


def _fp8_experts(arrays, p, rows, cols):
    """Codes about N(0, 1) and scales that bring the products to about 1 / sqrt(cols)."""
    codes = _Backend(arrays).experts_randn((p.batch, rows, cols), p.a_dtype)
    unit = 1.0 / math.sqrt(cols)
    shape = (p.batch, rows // BLOCK, cols // BLOCK) if p.op == "fused_moe_fp8_blockscale" else (p.batch, rows)
    return codes, arrays.uniform(shape, 0.5 * unit, 1.5 * unit)


def make_inputs(p, arrays, rng):
    """The op's positional inputs: x, w1, w2, [w1_scale, w2_scale,] weights, ids."""
    be = _Backend(arrays)
    x = arrays.randn((p.m, p.k), p.out_dtype)
    ids, weights = _routing(rng, p.m, p.batch, p.topk)
    routing = (be.from_host(weights), be.from_host(ids))
    if not p.fp8():
        w1 = be.experts_randn((p.batch, 2 * p.n, p.k), p.a_dtype, scale=1.0 / math.sqrt(p.k))
        w2 = be.experts_randn((p.batch, p.k, p.n), p.a_dtype, scale=1.0 / math.sqrt(p.n))
        return (x, w1, w2) + routing
    w1, s1 = _fp8_experts(arrays, p, 2 * p.n, p.k)
    w2, s2 = _fp8_experts(arrays, p, p.k, p.n)
    return (x, w1, w2, s1, s2) + routing


def _dequantized(arrays, w, s, e, block):
    """Expert e's weights as float64 values: codes times their channel or block scales."""
    w64, s64 = arrays.f64(w[e]), arrays.f64(s[e])
    if block:
        s64 = arrays.repeat(arrays.repeat(s64, BLOCK, 0), BLOCK, 1)
        return w64 * s64
    return w64 * s64[:, None]


def _quantized(be, rows, qdtype, group):
    """Each row (each `group` values of it; 0: whole rows) quantized as the
    library does, in fp32: scale = amax / qmax, code = fp8(value * (1 / scale));
    returned as the codes' values times the scale, float64."""
    n, length = rows.shape
    parts = be.f32(rows.reshape(n, length // (group or length), -1))
    scale = be.group_amax(parts) / QMAX[qdtype]
    scale[scale == 0] = 1.0
    codes = be.rounded(parts * (1.0 / scale), qdtype)
    return (codes * scale).reshape(n, length)


def reference(p, inputs, arrays):
    """float64 out[t] = sum_j w[t, j] * w2_e h_e(x_t), h_e(x) = silu(w1_gate_e x) *
    (w1_up_e x) rounded to x's dtype; fp8: x and h quantized per row (block-scaled:
    per 128 values) first.  One expert at a time, only those some token routes to."""
    be = _Backend(arrays)
    x, weights, ids = inputs[0], inputs[-2], inputs[-1]
    ids_host = ids if be.torch is None else ids.cpu().numpy()
    x64, w64 = arrays.f64(x), arrays.f64(weights)
    out = be.zeros_like(x64)
    tokens, slots = np.nonzero(np.ones(ids_host.shape, bool))
    experts = ids_host[tokens, slots]
    for e in np.unique(experts):
        sel = experts == e
        t, j = be.from_host(tokens[sel]), be.from_host(slots[sel])
        if p.fp8():
            s1, s2 = inputs[3], inputs[4]
            block = p.op == "fused_moe_fp8_blockscale"
            w1, w2 = _dequantized(arrays, inputs[1], s1, e, block), _dequantized(arrays, inputs[2], s2, e, block)
        else:
            w1, w2 = arrays.f64(inputs[1][e]), arrays.f64(inputs[2][e])
        group = BLOCK if p.op == "fused_moe_fp8_blockscale" else 0
        rows = _quantized(be, x64[t], p.a_dtype, group) if p.fp8() else x64[t]
        gate, up = rows @ arrays.mT(w1[:p.n]), rows @ arrays.mT(w1[p.n:])
        h = be.rounded(gate / (1.0 + be.exp(-gate)) * up, p.out_dtype)
        if p.fp8():
            h = _quantized(be, h, p.a_dtype, group)
        be.add_rows(out, t, (h @ arrays.mT(w2)) * w64[t, j][:, None])
    return out


class MoeCase:
    """A MoE problem's inputs, workspace and output on the device of `arrays`,
    with the interface of gemm_cases.Case."""

    def __init__(self, problem, arrays, seed=0):
        self.problem, self.arrays = problem, arrays
        self.rng = np.random.default_rng(seed)
        p = problem
        self.fn = aiter.fused_moe_fp8 if p.fp8() else aiter.fused_moe
        size = aiter.fused_moe_workspace_size(p.m, p.topk, p.batch, p.k, p.n, elem_bytes=1 if p.fp8() else 2)
        self.workspace = _Backend(arrays).empty_bytes(size)
        self.tolerance = TOLERANCE["fp8" if p.fp8() else p.out_dtype]
        self.inputs, self.out = self._fresh_set()
        self._cold_sets, self._turn = None, 0

    def _fresh_set(self):
        p = self.problem
        return make_inputs(p, self.arrays, self.rng), self.arrays.nan_filled((p.m, p.k), p.out_dtype)

    def _call(self, inputs, out):
        self.fn(*inputs, workspace=self.workspace, out=out)

    def run(self):
        self._call(self.inputs, self.out)

    def run_cold(self):
        """As gemm_cases.Case.run_cold: enough input sets to overflow the cache
        three times over (at least two), so the experts come from memory."""
        if self._cold_sets is None:
            cache = self.arrays.cache_bytes
            per_set = sum(a.nbytes for a in self.inputs) + self.out.nbytes
            count = 1 if cache == 0 else max(2, min(24, math.ceil(3 * cache / per_set)))
            self._cold_sets = [(self.inputs, self.out)] + [self._fresh_set() for _ in range(count - 1)]
        inputs, out = self._cold_sets[self._turn % len(self._cold_sets)]
        self._turn += 1
        self._call(inputs, out)

    def reference(self):
        return reference(self.problem, self.inputs, self.arrays)

    def error(self, ref):
        """max |out - reference| / max |reference|; inf when out has NaN (unwritten) or Inf."""
        arrays = self.arrays
        err = arrays.max_abs(arrays.f64(self.out) - ref) / max(arrays.max_abs(ref), 1e-30)
        return err if math.isfinite(err) else math.inf

    def poison(self):
        self.out = self.arrays.nan_filled((self.problem.m, self.problem.k), self.problem.out_dtype)
