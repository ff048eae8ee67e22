"""silu_and_mul, gelu_and_mul and silu_and_mul_quant against float64 NumPy, on the
CPU and on a CUDA GPU (the `device` fixture; skipped without one)."""
import math

import numpy as np
import pytest

import aiter
import harness
from gemm_helpers import ISA_LEVELS, run_at_isa_level
from harness import (FLOAT_DTYPES, QMAX, QUANT_DTYPES, assert_close, check_quantized, f64, on_host, poisoned,
                     poisoned_on, rand, to_device)

# Last dims 2*d.  d = 1, 111 and 2049 are odd (the GPU's one-element kernels); 500
# is even but not whole 16-byte chunks of 16-bit elements (its two-element
# kernels); 1024 and 14336 are (its 16-byte kernels, or the two-element ones for an
# exact GELU on so few rows); 2049 and 14336 span several 1024-column CPU tiles and
# several GPU column blocks.
SHAPES = [(1, 2), (7, 222), (3, 5, 1000), (2, 4098), (5, 2048), (2, 28672)]

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


def half(shape):
    return tuple(shape[:-1]) + (shape[-1] // 2,)


def gated_ref(x, act):
    x = f64(x)
    d = x.shape[-1] // 2
    return act(x[..., :d]) * x[..., d:]


def assert_untouched_outside(big_out, inside):
    """Every element of big_out outside the column slice `inside` is still poison."""
    rest = np.delete(f64(big_out), np.arange(big_out.shape[1])[inside], axis=1)
    assert np.isnan(rest).all(), "wrote outside the out view"


# ---- silu_and_mul, gelu_and_mul --------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gated(rng, device, op, dtype, shape):
    call, act = OPS[op]
    x = rand(rng, shape, dtype, scale=3.0)  # deep into both tails of the gates
    out = poisoned_on(half(shape), dtype, device)
    assert call(to_device(x, device), out=out) is out
    assert_close(out, gated_ref(x, act), dtype)


@pytest.mark.parametrize("op", OPS)
def test_gated_extreme_gates(device, op):
    """exp(-g) overflowing fp32 must give 0 (silu) rather than NaN."""
    call, act = OPS[op]
    gate = np.array([-200.0, -100.0, -30.0, -1e-30, 0.0, 1e-30, 30.0, 100.0, 200.0])
    x = np.concatenate([gate, np.full_like(gate, 1.5)])[None].astype(np.float32)
    assert_close(call(to_device(x, device)), gated_ref(x, act), "float32", atol=1e-30)


@pytest.mark.parametrize("op", OPS)
def test_gated_dense_gates(device, op):
    """Every gate in [-12, 12) at a step of 2^-10, against float64 in fp32's tolerance:
    the activation itself (the GPU's erf and exp above all), not only random samples."""
    call, act = OPS[op]
    gate = np.arange(-12.0, 12.0, 2.0 ** -10)
    x = np.concatenate([gate, np.ones_like(gate)])[None].astype(np.float32)
    assert_close(call(to_device(x, device)), gated_ref(x, act), "float32", rtol=1e-5, atol=1e-6)


# Rows 600 elements apart; first columns at 8 (x) and 32 (out), 16-byte aligned for
# every dtype (the GPU's 16-byte kernels), at 10 and 30 (its two-element kernels),
# or at 11 and 31 (its one-element kernels).
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("x_first, out_first", [(8, 32), (10, 30), (11, 31)])
def test_gated_strided_rows(rng, device, op, dtype, x_first, out_first):
    call, act = OPS[op]
    x = to_device(rand(rng, (9, 300), dtype), device)[::2, x_first:x_first + 256]
    x_host = on_host(x)
    big_out = poisoned_on((5, 200), dtype, device)
    out = big_out[:, out_first:out_first + 128]  # rows 200 elements apart
    call(x, out=out)
    assert_close(out, gated_ref(x_host, act), dtype)
    assert_untouched_outside(big_out, slice(out_first, out_first + 128))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("first, d", [(0, 2048), (1, 2047)])
def test_gated_many_rows(rng, device, op, first, d):
    """Enough work for the GPU's largest blocks (256 threads) and, for an exact GELU,
    its 16-byte kernels (few rows take two-element ones), not only small blocks.
    At an odd offset, the one-element kernels: several elements a thread, the row's
    last block only partly inside it (d = 2047)."""
    call, act = OPS[op]
    x = to_device(rand(rng, (1024, 4098), "bfloat16", scale=3.0), device)[:, first:first + 2 * d]
    out = poisoned_on((1024, d), "bfloat16", device)
    call(x, out=out)
    assert_close(out, gated_ref(on_host(x), act), "bfloat16")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gated_more_rows_than_one_grid(rng, device, dtype):
    """70000 rows: more than the 65535 a GPU grid spans, so its blocks loop over rows."""
    x = rand(rng, (70000, 8), dtype)
    out = poisoned_on((70000, 4), dtype, device)
    aiter.silu_and_mul(to_device(x, device), out=out)
    assert_close(out, gated_ref(x, silu_ref), dtype)


def test_gated_allocates_and_keeps_leading_dims(rng, device):
    x = to_device(rand(rng, (2, 3, 1, 16), "bfloat16"), device)
    got = aiter.silu_and_mul(x)
    assert type(got) is type(x) and got.shape == (2, 3, 1, 8) and got.dtype == x.dtype
    assert_close(got, gated_ref(x, silu_ref), "bfloat16")


def test_gated_empty(rng, device):
    assert aiter.silu_and_mul(to_device(rand(rng, (0, 64), "float16"), device)).shape == (0, 32)
    assert aiter.gelu_and_mul(to_device(rand(rng, (3, 0), "float32"), device)).shape == (3, 0)


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


# ---- silu_and_mul_quant -------------------------------------------------------------------
# The library's products are fp32 (exp and division on the GPU within a few ulps);
# their float64 reference differs by up to this much of |y|, which widens the window
# of ties that may round either way.  Products rounded to x's dtype first would miss
# the reference by 2^-9 (bf16) or 2^-12 (fp16) of |y|, and fail away from ties.
Y_REL = 2e-6


def check_silu_quant(out, scale, x, qdtype):
    """scale = amax / qmax of the float64 products (1 for an all-zero row), out their quantization."""
    y64 = gated_ref(x, silu_ref)
    amax = np.abs(y64).max(-1, keepdims=True)
    s = f64(scale)
    np.testing.assert_allclose(s, np.where(amax == 0, 1.0, amax / QMAX[qdtype]), rtol=Y_REL, err_msg="scale")
    check_quantized(out, y64, s, qdtype, x_rel=Y_REL)


def quant_buffers(shape, qdtype, device):
    return poisoned_on(half(shape), qdtype, device), to_device(np.full(shape[:-1] + (1,), np.nan, np.float32), device)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_silu_and_mul_quant(rng, device, qdtype, dtype, shape):
    x = rand(rng, shape, dtype, scale=2.0)
    rows = x.reshape(-1, shape[-1])
    if len(rows) > 1:
        rows[0, shape[-1] // 2:] = 0  # an all-zero row of products: scale 1, zeros out
    out, scale = quant_buffers(shape, qdtype, device)
    got_out, got_scale = aiter.silu_and_mul_quant(to_device(x, device), qdtype, out=out, scale=scale)
    assert got_out is out and got_scale is scale
    check_silu_quant(out, scale, x, qdtype)
    if len(rows) > 1:
        assert f64(scale).reshape(-1)[0] == 1.0


# Two rows: d = 16384 and 32768, the most a GPU block keeps in registers (fp32,
# 16-bit); 40000, longer rows, read twice; 16387, not 16-byte chunks (the scalar
# kernel).  300 rows, more than an H100 or H200 has SMs: four chunks a thread, in
# the loads-first kernel up to 256 threads (d = 4096 fp32 / 8192 16-bit), with
# chunks partly or wholly past the row's end (2052 fp32: 513 chunks of 4 and 160
# threads; 4136 16-bit: 517 chunks of 8), and in the chunkwise kernel past that
# (8200: 288 threads).
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("rows, d", [(2, 16384), (2, 16387), (2, 32768), (2, 40000),
                                     (300, 2052), (300, 4136), (300, 8192), (300, 8200)])
def test_silu_and_mul_quant_row_lengths(rng, device, dtype, rows, d):
    x = rand(rng, (rows, 2 * d), dtype, scale=2.0)
    out, scale = quant_buffers(x.shape, "float8_e4m3fn", device)
    aiter.silu_and_mul_quant(to_device(x, device), "float8_e4m3fn", out=out, scale=scale)
    check_silu_quant(out, scale, x, "float8_e4m3fn")


def test_silu_and_mul_quant_more_rows_than_one_grid(rng, device):
    x = rand(rng, (70000, 16), "bfloat16", scale=2.0)
    out, scale = quant_buffers(x.shape, "int8", device)
    aiter.silu_and_mul_quant(to_device(x, device), "int8", out=out, scale=scale)
    check_silu_quant(out, scale, x, "int8")


# x as in test_gated_strided_rows; out's rows 400 bytes apart, first at byte 128
# (aligned: the GPU's vector kernels) or 101 (its scalar kernels).
@pytest.mark.parametrize("qdtype", ["int8", "float8_e4m3fnuz"])
@pytest.mark.parametrize("x_first, out_first", [(8, 128), (10, 101)])
def test_silu_and_mul_quant_strided_rows(rng, device, qdtype, x_first, out_first):
    x = to_device(rand(rng, (9, 300), "float16", scale=2.0), device)[::2, x_first:x_first + 256]
    big_out = poisoned_on((5, 400), qdtype, device)
    out = big_out[:, out_first:out_first + 128]
    _, scale = aiter.silu_and_mul_quant(x, qdtype, out=out)
    check_silu_quant(out, scale, on_host(x), qdtype)
    rest = np.delete(on_host(big_out), np.arange(out_first, out_first + 128), axis=1)
    np.testing.assert_array_equal(rest.view(np.uint8), poisoned(rest.shape, qdtype).view(np.uint8))


def test_silu_and_mul_quant_allocates(rng, device):
    x = to_device(rand(rng, (2, 3, 64), "float32", scale=2.0), device)
    out, scale = aiter.silu_and_mul_quant(x)  # float8_e4m3fn by default
    assert type(out) is type(x) and out.shape == (2, 3, 32) and scale.shape == (2, 3, 1)
    assert "float8_e4m3fn" in str(out.dtype) and "float32" in str(scale.dtype)
    check_silu_quant(out, scale, on_host(x), "float8_e4m3fn")


def test_silu_and_mul_quant_empty(device):
    out, scale = aiter.silu_and_mul_quant(to_device(np.zeros((4, 0), np.float32), device), "int8")
    assert out.shape == (4, 0) and scale.shape == (4, 1) and (f64(scale) == 1.0).all()
    out, scale = aiter.silu_and_mul_quant(to_device(np.zeros((0, 8), np.float16), device), "float8_e5m2")
    assert out.shape == (0, 4) and scale.shape == (0, 1)


def test_silu_and_mul_quant_rejects_bad_arguments(rng):
    x = rand(rng, (4, 64), "float32")
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype: expected one of int8"):
        aiter.silu_and_mul_quant(x, "float16")
    with pytest.raises(aiter.InvalidArgumentError, match=r"out: expected dtype int8 \(the dtype argument\)"):
        aiter.silu_and_mul_quant(x, "int8", out=poisoned((4, 32), "float8_e4m3fn"))
    with pytest.raises(aiter.InvalidArgumentError, match="half the last dim of x"):
        aiter.silu_and_mul_quant(x, "int8", out=poisoned((4, 64), "int8"))
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected an even last dim"):
        aiter.silu_and_mul_quant(rand(rng, (4, 63), "float32"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="x: expected dtype"):
        aiter.silu_and_mul_quant(x.astype(np.int32))
    with pytest.raises(aiter.UnsupportedDtypeError, match="scale: expected dtype float32"):
        aiter.silu_and_mul_quant(x, scale=np.zeros((4, 1), np.float64))
    with pytest.raises(aiter.InvalidArgumentError, match="one scale per row"):
        aiter.silu_and_mul_quant(x, scale=np.zeros((4, 2), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="scale: expected a compact"):
        aiter.silu_and_mul_quant(x, scale=np.zeros((4, 2), np.float32)[:, :1])
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected unit stride"):
        aiter.silu_and_mul_quant(np.asfortranarray(x))


# ---- every instruction-set level of the CPU kernels -----------------------------------
# AITER_CPU_ISA is read once per process, so each level runs in its own: the
# portable loops and the AVX-512 lanes (silu, tanh-gelu) on the same inputs,
# with large, tiny and signed-zero gates where exp over- or underflows.
ISA_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import aiter
from harness import TOLERANCE, assert_close, rand
from test_activation import OPS, SHAPES, gated_ref, half
assert aiter.library_info()["cpu_isa"].split()[0] == sys.argv[2]
rng = np.random.default_rng(int(sys.argv[4]))
for name, (call, act) in OPS.items():
    for dtype in sys.argv[3].split(","):
        for shape in SHAPES:
            x = rand(rng, shape, dtype)
            x.reshape(-1)[:8] = np.array([90, -90, 200, -200, 1e-30, -0.0, 30, -30], np.float32)[:x.size]
            rtol, atol = TOLERANCE[dtype]
            assert_close(call(x), gated_ref(x, act), dtype, rtol=rtol, atol=atol)
print("ok")
"""


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_every_isa_level(level):
    # bfloat16 arrays need ml_dtypes, which some distributions (Debian) lack.
    run_at_isa_level(level, ISA_SCRIPT, FLOAT_DTYPES if harness.ml_dtypes is not None else ["float32", "float16"])
