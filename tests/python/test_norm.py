"""RMSNorm, add + RMSNorm and LayerNorm against float64 NumPy."""
import numpy as np
import pytest

import aiter
import harness
from gemm_helpers import ISA_LEVELS, run_at_isa_level
from harness import FLOAT_DTYPES, assert_close, f64, on_host, poisoned_on, rand, to_device

SHAPES = [(1, 64), (7, 111), (3, 5, 500), (2, 4096)]


def rms_ref(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rmsnorm(rng, device, dtype, shape):
    x, w = rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out = poisoned_on(shape, dtype, device)
    aiter.rmsnorm(to_device(x, device), to_device(w, device), 1e-6, out=out)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("cols", [256, 250])  # 250: rows not a whole number of 16-byte vectors
def test_rmsnorm_fp32_weight_and_strided_rows(rng, device, dtype, cols):
    big = to_device(rand(rng, (9, 300), dtype), device)
    x = big[::2, 10:10 + cols]  # rows 600 elements apart, not contiguous
    w = rand(rng, (cols,), "float32")
    got = aiter.rmsnorm(x, to_device(w, device), 1e-5)
    assert_close(got, rms_ref(f64(x), f64(w), 1e-5), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add_rmsnorm(rng, device, dtype, shape):
    x, res, w = rand(rng, shape, dtype), rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out, res_out = poisoned_on(shape, dtype, device), poisoned_on(shape, dtype, device)
    d = [to_device(a, device) for a in (x, res, w)]
    aiter.add_rmsnorm(*d, 1e-6, out=out, residual_out=res_out)
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
def test_layernorm(rng, device, dtype, shape, with_bias):
    x = rand(rng, shape, dtype, scale=2.0, offset=3.0)  # a mean far from 0
    w, b = rand(rng, shape[-1:], dtype), rand(rng, shape[-1:], dtype) if with_bias else None
    out = poisoned_on(shape, dtype, device)
    aiter.layernorm(to_device(x, device), to_device(w, device), None if b is None else to_device(b, device),
                    1e-5, out=out)
    xd = f64(x)
    mean = xd.mean(-1, keepdims=True)
    ref = (xd - mean) / np.sqrt(((xd - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * f64(w)
    if with_bias:
        ref = ref + f64(b)
    assert_close(out, ref, dtype)


# In place over many rows: every load of a row's chunks comes before the first
# store (on the GPU, chunks past the row reload its first chunk, unused).
@pytest.mark.parametrize("cols", [4000, 8192])
def test_add_rmsnorm_in_place_many_rows(rng, device, cols):
    shape = (640, cols)
    x, res, w = rand(rng, shape, "bfloat16"), rand(rng, shape, "bfloat16"), rand(rng, (cols,), "bfloat16")
    new_res = f64(x) + f64(res)  # before the call: on the CPU, x_d is x
    x_d, res_d, w_d = (to_device(a, device) for a in (x, res, w))
    aiter.add_rmsnorm(x_d, res_d, w_d, 1e-6, out=x_d, residual_out=res_d)
    assert_close(res_d, new_res, "bfloat16", what="residual_out")
    assert_close(x_d, rms_ref(f64(res_d), f64(w), 1e-6), "bfloat16")


# 640 rows take the GPU's many-rows tiles (from 2 rows per multiprocessor), whose
# kernels are compiled per norm kind; rows of 4096 and 8192 take two and four
# chunks a thread; rows of 4000 leave the last chunks of the block's last warp
# outside the row (and LayerNorm runs there without a bias).
@pytest.mark.parametrize("op", ["rmsnorm", "add_rmsnorm", "layernorm", "rmsnorm_quant", "add_rmsnorm_quant"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("cols", [4000, 4096, 8192])
def test_many_rows(rng, device, op, dtype, cols):
    shape = (640, cols)
    x, res = rand(rng, shape, dtype, scale=2.0, offset=3.0), rand(rng, shape, dtype)
    w, b = rand(rng, (cols,), dtype), rand(rng, (cols,), dtype)
    quant = op.endswith("quant")
    kw = dict(out=poisoned_on(shape, "int8" if quant else dtype, device))
    if quant:
        kw["scale"] = poisoned_on((640, 1), "float32", device)
    if op.startswith("add"):
        kw["residual_out"] = poisoned_on(shape, dtype, device)
    x_d, res_d, w_d, b_d = (to_device(a, device) for a in (x, res, w, b))
    if op == "layernorm":
        with_bias = cols != 4000
        aiter.layernorm(x_d, w_d, b_d if with_bias else None, 1e-5, **kw)
        xd = f64(x)
        mean = xd.mean(-1, keepdims=True)
        ref = (xd - mean) / np.sqrt(((xd - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * f64(w)
        if with_bias:
            ref = ref + f64(b)
        assert_close(kw["out"], ref, dtype)
        return
    extra = ["int8"] if quant else []
    if op.startswith("add"):
        getattr(aiter, op)(x_d, res_d, w_d, 1e-6, *extra, **kw)
        assert_close(kw["residual_out"], f64(x) + f64(res), dtype, what="residual_out")
        ref = rms_ref(f64(kw["residual_out"]), f64(w), 1e-6)
    else:
        getattr(aiter, op)(x_d, w_d, 1e-6, *extra, **kw)
        ref = rms_ref(f64(x), f64(w), 1e-6)
    if quant:
        check_norm_quant(kw["out"], kw["scale"], ref, "int8")
    else:
        assert_close(kw["out"], ref, dtype)


# fp32 weights for 16-bit x over many rows: the GPU's many-rows RMSNorm tile takes
# another path for them (weights stored as x's dtype are loaded all at once).
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("cols", [4000, 8192])
def test_rmsnorm_many_rows_fp32_weight(rng, device, dtype, cols):
    x, w = rand(rng, (640, cols), dtype, scale=2.0, offset=3.0), rand(rng, (cols,), "float32")
    out = poisoned_on((640, cols), dtype, device)
    aiter.rmsnorm(to_device(x, device), to_device(w, device), 1e-6, out=out)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), dtype)


QUANT_DTYPES = ["int8", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"]
QMAX = {"int8": 127.0, "float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0, "float8_e5m2": 57344.0}


def check_norm_quant(out, scale, y, qdtype):
    """out * scale reproduces the float64 reference y within one quantization step;
    scales are amax(|y|) / qmax per row; every element rounds exactly like
    float64 except one lying within fp32 error of the midpoint between the two
    (a bf16 input can put it exactly there: -21.0 between e4m3's -20 and -22)."""
    out, scale = on_host(out), f64(scale)
    scale_ref = np.abs(y).max(-1, keepdims=True) / QMAX[qdtype]
    np.testing.assert_allclose(scale, scale_ref, rtol=2e-5, err_msg="scale")
    q = f64(out)
    assert not np.isnan(q).any() and (qdtype != "int8" or (out != -128).all()), "unwritten elements"
    ref = y / scale_ref
    if qdtype == "int8":
        exact = np.clip(np.rint(ref), -127, 127)
        step = np.ones_like(ref)
    else:
        from harness import np_dtype
        exact = np.clip(ref, -QMAX[qdtype], QMAX[qdtype]).astype(np_dtype(qdtype)).astype(np.float64)
        mant = 2 if qdtype == "float8_e5m2" else 3
        emin = {"float8_e4m3fn": -6, "float8_e4m3fnuz": -7, "float8_e5m2": -14}[qdtype]  # subnormals below
        step = 2.0 ** (np.maximum(np.floor(np.log2(np.maximum(np.abs(ref), 1e-30))), emin) - mant)
    assert (np.abs(q - ref) <= step * 1.0001).all(), "an element is off by more than one step"
    apart = q != exact
    midpoint = (q[apart] + exact[apart]) / 2
    assert (np.abs(ref[apart] - midpoint) <= 1e-4 * np.abs(ref[apart])).all(), "an element rounded apart from float64"


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(1, 64), (7, 111), (3, 4, 500), (2, 4096)])
def test_rmsnorm_quant(rng, device, dtype, qdtype, shape):
    x, w = rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out = poisoned_on(shape, qdtype, device)
    scale = poisoned_on(shape[:-1] + (1,), "float32", device)
    aiter.rmsnorm_quant(to_device(x, device), to_device(w, device), 1e-6, qdtype, out=out, scale=scale)
    check_norm_quant(out, scale, rms_ref(f64(x), f64(w), 1e-6), qdtype)


# RMSNorm to 8 bits over thousands of rows of 2056-8192 16-bit elements, every
# 8-bit format, rows that end inside a thread's chunks, and rows 48 bytes longer
# than their elements (strided, still 16-byte aligned): the many-rows tiles.
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("cols,qdtype,strided", [
    (2056, "int8", False), (4000, "float8_e4m3fn", True), (4096, "float8_e4m3fnuz", False),
    (4096, "float8_e5m2", False), (8000, "int8", False), (8192, "float8_e4m3fn", True)])
def test_rmsnorm_quant_many_rows(rng, device, dtype, cols, qdtype, strided):
    rows = 2300 if cols <= 4096 else 1700
    pad = 24 if strided else 0  # rows 48 bytes longer than their elements: 16-byte aligned
    big = rand(rng, (rows, cols + pad), dtype, scale=2.0, offset=1.0)
    w = rand(rng, (cols,), dtype)
    x_d = to_device(big, device)[:, pad:]
    out = poisoned_on((rows, cols), qdtype, device)
    scale = poisoned_on((rows, 1), "float32", device)
    aiter.rmsnorm_quant(x_d, to_device(w, device), 1e-6, qdtype, out=out, scale=scale)
    check_norm_quant(out, scale, rms_ref(f64(big[:, pad:]), f64(w), 1e-6), qdtype)


@pytest.mark.parametrize("qdtype", ["int8", "float8_e4m3fn"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_rmsnorm_quant(rng, device, dtype, qdtype):
    shape = (5, 1000)
    x, res, w = rand(rng, shape, dtype), rand(rng, shape, dtype), rand(rng, shape[-1:], dtype)
    out, scale, res_out = aiter.add_rmsnorm_quant(*[to_device(a, device) for a in (x, res, w)], 1e-6, qdtype)
    assert_close(res_out, f64(x) + f64(res), dtype, what="residual_out")
    check_norm_quant(out, scale, rms_ref(f64(res_out), f64(w), 1e-6), qdtype)


def test_norm_quant_rejects_bad_arguments(rng):
    x, w = rand(rng, (4, 64), "float32"), rand(rng, (64,), "float32")
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype"):
        aiter.rmsnorm_quant(x, w, dtype="float16")
    with pytest.raises(aiter.InvalidArgumentError, match="scale: expected shape"):
        aiter.rmsnorm_quant(x, w, scale=np.empty((4, 2), np.float32))
    with pytest.raises(aiter.UnsupportedDtypeError, match="scale: expected dtype float32"):
        aiter.rmsnorm_quant(x, w, scale=np.empty((4, 1), np.float16))


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


# ---- every instruction-set level of the CPU kernels -----------------------------------
# AITER_CPU_ISA is read once per process, so each level runs in its own: the
# loops (portable, avx2) and the AVX-512 rows (avx512 and up: rmsnorm,
# add_rmsnorm and their fused quantizations) on the same cases as above, odd
# widths (vector tails), strided rows and in place included.
ISA_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import aiter
import harness
import test_norm as t
assert aiter.library_info()["cpu_isa"].split()[0] == sys.argv[2]
# fp8 arrays need ml_dtypes, which some distributions (Debian) lack.
qdtypes = ("int8", "float8_e4m3fn") if harness.ml_dtypes is not None else ("int8",)
rng = np.random.default_rng(int(sys.argv[4]))
for dtype in sys.argv[3].split(","):
    for shape in t.SHAPES + [(3, 17), (2, 15)]:
        t.test_rmsnorm(rng, "cpu", dtype, shape)
        t.test_add_rmsnorm(rng, "cpu", dtype, shape)
    t.test_rmsnorm_fp32_weight_and_strided_rows(rng, "cpu", dtype, 250)
    for qdtype in qdtypes:
        t.test_rmsnorm_quant(rng, "cpu", dtype, qdtype, (7, 111))
        t.test_add_rmsnorm_quant(rng, "cpu", dtype, qdtype)
t.test_add_rmsnorm_in_place(rng)
print("ok")
"""


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_every_isa_level(level):
    # bfloat16 arrays need ml_dtypes, which some distributions (Debian) lack.
    run_at_isa_level(level, ISA_SCRIPT, FLOAT_DTYPES if harness.ml_dtypes is not None else ["float32", "float16"])
