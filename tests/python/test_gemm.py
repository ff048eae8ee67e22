"""gemm_a16w16 and gemm_a8w8 against float64 NumPy: out = (a @ w.T) * scales + bias,
on every CPU kernel variant (forced) and on the heuristic's choice."""
import numpy as np
import pytest

import aiter
from gemm_helpers import (CPU_VARIANTS, FLOAT_OP_VARIANTS, check, cpu_has, forced, has_bf16_dot, rand_int8, reference,
                          scaled_magnitude)
from harness import FLOAT_DTYPES, FP8_DTYPES, TOLERANCE, assert_close, f64, np_dtype, poisoned, rand

# M, N, K: single rows and columns; sizes that are not multiples of any
# variant's register block (3 x 4, 6 x 16) or tile (96 x 128); 1..3 rows (the
# skinny kernel converting W in registers) and 4 (its 2 + 2 row groups); K over
# the 512-long blocks.
SHAPES = [(1, 1, 1), (1, 7, 33), (3, 5, 17), (4, 9, 70), (7, 1, 100), (33, 257, 7), (100, 129, 513),
          (257, 33, 1100)]


# ---- a16w16 ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("out_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("bias_dtype", [None, "float32", "out"])
def test_a16w16_dtypes(rng, dtype, out_dtype, bias_dtype):
    m, n, k = 37, 70, 260
    a, w = rand(rng, (m, k), dtype), rand(rng, (n, k), dtype)
    bias = None if bias_dtype is None else rand(rng, (n,), out_dtype if bias_dtype == "out" else bias_dtype)
    out = poisoned((m, n), out_dtype)
    got = aiter.gemm_a16w16(a, w, bias, out_dtype=out_dtype, out=out)
    assert got is out
    check(out, reference(a, w, bias), out_dtype, k)


@pytest.mark.parametrize("variant", FLOAT_OP_VARIANTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_a16w16_shapes(rng, variant, dtype, shape):
    m, n, k = shape
    a, w, bias = rand(rng, (m, k), dtype), rand(rng, (n, k), dtype), rand(rng, (n,), "float32")
    with forced("gemm_a16w16", variant):
        got = aiter.gemm_a16w16(a, w, bias)  # out allocated, in a's dtype
    assert got.shape == (m, n) and got.dtype == np_dtype(dtype)
    check(got, reference(a, w, bias), dtype, k)


@pytest.mark.parametrize("variant", FLOAT_OP_VARIANTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("m", [2, 45])
def test_a16w16_strided_rows(rng, variant, dtype, m):
    n, k = 130, 300
    a = rand(rng, (2 * m, k + 9), dtype)[::2, 5:5 + k]  # rows 2 (k + 9) apart
    w = rand(rng, (n, k + 3), dtype)[:, 3:]
    out_big = poisoned((m, n + 20), "float32")
    out = out_big[:, 10:10 + n]
    with forced("gemm_a16w16", variant):
        aiter.gemm_a16w16(a, w, out=out)
    check(out, reference(a, w), "float32", k)
    # Nothing outside the view was written.
    assert np.isnan(out_big[:, :10]).all() and np.isnan(out_big[:, 10 + n:]).all()


@pytest.mark.parametrize("variant", FLOAT_OP_VARIANTS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a16w16_subnormal_and_special_values(variant, dtype):
    # Subnormals (fp16: below 2^-14), the largest finite value, inf and NaN all
    # decode exactly, in either operand (the skinny kernel converts W itself).
    # Except: vdpbf16ps (cpu.avx512 on bf16 where the kernels use AVX512_BF16;
    # cpu.onednn where the CPU has it, whatever AITER_CPU_ISA says) reads
    # subnormal bf16 (below 2^-126) as zero, by its definition, as AMX's bf16
    # products do.
    tiny, big = (2.0**-24, 65504.0) if dtype == "float16" else (2.0**-133, 3.3895313892515355e38)
    flushed = dtype == "bfloat16" and ((variant == "cpu.avx512" and has_bf16_dot()) or
                                       (variant == "cpu.onednn" and cpu_has("avx512_bf16")))
    small = 0.0 if flushed else tiny
    a = np.array([[tiny, 3 * tiny, big, -1.0]]).astype(np_dtype(dtype))
    w = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.0], [0, 0, 0, 2.0]])
    w = w.astype(np_dtype(dtype))
    with forced("gemm_a16w16", variant):
        np.testing.assert_array_equal(aiter.gemm_a16w16(a, w, out_dtype="float32"), [[small, 3 * small, -big, -2.0]])
        np.testing.assert_array_equal(aiter.gemm_a16w16(w, a, out_dtype="float32"),
                                      [[small], [3 * small], [-big], [-2.0]])
        special = np.array([[np.inf, 1.0], [np.nan, 1.0]]).astype(np_dtype(dtype))
        got = aiter.gemm_a16w16(special, np.ones((1, 2), np_dtype(dtype)), out_dtype="float32")
        assert got[0, 0] == np.inf and np.isnan(got[1, 0])
        got = aiter.gemm_a16w16(np.ones((1, 2), np_dtype(dtype)), special, out_dtype="float32")
        assert got[0, 0] == np.inf and np.isnan(got[0, 1])


@pytest.mark.parametrize("variant", FLOAT_OP_VARIANTS)
def test_a16w16_empty_and_k0(rng, variant):
    with forced("gemm_a16w16", variant):
        a16w16_empty_and_k0(rng)


def a16w16_empty_and_k0(rng):
    w = rand(rng, (5, 8), "float32")
    assert aiter.gemm_a16w16(np.zeros((0, 8), np.float32), w).shape == (0, 5)
    assert aiter.gemm_a16w16(rand(rng, (3, 8), "float32"), np.zeros((0, 8), np.float32)).shape == (3, 0)
    # K == 0: the empty sum, so out is the bias (or zero).
    bias = rand(rng, (5,), "bfloat16")
    out = poisoned((3, 5), "bfloat16")
    aiter.gemm_a16w16(np.zeros((3, 0), np_dtype("bfloat16")), np.zeros((5, 0), np_dtype("bfloat16")), bias, out=out)
    np.testing.assert_array_equal(f64(out), np.broadcast_to(f64(bias), (3, 5)))
    got = aiter.gemm_a16w16(np.zeros((3, 0), np.float32), np.zeros((5, 0), np.float32))
    np.testing.assert_array_equal(got, np.zeros((3, 5)))


def test_a16w16_out_dtype_as_numpy_dtype(rng):
    a, w = rand(rng, (9, 40), "bfloat16"), rand(rng, (11, 40), "bfloat16")
    got = aiter.gemm_a16w16(a, w, out_dtype=np.dtype(np.float16))
    assert got.dtype == np.float16
    check(got, reference(a, w), "float16", 40)


# ---- a8w8 ------------------------------------------------------------------------

@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("m", [1, 13])
@pytest.mark.parametrize("k", [1, 300, 1100])
def test_a8w8_int8_is_exact(rng, variant, m, k):
    n = 29
    a, w = rand_int8(rng, (m, k)), rand_int8(rng, (n, k))
    ones_m, ones_n = np.ones((m, 1), np.float32), np.ones((1, n), np.float32)
    with forced("gemm_a8w8", variant):
        got = aiter.gemm_a8w8(a, w, ones_m, ones_n, out_dtype="float32")
    exact = a.astype(np.int64) @ w.astype(np.int64).T
    assert np.abs(exact).max() < 2**24  # so that fp32 holds every sum exactly
    np.testing.assert_array_equal(got, exact)


@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("m", [2, 20])
@pytest.mark.parametrize("a_value, w_value", [(-128, -128), (-128, 127), (127, -128), (127, 127)])
def test_a8w8_int8_extreme_sums(variant, m, a_value, w_value):
    # The largest products over many blocks of K: 2049 * (-128)^2 = 2^25 + 2^14,
    # exact only when block sums are added in integers; and the extremes of
    # cpu.avx512's uint8 quads (m = 20), where w + 128 is 0 or 255 and
    # 128 sum(a) comes off at the end.
    k = 2049
    a = np.full((m, k), a_value, np.int8)
    w = np.full((3, k), w_value, np.int8)
    with forced("gemm_a8w8", variant):
        got = aiter.gemm_a8w8(a, w, np.ones((1,), np.float32), np.ones((1, 1), np.float32), out_dtype="float32")
    # The exact sum, rounded once to the fp32 output.
    np.testing.assert_array_equal(got, np.full((m, 3), np.float32(k * a_value * w_value)))


@pytest.mark.parametrize("k", [65536, 65537])
def test_a8w8_int8_longest_k_of_the_quads(rng, k):
    # cpu.avx512 sums uint8 quads up to K = 65536 and int16 pairs past it; both
    # exact at the extremes: 65536 * 255 * 128 is just below 2^31.
    a = np.full((20, k), -128, np.int8)
    a[1] = rand_int8(rng, (k,))
    w = np.full((2, k), 127, np.int8)
    w[1] = rand_int8(rng, (k,))
    with forced("gemm_a8w8", "cpu.avx512"):
        got = aiter.gemm_a8w8(a, w, np.ones((1,), np.float32), np.ones((1, 1), np.float32), out_dtype="float32")
    exact = a.astype(np.int64) @ w.astype(np.int64).T
    np.testing.assert_array_equal(got, exact.astype(np.float32))


def scales(rng, kind, m, n):
    """(a_scale, w_scale): per token and channel, per tensor in either shape, or mixed."""
    per_token = (rng.random((m, 1)) + 0.5).astype(np.float32) * 0.5
    per_channel = (rng.random((1, n)) + 0.5).astype(np.float32) * 0.25
    one = np.array([0.75], np.float32)
    return {"token_channel": (per_token, per_channel), "tensor_1d": (one, np.array([0.3], np.float32)),
            "tensor_2d": (one.reshape(1, 1), one.reshape(1, 1)), "token_tensor": (per_token, one),
            "tensor_channel": (one.reshape(1, 1), per_channel)}[kind]


SCALE_KINDS = ["token_channel", "tensor_1d", "tensor_2d", "token_tensor", "tensor_channel"]


@pytest.mark.parametrize("scale_kind", SCALE_KINDS)
@pytest.mark.parametrize("out_dtype", FLOAT_DTYPES)
def test_a8w8_int8_scales(rng, scale_kind, out_dtype):
    m, n, k = 33, 140, 257
    a, w = rand_int8(rng, (m, k)), rand_int8(rng, (n, k))
    a_scale, w_scale = scales(rng, scale_kind, m, n)
    a_scale = a_scale / 256  # sums of int8 products reach 1e5: keep fp16 out of overflow
    bias = rand(rng, (n,), out_dtype)
    out = poisoned((m, n), out_dtype)
    aiter.gemm_a8w8(a, w, a_scale, w_scale, bias, out_dtype=out_dtype, out=out)
    # The integer sums are exact; only the fp32 scaling and the final rounding err.
    ref = reference(a, w, bias, a_scale, w_scale)
    rtol, atol = TOLERANCE[out_dtype]
    assert_close(out, ref, out_dtype, rtol=rtol, atol=atol)


@pytest.mark.parametrize("fp8", FP8_DTYPES)
@pytest.mark.parametrize("out_dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(1, 7, 33), (100, 129, 513)])
def test_a8w8_fp8(rng, fp8, out_dtype, shape):
    m, n, k = shape
    a, w = rand(rng, (m, k), fp8, scale=4.0), rand(rng, (n, k), fp8, scale=4.0)
    a_scale, w_scale = scales(rng, "token_channel", m, n)
    bias = rand(rng, (n,), "float32")
    out = poisoned((m, n), out_dtype)
    aiter.gemm_a8w8(a, w, a_scale, w_scale, bias, out_dtype=out_dtype, out=out)
    check(out, reference(a, w, bias, a_scale, w_scale), out_dtype, k, scaled_magnitude(a, w, a_scale, w_scale))


@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("fp8", FP8_DTYPES)
@pytest.mark.parametrize("shape", [(1, 7, 33), (5, 20, 130), (100, 129, 513)])
def test_a8w8_fp8_variants(rng, variant, fp8, shape):
    m, n, k = shape
    a, w = rand(rng, (m, k), fp8, scale=4.0), rand(rng, (n, k), fp8, scale=4.0)
    a_scale, w_scale = scales(rng, "token_channel", m, n)
    bias = rand(rng, (n,), "bfloat16")
    with forced("gemm_a8w8", variant):
        got = aiter.gemm_a8w8(a, w, a_scale, w_scale, bias)
    check(got, reference(a, w, bias, a_scale, w_scale), "bfloat16", k, scaled_magnitude(a, w, a_scale, w_scale))


@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("scale_kind", SCALE_KINDS)
def test_a8w8_int8_scale_kinds_variants(rng, variant, scale_kind):
    m, n, k = 7, 40, 200
    a, w = rand_int8(rng, (m, k)), rand_int8(rng, (n, k))
    a_scale, w_scale = scales(rng, scale_kind, m, n)
    bias = rand(rng, (n,), "float32")
    with forced("gemm_a8w8", variant):
        got = aiter.gemm_a8w8(a, w, a_scale, w_scale, bias, out_dtype="float32")
    # Exact integer sums: only the fp32 scaling and bias err.
    assert_close(got, reference(a, w, bias, a_scale, w_scale), "float32", rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("scale_kind", ["tensor_1d", "token_tensor"])
def test_a8w8_fp8_strided_rows_default_out(rng, scale_kind):
    m, n, k = 20, 50, 96
    a = rand(rng, (m, 2 * k), "float8_e4m3fn")[:, k:]
    w = rand(rng, (2 * n, k), "float8_e4m3fn")[1::2]
    a_scale, w_scale = scales(rng, scale_kind, m, n)
    got = aiter.gemm_a8w8(a, w, a_scale, w_scale)
    assert got.dtype == np_dtype("bfloat16")
    check(got, reference(a, w, None, a_scale, w_scale), "bfloat16", k, scaled_magnitude(a, w, a_scale, w_scale))


def test_a8w8_empty_and_k0():
    a_scale, w_scale = np.ones((1,), np.float32), np.ones((1,), np.float32)
    assert aiter.gemm_a8w8(np.zeros((0, 4), np.int8), np.zeros((3, 4), np.int8), np.ones((0, 1), np.float32),
                           w_scale).shape == (0, 3)
    bias = np.array([1.5, -2.0], np.float32)
    got = aiter.gemm_a8w8(np.zeros((3, 0), np.int8), np.zeros((2, 0), np.int8), a_scale, w_scale, bias,
                          out_dtype="float32")
    np.testing.assert_array_equal(got, np.broadcast_to(bias, (3, 2)))


# ---- bad arguments -----------------------------------------------------------------

def test_a16w16_rejects_bad_arguments(rng):
    a, w = rand(rng, (4, 16), "float32"), rand(rng, (6, 16), "float32")
    with pytest.raises(aiter.InvalidArgumentError, match=r"w: expected shape\[1\] == 16 \(K"):
        aiter.gemm_a16w16(a, rand(rng, (6, 15), "float32"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="w: expected the dtype of a"):
        aiter.gemm_a16w16(a, rand(rng, (6, 16), "bfloat16"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="a: expected dtype float32, float16, bfloat16, got int8"):
        aiter.gemm_a16w16(rand_int8(rng, (4, 16)), rand_int8(rng, (6, 16)))
    with pytest.raises(aiter.UnsupportedDtypeError, match="out: expected dtype float32, float16, bfloat16"):
        aiter.gemm_a16w16(a, w, out_dtype="int32")
    with pytest.raises(aiter.InvalidArgumentError, match="a: expected 2 dims, got 3"):
        aiter.gemm_a16w16(rand(rng, (2, 4, 16), "float32"), w)
    with pytest.raises(aiter.InvalidArgumentError, match="a: expected unit stride along the last dim"):
        aiter.gemm_a16w16(rand(rng, (4, 32), "float32")[:, ::2], w)
    with pytest.raises(aiter.InvalidArgumentError, match=r"out: expected shape\[0\] == 4 \(M"):
        aiter.gemm_a16w16(a, w, out=np.empty((5, 6), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"out: expected shape\[1\] == 6 \(N"):
        aiter.gemm_a16w16(a, w, out=np.empty((4, 7), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"bias: expected shape\[0\] == 6"):
        aiter.gemm_a16w16(a, w, rand(rng, (7,), "float32"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="bias: expected dtype float32, bfloat16, got float16"):
        aiter.gemm_a16w16(a, w, rand(rng, (6,), "float16"), out_dtype="bfloat16")
    overlapping = np.lib.stride_tricks.as_strided(np.zeros(64, np.float32), shape=(4, 6), strides=(12, 4))
    with pytest.raises(aiter.InvalidArgumentError, match="out: rows overlap"):
        aiter.gemm_a16w16(a, w, out=overlapping)


def test_a8w8_rejects_bad_arguments(rng):
    m, n, k = 4, 6, 16
    a, w = rand_int8(rng, (m, k)), rand_int8(rng, (n, k))
    a_scale, w_scale = np.ones((m, 1), np.float32), np.ones((1, n), np.float32)
    with pytest.raises(aiter.InvalidArgumentError, match=r"a_scale: expected shape \[M, 1\] = \[4, 1\]"):
        aiter.gemm_a8w8(a, w, np.ones((m,), np.float32), w_scale)  # 1-D per token
    with pytest.raises(aiter.InvalidArgumentError, match=r"a_scale: expected shape \[M, 1\] = \[4, 1\]"):
        aiter.gemm_a8w8(a, w, np.ones((m + 1, 1), np.float32), w_scale)
    with pytest.raises(aiter.InvalidArgumentError, match=r"w_scale: expected shape \[1, N\] = \[1, 6\]"):
        aiter.gemm_a8w8(a, w, a_scale, np.ones((n, 1), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"w_scale: expected shape \[1, N\]"):
        aiter.gemm_a8w8(a, w, a_scale, np.ones((1, 1, 1), np.float32))
    with pytest.raises(aiter.UnsupportedDtypeError, match="a_scale: expected dtype float32, got float16"):
        aiter.gemm_a8w8(a, w, a_scale.astype(np.float16), w_scale)
    with pytest.raises(aiter.InvalidArgumentError, match="a_scale: expected a compact"):
        aiter.gemm_a8w8(a, w, np.ones((2 * m, 1), np.float32)[::2], w_scale)
    with pytest.raises(aiter.UnsupportedDtypeError, match="w: expected the dtype of a .int8., got float8_e4m3fn"):
        aiter.gemm_a8w8(a, rand(rng, (n, k), "float8_e4m3fn"), a_scale, w_scale)
    with pytest.raises(aiter.UnsupportedDtypeError, match="a: expected dtype int8, float8_e4m3fn"):
        aiter.gemm_a8w8(rand(rng, (m, k), "bfloat16"), rand(rng, (n, k), "bfloat16"), a_scale, w_scale)
    with pytest.raises(aiter.UnsupportedDtypeError, match="out: expected dtype"):
        aiter.gemm_a8w8(a, w, a_scale, w_scale, out_dtype="int8")
    with pytest.raises(aiter.UnsupportedDtypeError, match="bias: expected dtype float32, float16"):
        aiter.gemm_a8w8(a, w, a_scale, w_scale, rand(rng, (n,), "bfloat16"), out_dtype="float16")


@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("fp8", FP8_DTYPES)
@pytest.mark.parametrize("m", [1, 3, 40])
def test_a8w8_fp8_every_code(variant, fp8, m):
    # Every one of the 256 codes of W, NaN and inf included, decodes to its
    # value (K = 1, so that no code meets another in a sum): the in-register
    # table lookups of cpu.avx512's dot-product form (m <= 16) and the packed
    # conversion (m = 40) alike.
    codes = np.arange(256, dtype=np.uint8).view(np_dtype(fp8)).reshape(256, 1)
    a = np.ones((m, 1), np.float32).astype(np_dtype(fp8))
    one = np.ones((1,), np.float32)
    with forced("gemm_a8w8", variant):
        got = aiter.gemm_a8w8(a, codes, one, one, out_dtype="float32")
    np.testing.assert_array_equal(got, np.broadcast_to(f64(codes).reshape(1, 256), (m, 256)))
