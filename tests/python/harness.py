"""Shared test helpers: dtypes, fresh random inputs, poisoned outputs, and
comparison with float64 NumPy references at tolerances that fit each dtype.

The references in the test files are written independently of libaiter, in
float64 NumPy; nothing here calls the library.
"""
import numpy as np

try:
    import ml_dtypes
except ImportError:  # the suite installs it; keep import errors readable
    ml_dtypes = None

FLOAT_DTYPES = ["float32", "float16", "bfloat16"]
FP8_DTYPES = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"]

# Elementwise tolerances (rtol, atol) for results rounded once to the dtype,
# after fp32 arithmetic: a few units in the last place.
TOLERANCE = {
    "float32": (2e-5, 2e-5),
    "float16": (4e-3, 4e-3),
    "bfloat16": (2e-2, 2e-2),
}


def np_dtype(name):
    """NumPy dtype for a libaiter dtype name (bfloat16 / fp8 through ml_dtypes)."""
    if name == "bfloat16" or name.startswith("float8"):
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
