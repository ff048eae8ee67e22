"""Shared test helpers: dtypes, fresh random inputs, poisoned outputs, and
comparison with float64 NumPy references at tolerances that fit each dtype.

The references in the test files are written independently of libaiter, in
float64 NumPy; nothing here calls the library.
"""
import numpy as np
import pytest

try:
    import ml_dtypes
except ImportError:  # not in every distribution (Debian's autopkgtest runs without it)
    ml_dtypes = None

FLOAT_DTYPES = ["float32", "float16", "bfloat16"]
FP8_DTYPES = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"]
QUANT_DTYPES = ["int8"] + FP8_DTYPES
QMAX = {"int8": 127.0, "float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0, "float8_e5m2": 57344.0}
MANTISSA_BITS = {"float8_e4m3fn": 3, "float8_e4m3fnuz": 3, "float8_e5m2": 2}
SMALLEST_SUBNORMAL = {"float8_e4m3fn": 2.0 ** -9, "float8_e4m3fnuz": 2.0 ** -10, "float8_e5m2": 2.0 ** -16}

# Elementwise tolerances (rtol, atol) for results rounded once to the dtype,
# after fp32 arithmetic: a few units in the last place.
TOLERANCE = {
    "float32": (2e-5, 2e-5),
    "float16": (4e-3, 4e-3),
    "bfloat16": (2e-2, 2e-2),
}


def np_dtype(name):
    """NumPy dtype for a libaiter dtype name (bfloat16 / fp8 through ml_dtypes).
    Without ml_dtypes the test asking for one of those skips, naming why."""
    if name == "bfloat16" or name.startswith("float8"):
        if ml_dtypes is None:
            pytest.skip(f"NumPy {name} arrays need ml_dtypes, which is not installed")
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def rand(rng, shape, dtype, scale=1.0, offset=0.0):
    """Normal random values rounded to ``dtype`` (a NumPy array)."""
    return (rng.standard_normal(shape) * scale + offset).astype(np_dtype(dtype))


def poisoned(shape, dtype):
    """An output buffer full of a value no op writes: NaN for floats, the most
    negative integer for int8 (quantization saturates at -127)."""
    dt = np_dtype(dtype)
    if dt.kind in "iu":
        return np.full(shape, np.iinfo(dt).min, dtype=dt)
    return np.full(shape, np.nan, dtype=dt)


def f64(a):
    """Any array (NumPy, PyTorch, JAX) as a float64 NumPy array."""
    if type(a).__module__.startswith("torch"):
        a = on_host(a)
    return np.asarray(a).astype(np.float64)


def assert_close(out, ref, dtype, rtol=None, atol=None, what="out"):
    """Elementwise |out - ref| <= atol + rtol * |ref|, with no NaN anywhere in out."""
    out = f64(out)
    ref = np.asarray(ref, dtype=np.float64)
    assert out.shape == ref.shape, f"{what}: shape {out.shape} != reference {ref.shape}"
    assert not np.isnan(out).any(), f"{what}: {np.isnan(out).sum()} elements unwritten or NaN"
    default_rtol, default_atol = TOLERANCE.get(dtype, (0.0, 0.0))
    np.testing.assert_allclose(out, ref, rtol=default_rtol if rtol is None else rtol,
                               atol=default_atol if atol is None else atol, err_msg=what)


def to_device(a, device):
    """A NumPy array as an array on `device`: itself for "cpu", a torch tensor on
    the GPU otherwise (bfloat16 / fp8 go through their bytes, which torch cannot
    take from ml_dtypes arrays directly).  Strides of a dense array are kept."""
    if device == "cpu":
        return a
    import torch
    a = np.ascontiguousarray(a)
    name = a.dtype.name
    if name == "bfloat16" or name.startswith("float8"):
        raw = torch.from_numpy(a.view(np.uint16 if name == "bfloat16" else np.uint8))
        return raw.view(getattr(torch, name)).to(device)
    return torch.from_numpy(a).to(device)


def on_host(a):
    """A device array back as a NumPy array of the same dtype (bf16/fp8 via ml_dtypes)."""
    if not type(a).__module__.startswith("torch"):
        return np.asarray(a)
    a = a.detach().cpu()
    name = str(a.dtype).replace("torch.", "")
    if name == "bfloat16" or name.startswith("float8"):
        import torch
        raw = a.view(torch.uint16 if name == "bfloat16" else torch.uint8).numpy()
        return raw.view(np_dtype(name))
    return a.numpy()


def poisoned_on(shape, dtype, device):
    """poisoned(), on `device`."""
    return to_device(poisoned(shape, dtype), device)


# ---- 8-bit quantization ------------------------------------------------------------
def quant_reference(x64, scale64, dtype):
    """x / scale rounded to ``dtype`` in float64 NumPy / ml_dtypes, saturated at +-qmax."""
    qmax = QMAX[dtype]
    y = np.clip(x64 / scale64, -qmax, qmax)
    if dtype == "int8":
        return np.clip(np.rint(y), -127, 127).astype(np.int8)
    return y.astype(np_dtype(dtype))


# How far past a midpoint fp32's x * fl32(1 / scale) may land, relative to |x / scale|.
TIE_WINDOW = 2.0 ** -21


def near_tie(x64, scale64, dtype, x_rel=0.0):
    """Where x / scale lies within a few fp32 ulps of a midpoint between two 8-bit
    values: there the library's fp32 x * fl32(1 / scale) may round to the other side.
    Such ties are common with bfloat16 inputs (an element at exactly amax / 2, say).
    ``x_rel`` widens the window by the relative error of values the library computed
    in fp32 itself (x64 then being their float64 reference)."""
    y = np.abs(x64 / scale64)
    if dtype == "int8":
        step = np.ones_like(y)
    else:
        exponent = np.floor(np.log2(np.maximum(y, SMALLEST_SUBNORMAL[dtype])))
        step = np.maximum(2.0 ** (exponent - MANTISSA_BITS[dtype]), SMALLEST_SUBNORMAL[dtype])
    units = y / step
    return np.abs(units - np.floor(units) - 0.5) * step <= (TIE_WINDOW + x_rel) * y


def ordinal(q, dtype):
    """Each 8-bit value's position on the number line: neighbours differ by 1."""
    q = np.asarray(q)
    if dtype == "int8":
        return q.astype(np.int64)
    bits = q.view(np.uint8).astype(np.int64)
    return np.where(bits & 0x80, -(bits & 0x7F), bits & 0x7F)


def check_quantized(out, x64, scale64, dtype, x_rel=0.0):
    """out matches the reference, except at ties that fp32 and fp64 round apart (by
    one step there); no element unwritten; the dequantized error within half a step.
    ``out`` may live on a device.  ``x_rel``: see near_tie; it also widens the error
    bound by that much of |x|."""
    out = on_host(out)
    assert out.dtype == np_dtype(dtype) and out.shape == x64.shape
    if dtype == "int8":
        assert (out != -128).all(), "unwritten (poisoned) elements"
    else:
        assert not np.isnan(f64(out)).any(), "unwritten (poisoned) or NaN elements"
    steps = np.abs(ordinal(out, dtype) - ordinal(quant_reference(x64, scale64, dtype), dtype))
    assert steps.max(initial=0) <= 1, f"{(steps > 1).sum()} elements off by more than one step"
    off = (steps != 0) & ~near_tie(x64, scale64, dtype, x_rel)
    assert not off.any(), f"{off.sum()} of {off.size} elements rounded apart from the reference away from a tie"
    inside = np.abs(x64 / scale64) <= QMAX[dtype]  # saturated elements have no error bound
    err = np.abs(f64(out) * scale64 - x64)
    if dtype == "int8":
        bound = 0.5 * scale64 * (1 + 1e-5)
    else:
        half_ulp = 2.0 ** -(MANTISSA_BITS[dtype] + 1) * (1 + 2.0 ** -MANTISSA_BITS[dtype])
        bound = half_ulp * np.abs(x64) + 0.5 * SMALLEST_SUBNORMAL[dtype] * scale64 * (1 + 1e-5)
    # near_tie's window too: an element that fp32 rounds to the other side of a
    # tie lies up to that much past half a step (x / scale = 72.5000058 -> 72).
    bound = np.broadcast_to(bound + (TIE_WINDOW + x_rel) * np.abs(x64), x64.shape)
    assert (err <= bound)[inside].all(), "dequantized error above half a step"


def jax_cpu(a):
    """A NumPy array as a JAX array on the CPU (JAX's default device may be a GPU)."""
    import jax
    return jax.device_put(a, jax.devices("cpu")[0])


def rerun_gpu_tests_forced(variable, value, *pytest_args):
    """Reruns GPU tests in a child pytest with a kernel-choice variable set (the
    library reads AITER_*_KERNEL once a process, so a forced run needs its own):
    `pytest_args` name the test files (beside this one) and any -k filter.
    Skips without a CUDA GPU; fails if the child fails or passes nothing."""
    import os
    import subprocess
    import sys
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if not cuda:
        pytest.skip("no CUDA GPU")
    here = os.path.dirname(os.path.abspath(__file__))
    args = [a if a.startswith("-") or not a.endswith(".py") else os.path.join(here, a) for a in pytest_args]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", *args],
                         capture_output=True, text=True, env=dict(os.environ, **{variable: value}), cwd=here,
                         timeout=1800)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
