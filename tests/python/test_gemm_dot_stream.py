"""cpu.avx512's dot-product form (M <= 16) on runs of W rows long enough that
its prefetch requests sweep ahead of the reads (cpu/gemm_avx512.cpp,
kDotAheadBytes = 32 KB: a thread's run of rows must be longer than that), and
stop at the end of each thread's run: bf16, int8 and fp8 W, one and several
4-row groups of A (fp8 with several groups decodes W once per block and asks
for the rows ahead itself), padded row strides, a batch whose runs cross from
one matrix to the next.  Against float64 NumPy, into NaN-filled outputs; at
avx512 (int8 on vpmaddwd) and avx512_bf16 (every dot kernel), each in its own
process.  test_gemm.py's shapes are too small to reach the sweep."""
import pytest

from gemm_helpers import run_at_isa_level

# Rows of 1040 B (bf16, K 520) or 520 B (int8, fp8): with 2 threads (set
# before the library reads it) 1003 rows are 7 runs of 6 strips of 24 rows
# (parallel_for's 4 chunks a thread), 150 or 75 KB each, so every run has
# rows with requests ahead and rows without.
DOT_STREAM_SCRIPT = """
import os, sys
os.environ["AITER_NUM_THREADS"] = "2"
sys.path.insert(0, sys.argv[1])
import ml_dtypes
import numpy as np
import aiter
from gemm_helpers import check, cpu_isa, forced, rand_int8, reference
from harness import poisoned, rand
assert cpu_isa() == sys.argv[2], (cpu_isa(), sys.argv[2])
rng = np.random.default_rng(int(sys.argv[4]))
one = np.ones((1,), np.float32)
n, k = 1003, 520

def a16w16(m, pad=0, batch=None):
    lead = () if batch is None else (batch,)
    a = rand(rng, lead + (m, k), "bfloat16")
    w = rand(rng, lead + (n, k + pad), "bfloat16")[..., pad:]
    out = poisoned(lead + (m, n), "float32")
    op = "gemm_a16w16" if batch is None else "batched_gemm_a16w16"
    with forced(op, "cpu.avx512"):
        getattr(aiter, op)(a, w, out=out)
    ref = reference(a, w) if batch is None else np.stack([reference(a[b], w[b]) for b in range(batch)])
    check(out, ref, "float32", k)

def a8w8(m, dtype):
    a, w = rand_int8(rng, (m, k)), rand_int8(rng, (n, k))
    if dtype != "int8":
        a, w = (a / 16).astype(getattr(ml_dtypes, dtype)), (w / 16).astype(getattr(ml_dtypes, dtype))
    out = poisoned((m, n), "float32")
    with forced("gemm_a8w8", "cpu.avx512"):
        aiter.gemm_a8w8(a, w, one, one, out_dtype="float32", out=out)
    if dtype == "int8":  # exact int32 sums
        np.testing.assert_array_equal(out, a.astype(np.int64) @ w.astype(np.int64).T)
    else:
        check(out, reference(a, w), "float32", k)

dtypes = sys.argv[3].split(",")
for m in (1, 4, 7, 16):
    a8w8(m, "int8")
    if "bfloat16" in dtypes:
        a16w16(m)
        a8w8(m, "float8_e4m3fn")
a8w8(12, "int8")
if "bfloat16" in dtypes:
    a16w16(4, pad=24)   # rows 1088 B apart, 1040 used
    a16w16(5, batch=3)  # runs that end in the next matrix
print("ok")
"""


@pytest.mark.parametrize("level", ["avx512", "avx512_bf16"])
def test_dot_form_with_requests_ahead(level):
    """avx512: int8 only (bf16 and fp8 take packed fp32 slots there)."""
    pytest.importorskip("ml_dtypes", reason="the child makes bfloat16 and fp8 NumPy arrays")
    dtypes = "int8,bfloat16" if level == "avx512_bf16" else "int8"
    run_at_isa_level(level, DOT_STREAM_SCRIPT, dtypes.split(","))
