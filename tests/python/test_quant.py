"""Per-tensor, per-token and static quantization against float64 NumPy, with
ml_dtypes (not libaiter) rounding to fp8 for the reference."""
import numpy as np
import pytest

import aiter
from harness import (FLOAT_DTYPES, QMAX, QUANT_DTYPES, check_quantized, f64, ml_dtypes, np_dtype, ordinal,
                     poisoned, rand)

SHAPES = [(1, 7), (7, 111), (3, 5, 500), (2, 2500)]  # 2500: three 1024-column tiles


def quant_input(rng, shape, dtype):
    """Normal values with a few outliers, so that amax sits well above the bulk."""
    x = rng.standard_normal(shape) * 2.0
    x.ravel()[rng.integers(0, x.size, size=max(1, x.size // 500))] *= 40.0
    return x.astype(np_dtype(dtype))


def expected_scale(amax):
    return np.where(amax == 0, 1.0, amax)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_per_tensor(rng, qdtype, dtype, shape):
    x = quant_input(rng, shape, dtype)
    out, scale = poisoned(shape, qdtype), np.full((1,), np.nan, np.float32)
    got_out, got_scale = aiter.quant_per_tensor(x, qdtype, out=out, scale=scale)
    assert got_out is out and got_scale is scale
    x64 = f64(x)
    np.testing.assert_allclose(scale[0], np.abs(x64).max() / QMAX[qdtype], rtol=2e-7)
    check_quantized(out, x64, f64(scale)[0], qdtype)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_per_token(rng, qdtype, dtype, shape):
    x = quant_input(rng, shape, dtype)
    x.reshape(-1, shape[-1])[0] = 0  # an all-zero row: scale 1, zeros out
    out, scale = poisoned(shape, qdtype), np.full(shape[:-1] + (1,), np.nan, np.float32)
    aiter.quant_per_token(x, qdtype, out=out, scale=scale)
    x64 = f64(x)
    amax = np.abs(x64).max(-1, keepdims=True)
    np.testing.assert_allclose(scale, np.where(amax == 0, 1.0, amax / QMAX[qdtype]), rtol=2e-7)
    assert scale.reshape(-1)[0] == 1.0
    check_quantized(out, x64, f64(scale), qdtype)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_static(rng, qdtype, dtype):
    x = quant_input(rng, (5, 333), dtype)
    x64 = f64(x)
    # A scale that saturates the largest few percent of the values.
    s = np.float32(np.quantile(np.abs(x64), 0.97) / QMAX[qdtype])
    out = poisoned(x.shape, qdtype)
    assert aiter.quant_per_tensor_static(x, np.array([[s]], np.float32), qdtype, out=out) is out
    check_quantized(out, x64, float(s), qdtype)
    saturated = np.abs(x64 / float(s)) > QMAX[qdtype] * 1.01
    assert saturated.any()
    np.testing.assert_array_equal(f64(out)[saturated], np.sign(x64[saturated]) * QMAX[qdtype])


def test_rounds_ties_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, 1.0625, 1.1875, -1.0625], np.float32)
    one = np.ones((1,), np.float32)
    np.testing.assert_array_equal(aiter.quant_per_tensor_static(x, one, "int8"),
                                  [0, 2, 2, 0, -2, 126, 1, 1, -1])
    # e4m3 steps of 1/8 above 1: the midpoints round to the even mantissa.
    np.testing.assert_array_equal(f64(aiter.quant_per_tensor_static(x[6:], one, "float8_e4m3fn")),
                                  [1.0, 1.25, -1.0])


def test_all_zero_and_empty():
    out, scale = aiter.quant_per_tensor(np.zeros((3, 9), np.float16), "int8")
    assert scale.shape == (1,) and scale.dtype == np.float32 and scale[0] == 1.0
    assert (out == 0).all()
    out, scale = aiter.quant_per_tensor(np.zeros((0, 9), np.float32))
    assert out.shape == (0, 9) and scale[0] == 1.0
    out, scale = aiter.quant_per_token(np.zeros((4, 0), np.float32), "float8_e4m3fnuz")
    assert out.shape == (4, 0) and scale.shape == (4, 1) and (scale == 1.0).all()


@pytest.mark.parametrize("qdtype", ["int8", "float8_e4m3fn"])
def test_strided_rows(rng, qdtype):
    x = quant_input(rng, (9, 300), "bfloat16")[::2, 10:266]  # rows 600 elements apart
    big_out = poisoned((5, 400), qdtype)
    out = big_out[:, 100:356]
    _, scale = aiter.quant_per_token(x, qdtype, out=out)
    check_quantized(out, f64(x), f64(scale), qdtype)
    outside = np.concatenate([big_out[:, :100].ravel(), big_out[:, 356:].ravel()])
    np.testing.assert_array_equal(ordinal(outside, qdtype), ordinal(poisoned(outside.shape, qdtype), qdtype))
    _, scale = aiter.quant_per_tensor(x, qdtype, out=out)
    check_quantized(out, f64(x), float(scale[0]), qdtype)


def test_allocates_and_accepts_framework_dtypes(rng):
    x = quant_input(rng, (2, 3, 40), "float32")
    out, scale = aiter.quant_per_token(x, np.dtype(ml_dtypes.float8_e4m3fnuz))
    assert out.dtype == np_dtype("float8_e4m3fnuz") and scale.shape == (2, 3, 1)
    check_quantized(out, f64(x), f64(scale), "float8_e4m3fnuz")
    out, scale = aiter.quant_per_tensor(x, np.int8, scale=np.full((1, 1), np.nan, np.float32))
    assert out.dtype == np.int8 and scale.shape == (1, 1)
    check_quantized(out, f64(x), float(scale[0, 0]), "int8")


def test_torch(rng):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(quant_input(rng, (6, 50), "float32")).to(torch.float16)
    out, scale = aiter.quant_per_token(x, torch.float8_e4m3fn)
    assert out.dtype == torch.float8_e4m3fn and scale.dtype == torch.float32 and scale.shape == (6, 1)
    bits = out.view(torch.uint8).numpy().view(np_dtype("float8_e4m3fn"))
    check_quantized(bits, f64(x), scale.numpy().astype(np.float64), "float8_e4m3fn")


def test_rejects_bad_arguments(rng):
    x = quant_input(rng, (4, 64), "float32")
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype: expected one of int8"):
        aiter.quant_per_tensor(x, "float16")
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype: expected one of"):
        aiter.quant_per_token(x, "float7")
    with pytest.raises(aiter.InvalidArgumentError, match=r"out: expected dtype int8 \(the dtype argument\)"):
        aiter.quant_per_tensor(x, "int8", out=poisoned((4, 64), "float8_e4m3fn"))
    with pytest.raises(aiter.InvalidArgumentError, match="out: expected the shape of x"):
        aiter.quant_per_token(x, "int8", out=poisoned((4, 63), "int8"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="x: expected dtype"):
        aiter.quant_per_tensor(x.astype(np.int32), "int8")
    with pytest.raises(aiter.UnsupportedDtypeError, match="scale: expected dtype float32"):
        aiter.quant_per_tensor(x, scale=np.zeros((1,), np.float64))
    with pytest.raises(aiter.InvalidArgumentError, match=r"scale: expected shape \[1\] or \[1, 1\]"):
        aiter.quant_per_tensor(x, scale=np.zeros((4, 1), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"scale: expected shape\[0\] == 4"):
        aiter.quant_per_token(x, scale=np.zeros((3, 1), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="one scale per row"):
        aiter.quant_per_token(x, scale=np.zeros((4, 2), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="scale: expected a compact"):
        aiter.quant_per_token(x, scale=np.zeros((4, 2), np.float32)[:, :1])
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected unit stride"):
        aiter.quant_per_tensor(np.asfortranarray(x))
    for bad in (0.0, -1.0, np.nan, np.inf, 1e-40):
        with pytest.raises(aiter.InvalidArgumentError, match="scale: expected a finite value"):
            aiter.quant_per_tensor_static(x, np.array([bad], np.float32), "int8")
    with pytest.raises(aiter.InvalidArgumentError, match=r"scale: expected shape \[1\] or \[1, 1\]"):
        aiter.quant_per_tensor_static(x, np.ones((1, 1, 1), np.float32))
