"""silu_and_mul and gelu_and_mul against float64 NumPy."""
import math

import numpy as np
import pytest

import aiter
from harness import FLOAT_DTYPES, assert_close, f64, poisoned, rand

# Last dims 2*d: d = 1, 111, 500 and 2049 (three 1024-column tiles in the CPU kernel).
SHAPES = [(1, 2), (7, 222), (3, 5, 1000), (2, 4098)]

_erf = np.frompyfunc(math.erf, 1, 1)


def silu_ref(g):
    return g / (1.0 + np.exp(-g))


def gelu_ref(g):
    return 0.5 * g * (1.0 + _erf(g / math.sqrt(2.0)).astype(np.float64))


def gelu_tanh_ref(g):
    return 0.5 * g * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * g ** 3)))


# name -> (call with out=, float64 reference of the gate)
OPS = {
    "silu": (lambda x, out=None: aiter.silu_and_mul(x, out=out), silu_ref),
    "gelu": (lambda x, out=None: aiter.gelu_and_mul(x, out=out), gelu_ref),
    "gelu_tanh": (lambda x, out=None: aiter.gelu_and_mul(x, "tanh", out=out), gelu_tanh_ref),
}


def gated_ref(x, act):
    x = f64(x)
    d = x.shape[-1] // 2
    return act(x[..., :d]) * x[..., d:]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gated(rng, op, dtype, shape):
    call, act = OPS[op]
    x = rand(rng, shape, dtype, scale=3.0)  # deep into both tails of the gates
    out = poisoned(shape[:-1] + (shape[-1] // 2,), dtype)
    assert call(x, out=out) is out
    assert_close(out, gated_ref(x, act), dtype)


@pytest.mark.parametrize("op", OPS)
def test_gated_extreme_gates(op):
    """exp(-g) overflowing fp32 must give 0 (silu) rather than NaN."""
    call, act = OPS[op]
    gate = np.array([-200.0, -100.0, -30.0, -1e-30, 0.0, 1e-30, 30.0, 100.0, 200.0])
    x = np.concatenate([gate, np.full_like(gate, 1.5)])[None].astype(np.float32)
    assert_close(call(x), gated_ref(x, act), "float32", atol=1e-30)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_gated_strided_rows(rng, op, dtype):
    call, act = OPS[op]
    x = rand(rng, (9, 300), dtype)[::2, 10:266]        # rows 600 elements apart
    big_out = poisoned((5, 200), dtype)
    out = big_out[:, 30:158]                           # rows 200 elements apart
    call(x, out=out)
    assert_close(out, gated_ref(x, act), dtype)
    outside = np.concatenate([f64(big_out[:, :30]).ravel(), f64(big_out[:, 158:]).ravel()])
    assert np.isnan(outside).all(), "wrote outside the out view"


def test_gated_allocates_and_keeps_leading_dims(rng):
    x = rand(rng, (2, 3, 1, 16), "bfloat16")
    got = aiter.silu_and_mul(x)
    assert got.shape == (2, 3, 1, 8) and got.dtype == x.dtype
    assert_close(got, gated_ref(x, silu_ref), "bfloat16")


def test_gated_empty(rng):
    assert aiter.silu_and_mul(rand(rng, (0, 64), "float16")).shape == (0, 32)
    assert aiter.gelu_and_mul(rand(rng, (3, 0), "float32")).shape == (3, 0)


def test_gated_rejects_bad_arguments(rng):
    x = rand(rng, (4, 64), "float32")
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected an even last dim"):
        aiter.silu_and_mul(rand(rng, (4, 63), "float32"))
    with pytest.raises(aiter.InvalidArgumentError, match="half the last dim of x"):
        aiter.silu_and_mul(x, out=np.empty((4, 64), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"out: expected shape\[0\] == 4"):
        aiter.gelu_and_mul(x, out=np.empty((3, 32), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="out: expected 2 dims"):
        aiter.silu_and_mul(x, out=np.empty((1, 4, 32), np.float32))
    with pytest.raises(aiter.UnsupportedDtypeError, match="out: expected the dtype of x"):
        aiter.silu_and_mul(x, out=np.empty((4, 32), np.float16))
    with pytest.raises(aiter.UnsupportedDtypeError, match="x: expected dtype"):
        aiter.silu_and_mul(x.astype(np.int32))
    with pytest.raises(aiter.InvalidArgumentError, match="approximate"):
        aiter.gelu_and_mul(x, approximate="erf")
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected at least 1 dims"):
        aiter.silu_and_mul(np.array(1.0, np.float32))
    # Columns that are not contiguous, and leading dims that do not fold into one row stride.
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected unit stride"):
        aiter.silu_and_mul(np.asfortranarray(x))
    with pytest.raises(aiter.InvalidArgumentError, match="x: leading dims must fold"):
        aiter.silu_and_mul(rand(rng, (3, 11, 8), "float32")[:, ::2])
