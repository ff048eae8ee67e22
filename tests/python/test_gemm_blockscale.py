"""gemm_a8w8_blockscale against float64 NumPy: per K group g of 128 columns,
(a[:, g] @ w[:, g].T) * a_scale[m, g] * w_scale[n // 128, g], summed over groups;
on every CPU kernel variant, a_scale row-major or column-major."""
import numpy as np
import pytest

import aiter
from gemm_helpers import CPU_VARIANTS, check, forced
from harness import FLOAT_DTYPES, f64, np_dtype, poisoned, rand

BLOCK = 128
FP8 = ["float8_e4m3fn", "float8_e4m3fnuz"]


def groups(extent):
    return (extent + BLOCK - 1) // BLOCK


def reference(a, w, a_scale, w_scale):
    n = w.shape[0]
    out = np.zeros((a.shape[0], n))
    for g in range(groups(a.shape[1])):
        cols = slice(g * BLOCK, (g + 1) * BLOCK)
        per_column = np.repeat(f64(w_scale[:, g]), BLOCK)[:n]  # w_scale of block n // 128
        out += (f64(a[:, cols]) @ f64(w[:, cols]).T) * f64(a_scale[:, g])[:, None] * per_column[None, :]
    return out


def inputs(rng, m, n, k, fp8="float8_e4m3fn"):
    """fp8 operands and scales spread over 2^-3 .. 2^3, so that a scale applied to
    the wrong group or block changes the result well beyond the tolerance."""
    a, w = rand(rng, (m, k), fp8, scale=8.0), rand(rng, (n, k), fp8, scale=8.0)
    a_scale = (2.0 ** rng.uniform(-3, 3, (m, groups(k)))).astype(np.float32)
    w_scale = (2.0 ** rng.uniform(-3, 3, (groups(n), groups(k)))).astype(np.float32)
    return a, w, a_scale, w_scale


def magnitude(a, w, a_scale, w_scale):
    """Typical size of one scaled product (the largest scales, to be safe)."""
    return np.std(f64(a)) * np.std(f64(w)) * a_scale.max(initial=1) * w_scale.max(initial=1)


# M, N, K: one row / column, K one short of, at and past a group, N past one
# 128-row block of W, several tiles and K blocks of every variant.
SHAPES = [(1, 1, 1), (1, 130, 300), (3, 7, 127), (4, 129, 128), (5, 20, 129), (40, 257, 700), (100, 33, 1030)]


@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("shape", SHAPES)
def test_blockscale_variants(rng, variant, fp8, shape):
    m, n, k = shape
    a, w, a_scale, w_scale = inputs(rng, m, n, k, fp8)
    out = poisoned((m, n), "float32")
    with forced("gemm_a8w8_blockscale", variant):
        aiter.gemm_a8w8_blockscale(a, w, a_scale, w_scale, out=out)
    check(out, reference(a, w, a_scale, w_scale), "float32", k, magnitude(a, w, a_scale, w_scale))


@pytest.mark.parametrize("out_dtype", FLOAT_DTYPES)
def test_blockscale_out_dtypes(rng, out_dtype):
    m, n, k = 9, 140, 260
    a, w, a_scale, w_scale = inputs(rng, m, n, k)
    a_scale /= 64  # sums reach 1e5: keep fp16 out of overflow
    got = aiter.gemm_a8w8_blockscale(a, w, a_scale, w_scale, out_dtype=out_dtype)
    assert got.dtype == np_dtype(out_dtype) and got.shape == (m, n)
    check(got, reference(a, w, a_scale, w_scale), out_dtype, k, magnitude(a, w, a_scale, w_scale))


def test_blockscale_default_out_is_bfloat16(rng):
    a, w, a_scale, w_scale = inputs(rng, 2, 3, 200)
    got = aiter.gemm_a8w8_blockscale(a, w, a_scale, w_scale)
    assert got.dtype == np_dtype("bfloat16")
    check(got, reference(a, w, a_scale, w_scale), "bfloat16", 200, magnitude(a, w, a_scale, w_scale))


@pytest.mark.parametrize("variant", CPU_VARIANTS)
def test_blockscale_strided_rows(rng, variant):
    m, n, k = 20, 150, 300
    a = rand(rng, (2 * m, k + 16), "float8_e4m3fn", scale=8.0)[::2, 16:]
    w = rand(rng, (n, 2 * k), "float8_e4m3fn", scale=8.0)[:, :k]
    _, _, a_scale, w_scale = inputs(rng, m, n, k)
    out_big = poisoned((m, n + 7), "float32")
    out = out_big[:, 7:]
    with forced("gemm_a8w8_blockscale", variant):
        aiter.gemm_a8w8_blockscale(a, w, a_scale, w_scale, out=out)
    check(out, reference(a, w, a_scale, w_scale), "float32", k, magnitude(a, w, a_scale, w_scale))
    assert np.isnan(out_big[:, :7]).all()


def column_major(scale):
    """The same [M, groups] values with strides (1, M): the transpose of a
    [groups, M] array, as F.scaled_mm and vLLM's column_major_scales give."""
    return np.ascontiguousarray(scale.T).T


@pytest.mark.parametrize("variant", CPU_VARIANTS)
def test_blockscale_column_major_a_scale(rng, variant):
    for m, n, k in [(1, 130, 300), (5, 20, 129), (40, 257, 700), (100, 33, 1030)]:
        a, w, a_scale, w_scale = inputs(rng, m, n, k)
        by_column = column_major(a_scale)
        assert by_column.strides == (4, 4 * m) or m == 1
        out = poisoned((m, n), "float32")
        with forced("gemm_a8w8_blockscale", variant):
            aiter.gemm_a8w8_blockscale(a, w, by_column, w_scale, out=out)
        check(out, reference(a, w, a_scale, w_scale), "float32", k, magnitude(a, w, a_scale, w_scale))


def test_blockscale_empty_and_k0(rng):
    a, w = np.zeros((3, 0), np_dtype("float8_e4m3fn")), np.zeros((2, 0), np_dtype("float8_e4m3fn"))
    got = aiter.gemm_a8w8_blockscale(a, w, np.zeros((3, 0), np.float32), np.zeros((1, 0), np.float32),
                                     out_dtype="float32")
    np.testing.assert_array_equal(got, np.zeros((3, 2)))  # the empty sum
    a, w, _, w_scale = inputs(rng, 0, 5, 130)
    assert aiter.gemm_a8w8_blockscale(a, w, np.zeros((0, 2), np.float32), w_scale).shape == (0, 5)


def test_blockscale_rejects_bad_arguments(rng):
    m, n, k = 4, 130, 300  # 3 K groups, 2 blocks of W rows
    a, w, a_scale, w_scale = inputs(rng, m, n, k)
    bad = aiter.InvalidArgumentError
    cases = [
        (bad, r"a_scale: expected shape \[M, ceil\(K / 128\)\] = \[4, 3\] \(per token and 128-wide K group\), "
              r"got \[4, 2\]", dict(a_scale=a_scale[:, :2].copy())),
        (bad, r"a_scale: expected shape \[M, ceil\(K / 128\)\] = \[4, 3\]", dict(a_scale=np.ones((1,), np.float32))),
        (bad, r"a_scale: expected shape .* got \[3, 4\]", dict(a_scale=np.ascontiguousarray(a_scale.T))),
        (bad, r"w_scale: expected shape \[ceil\(N / 128\), ceil\(K / 128\)\] = \[2, 3\] "
              r"\(per 128 x 128 block of w\), got \[130, 3\]", dict(w_scale=np.ones((n, 3), np.float32))),
        (bad, r"w_scale: expected shape .* = \[2, 3\]", dict(w_scale=np.ones((1, 1), np.float32))),
        (bad, r"a_scale: expected strides \(3, 1\) \(row-major\) or \(1, 4\) \(column-major\), got \(6, 2\)",
         dict(a_scale=np.ones((m, 6), np.float32)[:, ::2])),
        (bad, r"a_scale: expected strides .* got \(1, 8\)",  # column-major, padded to 8 rows
         dict(a_scale=np.ones((3, 8), np.float32)[:, :m].T)),
        (bad, "w_scale: expected a compact", dict(w_scale=np.ascontiguousarray(w_scale.T).T)),
        (aiter.UnsupportedDtypeError, "w_scale: expected dtype float32, got float16",
         dict(w_scale=w_scale.astype(np.float16))),
        (aiter.UnsupportedDtypeError, "a: expected dtype float8_e4m3fn, float8_e4m3fnuz, got float8_e5m2",
         dict(a=a.astype(np_dtype("float8_e5m2")), w=w.astype(np_dtype("float8_e5m2")))),
        (aiter.UnsupportedDtypeError, "a: expected dtype float8_e4m3fn, float8_e4m3fnuz, got int8",
         dict(a=np.ones((m, k), np.int8), w=np.ones((n, k), np.int8))),
        (aiter.UnsupportedDtypeError, r"w: expected the dtype of a \(float8_e4m3fn\), got float8_e4m3fnuz",
         dict(w=w.astype(np_dtype("float8_e4m3fnuz")))),
        (bad, r"w: expected shape\[1\] == 300 \(K", dict(w=w[:, :299].copy())),
    ]
    for error, message, changed in cases:
        args = dict(a=a, w=w, a_scale=a_scale, w_scale=w_scale)
        args.update(changed)
        out = poisoned((m, n), "float32")
        with pytest.raises(error, match=message):
            aiter.gemm_a8w8_blockscale(args["a"], args["w"], args["a_scale"], args["w_scale"], out=out)
        assert np.isnan(out).all()  # nothing written
    with pytest.raises(aiter.UnsupportedDtypeError, match="out: expected dtype float32, float16, bfloat16"):
        aiter.gemm_a8w8_blockscale(a, w, a_scale, w_scale, out_dtype="int8")
