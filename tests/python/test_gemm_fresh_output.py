"""CPU GEMMs writing into pages the process never touched (cpu/gemm_populate.cpp
maps them before the kernels write, where the output is contiguous and at
least 128 KB): outputs in fresh anonymous mmap memory, wholly, partly (every
third page already written with NaN, so some runs of pages are mapped and some
are not) and as a row-strided view whose gaps must stay untouched; a batch;
every CPU variant.  Against float64 NumPy."""
import mmap

import numpy as np
import pytest

import aiter
from gemm_helpers import CPU_VARIANTS, FLOAT_OP_VARIANTS, check, forced, reference
from harness import rand

PAGE = mmap.PAGESIZE


def fresh(shape, dtype=np.float32, offset=0):
    """An array in memory no one has touched: anonymous mmap pages, `offset`
    bytes in (the mapping stays alive through the array's base)."""
    count = int(np.prod(shape))
    buf = mmap.mmap(-1, offset + count * np.dtype(dtype).itemsize + PAGE)
    return np.frombuffer(buf, dtype, count, offset).reshape(shape)


@pytest.mark.parametrize("variant", FLOAT_OP_VARIANTS)
@pytest.mark.parametrize("touched", ["none", "every third page"])
def test_a16w16_into_fresh_pages(rng, variant, touched):
    m, n, k = 150, 1000, 40  # 600 KB of fp32, starting 12 bytes into a page
    a, w = rand(rng, (m, k), "float32"), rand(rng, (n, k), "float32")
    out = fresh((m, n), offset=12)
    if touched != "none":
        flat = out.reshape(-1)
        flat[::3 * PAGE // 4] = np.nan  # one element in every third page
    with forced("gemm_a16w16", variant):
        aiter.gemm_a16w16(a, w, out=out)
    check(out, reference(a, w), "float32", k)


@pytest.mark.parametrize("variant", CPU_VARIANTS)
def test_a8w8_bf16_out_into_fresh_pages(rng, variant):
    m, n, k = 40, 2000, 64  # 160 KB of bf16
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    one = np.ones((1,), np.float32)
    out32 = fresh((m, n))
    with forced("gemm_a8w8", variant):
        aiter.gemm_a8w8(a, w, one, one, out_dtype="float32", out=out32)
    np.testing.assert_array_equal(out32, a.astype(np.int64) @ w.astype(np.int64).T)


def test_row_strided_output_leaves_its_gaps(rng):
    # Rows 1000 floats apart, 900 written: not contiguous, so nothing is
    # populated; the gaps must still read as the mapping's zeros.
    m, n, k = 200, 900, 30
    a, w = rand(rng, (m, k), "float32"), rand(rng, (n, k), "float32")
    big = fresh((m, 1000))
    out = big[:, 50:50 + n]
    aiter.gemm_a16w16(a, w, out=out)
    check(out, reference(a, w), "float32", k)
    assert not big[:, :50].any() and not big[:, 50 + n:].any()


def test_batched_into_fresh_pages(rng):
    b, m, n, k = 3, 60, 700, 50  # 3 x 164 KB
    a, w = rand(rng, (b, m, k), "float32"), rand(rng, (b, n, k), "float32")
    out = fresh((b, m, n), offset=4)
    aiter.batched_gemm_a16w16(a, w, out=out)
    for i in range(b):
        check(out[i], reference(a[i], w[i]), "float32", k)
