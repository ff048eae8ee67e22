"""The norms and gated activations writing into pages the process never touched
(cpu/populate.cpp maps them before the row loops, where an output is contiguous
and at least 128 KB): outputs in fresh anonymous mmap memory, wholly or partly
(every third page already written with NaN, so runs of mapped and unmapped pages
alternate), both outputs of add_rmsnorm, the 8-bit outputs of the fused
quantizations, and a row-strided output whose gaps must stay untouched.  CPU
only, against float64 NumPy."""
import mmap

import numpy as np
import pytest

import aiter
from harness import assert_close, f64, np_dtype, rand
from test_activation import check_silu_quant, silu_ref
from test_norm import check_norm_quant, rms_ref

PAGE = mmap.PAGESIZE
TOUCHED = ["none", "every third page"]


def fresh(shape, dtype, offset=12, touched="none"):
    """An array in anonymous mmap pages no one has touched, `offset` bytes in (the
    mapping lives as long as the array); with `touched`, one NaN (or -128) in
    every third page."""
    dt = np_dtype(dtype)
    count = int(np.prod(shape))
    buf = mmap.mmap(-1, offset + count * dt.itemsize + PAGE)
    out = np.frombuffer(buf, dt, count, offset).reshape(shape)
    if touched != "none":
        out.reshape(-1)[::3 * PAGE // dt.itemsize] = np.iinfo(dt).min if dt.kind in "iu" else np.nan
    return out


@pytest.mark.parametrize("touched", TOUCHED)
def test_rmsnorm_into_fresh_pages(rng, touched):
    x, w = rand(rng, (70, 601), "float32"), rand(rng, (601,), "float32")  # 168 KB out
    out = fresh(x.shape, "float32", touched=touched)
    aiter.rmsnorm(x, w, 1e-6, out=out)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), "float32")


@pytest.mark.parametrize("touched", TOUCHED)
def test_add_rmsnorm_both_outputs_into_fresh_pages(rng, touched):
    shape = (97, 700)  # 136 KB of bf16 each
    x, res, w = rand(rng, shape, "bfloat16"), rand(rng, shape, "bfloat16"), rand(rng, shape[-1:], "bfloat16")
    out, res_out = fresh(shape, "bfloat16", touched=touched), fresh(shape, "bfloat16", offset=2)
    aiter.add_rmsnorm(x, res, w, 1e-6, out=out, residual_out=res_out)
    assert_close(res_out, f64(x) + f64(res), "bfloat16", what="residual_out")
    assert_close(out, rms_ref(f64(res_out), f64(w), 1e-6), "bfloat16")


def test_rmsnorm_quant_into_fresh_pages(rng):
    x, w = rand(rng, (150, 1003), "float32"), rand(rng, (1003,), "float32")  # 147 KB of int8
    out, scale = fresh(x.shape, "int8", offset=5), np.full((150, 1), np.nan, np.float32)
    aiter.rmsnorm_quant(x, w, 1e-6, "int8", out=out, scale=scale)
    check_norm_quant(out, scale, rms_ref(f64(x), f64(w), 1e-6), "int8")


@pytest.mark.parametrize("touched", TOUCHED)
def test_silu_and_mul_into_fresh_pages(rng, touched):
    x = rand(rng, (61, 2 * 703), "float32")  # 168 KB out
    out = fresh((61, 703), "float32", touched=touched)
    aiter.silu_and_mul(x, out=out)
    assert_close(out, silu_ref(f64(x[:, :703])) * f64(x[:, 703:]), "float32")


def test_silu_and_mul_quant_into_fresh_pages(rng):
    x = rand(rng, (130, 2 * 1011), "bfloat16")  # 131 KB of e4m3fn
    out, scale = fresh((130, 1011), "float8_e4m3fn", offset=3), np.full((130, 1), np.nan, np.float32)
    aiter.silu_and_mul_quant(x, "float8_e4m3fn", out=out, scale=scale)
    check_silu_quant(out, scale, x, "float8_e4m3fn")


def test_row_strided_outputs_leave_their_gaps(rng):
    # Rows 1000 elements apart, 900 written: not contiguous, so nothing is
    # populated; the gaps must still read as the mapping's zeros.
    x, w = rand(rng, (60, 900), "float32"), rand(rng, (900,), "float32")
    big = fresh((60, 1000), "float32")
    out = big[:, 50:950]
    aiter.rmsnorm(x, w, 1e-6, out=out)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), "float32")
    gate_up = rand(rng, (60, 1800), "float32")
    big_act = fresh((60, 1000), "float32")
    aiter.silu_and_mul(gate_up, out=big_act[:, 100:])
    assert_close(big_act[:, 100:], silu_ref(f64(gate_up[:, :900])) * f64(gate_up[:, 900:]), "float32")
    assert not big[:, :50].any() and not big[:, 950:].any() and not big_act[:, :100].any()
