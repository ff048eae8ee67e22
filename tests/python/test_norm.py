"""RMSNorm, add + RMSNorm and LayerNorm against float64 NumPy."""
import numpy as np
import pytest

import aiter
from harness import FLOAT_DTYPES, assert_close, f64, poisoned, rand

SHAPES = [(1, 64), (7, 111), (3, 5, 500), (2, 4096)]


def rms_ref(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm(rng, dtype, shape):
    x, w = rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out = poisoned(shape, dtype)
    aiter.rmsnorm(x, w, 1e-6, out=out)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rmsnorm_fp32_weight_and_strided_rows(rng, dtype):
    big = rand(rng, (9, 300), dtype)
    x = big[::2, 10:266]  # rows 600 elements apart, not contiguous
    w = rand(rng, (256,), "float32")
    got = aiter.rmsnorm(x, w, 1e-5)
    assert_close(got, rms_ref(f64(x), f64(w), 1e-5), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add_rmsnorm(rng, dtype, shape):
    x, res, w = rand(rng, shape, dtype), rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out, res_out = poisoned(shape, dtype), poisoned(shape, dtype)
    aiter.add_rmsnorm(x, res, w, 1e-6, out=out, residual_out=res_out)
    new_res = f64(x) + f64(res)
    assert_close(res_out, new_res, dtype, what="residual_out")
    # The norm sees the residual as stored in the dtype.
    assert_close(out, rms_ref(f64(res_out), f64(w), 1e-6), dtype)


def test_add_rmsnorm_in_place(rng):
    x, res, w = rand(rng, (4, 128), "float32"), rand(rng, (4, 128), "float32"), rand(rng, (128,), "float32")
    expected_res = f64(x) + f64(res)
    out, res_out = aiter.add_rmsnorm(x, res, w, out=x, residual_out=res)
    assert out is x and res_out is res
    assert_close(res, expected_res, "float32")
    assert_close(x, rms_ref(expected_res, f64(w), 1e-6), "float32")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_layernorm(rng, dtype, shape, with_bias):
    x = rand(rng, shape, dtype, scale=2.0, offset=3.0)  # a mean far from 0
    w, b = rand(rng, shape[-1:], dtype), rand(rng, shape[-1:], dtype) if with_bias else None
    out = poisoned(shape, dtype)
    aiter.layernorm(x, w, b, 1e-5, out=out)
    xd = f64(x)
    mean = xd.mean(-1, keepdims=True)
    ref = (xd - mean) / np.sqrt(((xd - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * f64(w)
    if with_bias:
        ref = ref + f64(b)
    assert_close(out, ref, dtype)


def test_norm_rejects_bad_arguments(rng):
    x = rand(rng, (4, 64), "float32")
    with pytest.raises(aiter.InvalidArgumentError, match="weight: expected shape"):
        aiter.rmsnorm(x, rand(rng, (63,), "float32"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="x: expected dtype"):
        aiter.rmsnorm(x.astype(np.int32), rand(rng, (64,), "float32"))
    with pytest.raises(aiter.InvalidArgumentError, match="epsilon"):
        aiter.rmsnorm(x, rand(rng, (64,), "float32"), -1.0)
    with pytest.raises(aiter.InvalidArgumentError, match="last dim"):
        aiter.rmsnorm(np.asfortranarray(rand(rng, (4, 64), "float32")), rand(rng, (64,), "float32"))
    with pytest.raises(aiter.InvalidArgumentError, match="out: expected the shape"):
        aiter.rmsnorm(x, rand(rng, (64,), "float32"), out=np.empty((4, 32), np.float32))


@pytest.mark.parametrize("shape", [(0, 64), (3, 0), (2, 0, 16)])
def test_empty_inputs_are_a_no_op(shape):
    x = np.empty(shape, np.float32)  # NumPy gives empty arrays arbitrary (zero) strides
    w = np.ones(shape[-1:], np.float32)
    assert aiter.rmsnorm(x, w).shape == shape
    assert aiter.layernorm(x, w).shape == shape
