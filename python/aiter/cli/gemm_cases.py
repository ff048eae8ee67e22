"""One GEMM problem made runnable: inputs of each op (a16w16, a8w8,
a8w8_blockscale, batched_a16w16, batched_a8w8) drawn at random in the problem's
dtypes, the op's call, and its float64 reference computed from the same
quantized inputs."""
import math
from typing import NamedTuple

import aiter

SCALE_BLOCK = 128  # gemm_a8w8_blockscale: one scale per 128 K values (and 128 x 128 of W)

# Largest error accepted, relative to the largest |reference| element: a few
# roundings to the output dtype plus fp32 accumulation over long K.
TOLERANCE = {"float32": 1e-4, "float16": 2e-3, "bfloat16": 1.6e-2}


class Problem(NamedTuple):
    op: str  # the C op name: gemm_a16w16, ...
    batch: int
    m: int
    n: int
    k: int
    a_dtype: str
    out_dtype: str

    def label(self):
        batch = f"B={self.batch} " if self.op.startswith("batched") else ""
        return f"{batch}M={self.m} N={self.n} K={self.k} {self.a_dtype}->{self.out_dtype}"

    def flops(self):
        return 2.0 * self.batch * self.m * self.n * self.k


def _lead(p):
    return (p.batch,) if p.op.startswith("batched") else ()


def _eight_bit(arrays, shape, dtype):
    return arrays.randint8(shape) if dtype == "int8" else arrays.randn(shape, dtype)


def _unit(dtype):
    """Scale that brings 8-bit values to about 1."""
    return 1.0 / 127 if dtype == "int8" else 1.0


def _inputs_16bit(p, arrays):
    lead = _lead(p)
    a = arrays.randn(lead + (p.m, p.k), p.a_dtype)
    w = arrays.randn(lead + (p.n, p.k), p.a_dtype, scale=1.0 / math.sqrt(p.k))
    return (a, w)


def _inputs_8bit(p, arrays):
    lead, unit = _lead(p), _unit(p.a_dtype)
    a = _eight_bit(arrays, lead + (p.m, p.k), p.a_dtype)
    w = _eight_bit(arrays, lead + (p.n, p.k), p.a_dtype)
    a_scale = arrays.uniform(lead + (p.m, 1), 0.5 * unit, 1.5 * unit)
    w_scale = arrays.uniform(lead + (1, p.n), 0.5 * unit / math.sqrt(p.k), 1.5 * unit / math.sqrt(p.k))
    return (a, w, a_scale, w_scale)


def _inputs_blockscale(p, arrays):
    kb, nb = -(-p.k // SCALE_BLOCK), -(-p.n // SCALE_BLOCK)
    a = _eight_bit(arrays, (p.m, p.k), p.a_dtype)
    w = _eight_bit(arrays, (p.n, p.k), p.a_dtype)
    a_scale = arrays.uniform((p.m, kb), 0.5, 1.5)
    w_scale = arrays.uniform((nb, kb), 0.5 / math.sqrt(p.k), 1.5 / math.sqrt(p.k))
    return (a, w, a_scale, w_scale)


def _reference_16bit(x, arrays):
    a, w = x
    return arrays.f64(a) @ arrays.mT(arrays.f64(w))


def _reference_8bit(x, arrays):
    a, w, a_scale, w_scale = x
    return (arrays.f64(a) @ arrays.mT(arrays.f64(w))) * arrays.f64(a_scale) * arrays.f64(w_scale)


def _reference_blockscale(x, arrays):
    a, w, a_scale, w_scale = x
    n, k = w.shape
    a_scales = arrays.repeat(arrays.f64(a_scale), SCALE_BLOCK, 1)[:, :k]
    w_scales = arrays.repeat(arrays.repeat(arrays.f64(w_scale), SCALE_BLOCK, 0), SCALE_BLOCK, 1)[:n, :k]
    return (arrays.f64(a) * a_scales) @ arrays.mT(arrays.f64(w) * w_scales)


class OpSpec(NamedTuple):
    make_inputs: object  # (problem, arrays) -> tuple of the op's positional inputs
    reference: object  # (inputs, arrays) -> float64 result
    a_dtypes: tuple  # input dtypes the op takes


_FLOATS = ("bfloat16", "float16", "float32")
_EIGHT_BIT = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "int8")
SPECS = {
    "gemm_a16w16": OpSpec(_inputs_16bit, _reference_16bit, _FLOATS),
    "gemm_a8w8": OpSpec(_inputs_8bit, _reference_8bit, _EIGHT_BIT),
    "gemm_a8w8_blockscale": OpSpec(_inputs_blockscale, _reference_blockscale, _EIGHT_BIT[:3]),
    "batched_gemm_a16w16": OpSpec(_inputs_16bit, _reference_16bit, _FLOATS),
    "batched_gemm_a8w8": OpSpec(_inputs_8bit, _reference_8bit, _EIGHT_BIT),
}


def op_function(op):
    """The aiter wrapper of `op`, or None when this aiter has none."""
    if op.startswith("fused_moe_fp8"):
        op = "fused_moe_fp8"  # per-channel and block-scaled: one function
    return getattr(aiter, op, None)


def make_case(problem, arrays):
    """A runnable case of a GEMM or fused MoE problem."""
    if problem.op.startswith("fused_moe"):
        from .moe_cases import MoeCase
        return MoeCase(problem, arrays)
    return Case(problem, arrays)


def _nbytes(arrays):
    return sum(x.nbytes for x in arrays if x is not None)


class Case:
    """A problem's inputs and preallocated output on the device of `arrays`."""

    def __init__(self, problem, arrays):
        self.problem, self.arrays = problem, arrays
        self.fn = op_function(problem.op)
        self.tolerance = TOLERANCE[problem.out_dtype]
        self.inputs, self.out = self._fresh_set()
        self._cold_sets, self._turn = None, 0

    def _fresh_set(self):
        p = self.problem
        return SPECS[p.op].make_inputs(p, self.arrays), self.arrays.nan_filled(_lead(p) + (p.m, p.n), p.out_dtype)

    def run(self):
        self.fn(*self.inputs, out=self.out)

    def run_cold(self):
        """One call on the next of enough sets of inputs and outputs to overflow
        the device's cache three times over, so that every call reads its
        weights from memory, as each layer of a model does.  (Timed on one set,
        a weight under the 50 MB of an H100's L2 stays there, and the tuner
        picked tiles that lose once it does not.)"""
        if self._cold_sets is None:
            cache = self.arrays.cache_bytes
            per_set = _nbytes(self.inputs) + self.out.nbytes
            count = 1 if cache == 0 else max(2, min(24, math.ceil(3 * cache / per_set)))
            self._cold_sets = [(self.inputs, self.out)] + [self._fresh_set() for _ in range(count - 1)]
        inputs, out = self._cold_sets[self._turn % len(self._cold_sets)]
        self._turn += 1
        self.fn(*inputs, out=out)

    def reference(self):
        return SPECS[self.problem.op].reference(self.inputs, self.arrays)

    def error(self, reference):
        """max |out - reference| / max |reference|; inf when out has NaN (unwritten) or Inf."""
        arrays = self.arrays
        err = arrays.max_abs(arrays.f64(self.out) - reference) / max(arrays.max_abs(reference), 1e-30)
        return err if math.isfinite(err) else math.inf

    def poison(self):
        """Refills the output with NaN, so that a check sees what the next run writes."""
        self.out = self.arrays.nan_filled(tuple(self.out.shape), self.problem.out_dtype)
