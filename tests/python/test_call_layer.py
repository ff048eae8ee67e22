"""The Python call layer's caches (aiter/_call.py): one filled-in DLTensor kept
per dtype, shape, strides and device and copied by each call, NumPy data
pointers read through the buffer protocol, the C functions resolved at import.
Each call must still see its own array: its data, its offset into a larger
array, its strides.  NumPy only (float32 / float16: no ml_dtypes needed)."""
import subprocess
import sys

import numpy as np
import pytest

import aiter
from aiter import _call
from harness import assert_close, f64


def rms_ref(x, w, eps=1e-6):
    x, w = f64(x), f64(w)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def nan_out(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_arrays_of_one_shape_each_give_their_own_result(rng, dtype):
    """The cached DLTensor carries shape and strides; the data is each call's own."""
    w = rng.standard_normal(67).astype(dtype)
    xs = [rng.standard_normal((5, 67)).astype(dtype) for _ in range(3)]
    for x in xs + xs[::-1]:
        out = nan_out(x.shape, dtype)
        aiter.rmsnorm(x, w, out=out)
        assert_close(out, rms_ref(x, w), dtype)


def test_views_offsets_and_strides_of_one_shape(rng):
    """Three arrays of shape (4, 33): contiguous, a contiguous view at an offset,
    a strided view; one template each (the strides differ), the right data each."""
    base = rng.standard_normal((9, 33)).astype(np.float32)
    wide = rng.standard_normal((4, 80)).astype(np.float32)
    w = rng.standard_normal(33).astype(np.float32)
    for x in (base[:4].copy(), base[5:], wide[:, 7:40], base[1:9:2]):
        assert x.shape == (4, 33)
        got = aiter.rmsnorm(x, w)
        assert_close(got, rms_ref(x, w), "float32")


def test_read_only_inputs_are_read(rng):
    x = rng.standard_normal((3, 48)).astype(np.float32)
    w = rng.standard_normal(48).astype(np.float32)
    x.setflags(write=False)
    w.setflags(write=False)
    assert_close(aiter.rmsnorm(x, w), rms_ref(x, w), "float32")


def test_empty_rows(rng):
    x = np.empty((0, 16), np.float32)
    got = aiter.rmsnorm(x, rng.standard_normal(16).astype(np.float32))
    assert got.shape == (0, 16)


def test_other_byte_order_is_refused(rng):
    x = rng.standard_normal((2, 8)).astype(">f4")
    with pytest.raises(aiter.UnsupportedDtypeError, match="byte order"):
        aiter.rmsnorm(x, np.ones(8, np.float32))


def test_the_template_cache_stays_bounded(rng, monkeypatch):
    monkeypatch.setattr(_call, "_MAX_TEMPLATES", 3)
    _call._TEMPLATES.clear()
    _call._NUMPY.clear()
    w = rng.standard_normal(40).astype(np.float32)
    for rows in range(1, 9):
        x = rng.standard_normal((rows, 40)).astype(np.float32)
        out = nan_out(x.shape, np.float32)
        aiter.rmsnorm(x, w, out=out)
        assert_close(out, rms_ref(x, w), "float32")
        assert len(_call._TEMPLATES) <= 3 and len(_call._NUMPY) <= 3


def test_op_functions_are_resolved_at_import():
    """The first call of an op does no cffi symbol look-up (25-120 us each)."""
    code = "import aiter, aiter._call as c; print('aiter_rmsnorm' in c._FUNCTIONS, 'aiter_gemm_a16w16' in c._FUNCTIONS)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True"]


def test_argument_types_come_from_the_declarations():
    """arg_type gives the type ffi.typeof would parse, from a function's
    declaration (and parses the string where the function lacks it)."""
    from aiter._lib import ffi
    for symbol, cname in [("aiter_attention_params_init", "aiter_attention_params *"),
                          ("aiter_rmsnorm", "DLTensor *"),
                          ("aiter_paged_decode_attention_workspace_size", "size_t *"),
                          ("aiter_rmsnorm", "aiter_mla_params *"),  # not its argument
                          ("aiter_no_such_function", "int64_t *")]:
        assert _call.arg_type(symbol, cname) == ffi.typeof(cname)
