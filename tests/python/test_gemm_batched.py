"""batched_gemm_a16w16 and batched_gemm_a8w8 against float64 NumPy: out[b] =
(a[b] @ w[b].T) * scales + bias, on every CPU kernel variant, with batch and
row strides of every kind."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import aiter
from gemm_helpers import CPU_VARIANTS, FLOAT_OP_VARIANTS, check, forced, rand_int8, scaled_magnitude
from harness import FLOAT_DTYPES, FP8_DTYPES, assert_close, f64, np_dtype, poisoned, rand


def reference(a, w, bias=None, a_scale=None, w_scale=None):
    out = np.einsum("bmk,bnk->bmn", f64(a), f64(w))
    if a_scale is not None:
        b = out.shape[0]
        a_s = f64(a_scale).reshape(b, -1, 1) if a_scale.size > 1 else f64(a_scale).reshape(1, 1, 1)
        w_s = f64(w_scale).reshape(b, 1, -1) if w_scale.size > 1 else f64(w_scale).reshape(1, 1, 1)
        out = out * a_s * w_s
    return out if bias is None else out + f64(bias)


# B, M, N, K: one matrix of one element, M = 1 and 4 (skinny), ragged sizes
# past the tiles and K blocks of every variant.
SHAPES = [(1, 1, 1, 1), (3, 1, 7, 33), (2, 4, 130, 70), (4, 37, 20, 300), (2, 100, 129, 513)]


@pytest.mark.parametrize("variant", FLOAT_OP_VARIANTS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_batched_a16w16_variants(rng, variant, dtype, shape):
    b, m, n, k = shape
    a, w, bias = rand(rng, (b, m, k), dtype), rand(rng, (b, n, k), dtype), rand(rng, (n,), "float32")
    out = poisoned((b, m, n), dtype)
    with forced("batched_gemm_a16w16", variant):
        got = aiter.batched_gemm_a16w16(a, w, bias, out=out)
    assert got is out
    check(out, reference(a, w, bias), dtype, k)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("out_dtype", FLOAT_DTYPES)
def test_batched_a16w16_dtypes(rng, dtype, out_dtype):
    b, m, n, k = 3, 5, 30, 70
    a, w = rand(rng, (b, m, k), dtype), rand(rng, (b, n, k), dtype)
    bias = rand(rng, (n,), out_dtype)
    got = aiter.batched_gemm_a16w16(a, w, bias, out_dtype=out_dtype)
    assert got.dtype == np_dtype(out_dtype) and got.shape == (b, m, n)
    check(got, reference(a, w, bias), out_dtype, k)


@pytest.mark.parametrize("variant", FLOAT_OP_VARIANTS)
def test_batched_strides(rng, variant):
    b, m, n, k = 3, 6, 40, 50
    # a: rows 2 apart, matrices one padded row block apart; w: one matrix shared
    # by every b (batch stride 0); out: matrix b interleaved with the others, as
    # out[b] = buffer[:, b] of an [M, B, N] buffer.
    a = rand(rng, (b, 2 * m + 1, k + 5), "float32")[:, :2 * m:2, 5:]
    w_one = rand(rng, (n, k), "float32")
    w = as_strided(w_one, shape=(b, n, k), strides=(0,) + w_one.strides)
    buffer = poisoned((m, b, n), "float32")
    out = buffer.transpose(1, 0, 2)
    with forced("batched_gemm_a16w16", variant):
        aiter.batched_gemm_a16w16(a, w, out=out)
    check(out, reference(a, w), "float32", k)
    assert not np.isnan(buffer).any()


def test_batched_empty_and_k0(rng):
    w = rand(rng, (2, 5, 8), "float32")
    assert aiter.batched_gemm_a16w16(np.zeros((2, 0, 8), np.float32), w).shape == (2, 0, 5)
    assert aiter.batched_gemm_a16w16(np.zeros((0, 3, 8), np.float32), np.zeros((0, 5, 8), np.float32)).shape == (0, 3, 5)
    bias = rand(rng, (5,), "float32")
    got = aiter.batched_gemm_a16w16(np.zeros((2, 3, 0), np.float32), np.zeros((2, 5, 0), np.float32), bias)
    np.testing.assert_array_equal(got, np.broadcast_to(bias, (2, 3, 5)))


def batched_scales(rng, kind, b, m, n):
    per_token = (rng.random((b, m, 1)) + 0.5).astype(np.float32) / 256
    per_channel = (rng.random((b, 1, n)) + 0.5).astype(np.float32)
    one = np.array([0.75 / 256], np.float32)
    return {"token_channel": (per_token, per_channel), "tensor": (one, one.reshape(1, 1)),
            "token_tensor": (per_token, one), "tensor_channel": (one.reshape(1, 1), per_channel)}[kind]


@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("scale_kind", ["token_channel", "tensor", "token_tensor", "tensor_channel"])
@pytest.mark.parametrize("m", [1, 19])
def test_batched_a8w8_int8(rng, variant, scale_kind, m):
    b, n, k = 3, 50, 1100  # K past 1024: exact integer sums across K blocks
    a, w = rand_int8(rng, (b, m, k)), rand_int8(rng, (b, n, k))
    a_scale, w_scale = batched_scales(rng, scale_kind, b, m, n)
    bias = rand(rng, (n,), "float32")
    with forced("batched_gemm_a8w8", variant):
        got = aiter.batched_gemm_a8w8(a, w, a_scale, w_scale, bias, out_dtype="float32")
    # The integer sums are exact; only the fp32 scaling and the bias err.
    assert_close(got, reference(a, w, bias, a_scale, w_scale), "float32", rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("variant", CPU_VARIANTS)
@pytest.mark.parametrize("fp8", FP8_DTYPES)
def test_batched_a8w8_fp8(rng, variant, fp8):
    b, m, n, k = 2, 5, 70, 200
    a, w = rand(rng, (b, m, k), fp8, scale=4.0), rand(rng, (b, n, k), fp8, scale=4.0)
    a_scale, w_scale = batched_scales(rng, "token_channel", b, m, n)
    bias = rand(rng, (n,), "bfloat16")
    with forced("batched_gemm_a8w8", variant):
        got = aiter.batched_gemm_a8w8(a, w, a_scale, w_scale, bias)
    assert got.dtype == np_dtype("bfloat16")
    check(got, reference(a, w, bias, a_scale, w_scale), "bfloat16", k, scaled_magnitude(a, w, a_scale, w_scale))


def test_batched_a16w16_rejects_bad_arguments(rng):
    b, m, n, k = 3, 4, 6, 16
    a, w = rand(rng, (b, m, k), "float32"), rand(rng, (b, n, k), "float32")
    bad, dtype = aiter.InvalidArgumentError, aiter.UnsupportedDtypeError
    with pytest.raises(bad, match="a: expected 3 dims, got 2"):
        aiter.batched_gemm_a16w16(a[0], w)
    with pytest.raises(bad, match=r"w: expected shape\[0\] == 3 \(B, the batch of a\)"):
        aiter.batched_gemm_a16w16(a, w[:2])
    with pytest.raises(bad, match=r"w: expected shape\[2\] == 16 \(K"):
        aiter.batched_gemm_a16w16(a, rand(rng, (b, n, 15), "float32"))
    with pytest.raises(bad, match=r"out: expected shape\[0\] == 3 \(B"):
        aiter.batched_gemm_a16w16(a, w, out=np.empty((2, m, n), np.float32))
    with pytest.raises(bad, match=r"out: expected shape\[1\] == 4 \(M"):
        aiter.batched_gemm_a16w16(a, w, out=np.empty((b, m + 1, n), np.float32))
    with pytest.raises(dtype, match="w: expected the dtype of a"):
        aiter.batched_gemm_a16w16(a, w.astype(np_dtype("bfloat16")))
    with pytest.raises(dtype, match="a: expected dtype float32, float16, bfloat16, got int8"):
        aiter.batched_gemm_a16w16(rand_int8(rng, (b, m, k)), rand_int8(rng, (b, n, k)))
    with pytest.raises(bad, match="bias: expected 1 dims, got 2"):
        aiter.batched_gemm_a16w16(a, w, rand(rng, (b, n), "float32"))
    with pytest.raises(bad, match="a: expected unit stride along the last dim"):
        aiter.batched_gemm_a16w16(rand(rng, (b, m, 2 * k), "float32")[:, :, ::2], w)
    # Output elements written twice: matrices on top of each other, rows overlapping.
    shared = np.full((m, n), np.nan, np.float32)
    with pytest.raises(bad, match=r"out: matrices overlap \(batch stride 0"):
        aiter.batched_gemm_a16w16(a, w, out=as_strided(shared, shape=(b, m, n), strides=(0,) + shared.strides))
    assert np.isnan(shared).all()
    half = np.full(b * m * n, np.nan, np.float32)
    with pytest.raises(bad, match="out: matrices overlap"):
        aiter.batched_gemm_a16w16(a, w, out=as_strided(half, shape=(b, m, n), strides=(4 * n * m // 2, 4 * n, 4)))
    rows = np.zeros(b * m * n, np.float32)
    with pytest.raises(bad, match=r"out: rows overlap \(row stride 3 < row length 6\)"):
        aiter.batched_gemm_a16w16(a, w, out=as_strided(rows, shape=(b, m, n), strides=(4 * m * n, 12, 4)))
    assert np.isnan(half).all() and not rows.any()  # nothing written


def test_batched_a8w8_rejects_bad_arguments(rng):
    b, m, n, k = 3, 4, 6, 16
    a, w = rand_int8(rng, (b, m, k)), rand_int8(rng, (b, n, k))
    a_scale, w_scale = np.ones((b, m, 1), np.float32), np.ones((b, 1, n), np.float32)
    bad = aiter.InvalidArgumentError
    with pytest.raises(bad, match=r"a_scale: expected shape \[B, M, 1\] = \[3, 4, 1\] \(per token\) or \[1\] / "
                                  r"\[1, 1\] \(per tensor\), got \[4, 1\]"):
        aiter.batched_gemm_a8w8(a, w, np.ones((m, 1), np.float32), w_scale)
    with pytest.raises(bad, match=r"a_scale: expected shape \[B, M, 1\] = \[3, 4, 1\]"):
        aiter.batched_gemm_a8w8(a, w, np.ones((2, m, 1), np.float32), w_scale)
    with pytest.raises(bad, match=r"w_scale: expected shape \[B, 1, N\] = \[3, 1, 6\] \(per channel\)"):
        aiter.batched_gemm_a8w8(a, w, a_scale, np.ones((b, n, 1), np.float32))
    with pytest.raises(bad, match=r"w_scale: expected shape \[B, 1, N\]"):
        aiter.batched_gemm_a8w8(a, w, a_scale, np.ones((1, n), np.float32))
    with pytest.raises(bad, match="w_scale: expected a compact"):
        aiter.batched_gemm_a8w8(a, w, a_scale, np.ones((b, 1, 2 * n), np.float32)[:, :, ::2])
    with pytest.raises(aiter.UnsupportedDtypeError, match="a_scale: expected dtype float32, got float16"):
        aiter.batched_gemm_a8w8(a, w, a_scale.astype(np.float16), w_scale)
    with pytest.raises(aiter.UnsupportedDtypeError, match=r"w: expected the dtype of a \(int8\), got float8_e4m3fn"):
        aiter.batched_gemm_a8w8(a, rand(rng, (b, n, k), "float8_e4m3fn"), a_scale, w_scale)
    with pytest.raises(aiter.UnsupportedDtypeError, match="a: expected dtype int8, float8_e4m3fn"):
        aiter.batched_gemm_a8w8(rand(rng, (b, m, k), "float32"), rand(rng, (b, n, k), "float32"), a_scale, w_scale)
    with pytest.raises(aiter.UnsupportedDtypeError, match="bias: expected dtype float32, float16"):
        aiter.batched_gemm_a8w8(a, w, a_scale, w_scale, rand(rng, (n,), "bfloat16"), out_dtype="float16")
    with pytest.raises(bad, match=r"w: expected shape\[0\] == 3 \(B"):
        aiter.batched_gemm_a8w8(a, w[1:], a_scale, w_scale)
