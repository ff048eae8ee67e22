"""The NumPy path of the call layer (aiter/_call.py): the data pointer read
through the buffer protocol for contiguous arrays and through a one-item view
for strided ones, decided once per (dtype, shape, strides); the NumPy
adapter's steps written out for arrays of type np.ndarray.  Each array must
still be read at its own address, in-place and out= arrays refused alike when
read-only, and other array types keep their own path.  float32 only: no
ml_dtypes needed."""
import numpy as np
import pytest

import aiter
from aiter import _call
from harness import assert_close, f64


def rms_ref(x, w, eps=1e-6):
    x, w = f64(x), f64(w)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def pointer(arr):
    return arr.__array_interface__["data"][0]


@pytest.mark.parametrize("make", [
    lambda b: b[2:9:3, 1:32],  # rows three apart, at an offset
    lambda b: b[:, 2:33][1:6],
    lambda b: b[1::2][:, 5:36],  # every other row, at an offset (the C library takes positive strides only)
], ids=["strided", "offset", "every-other-row"])
def test_strided_inputs_are_read_at_their_own_address(rng, make):
    base = rng.standard_normal((12, 40)).astype(np.float32)
    x = make(base)
    assert not x.flags.c_contiguous
    w = rng.standard_normal(x.shape[1]).astype(np.float32)
    for _ in range(2):  # the first call makes the template, the second uses it
        out = np.full(x.shape, np.nan, np.float32)
        aiter.rmsnorm(x, w, out=out)
        assert_close(out, rms_ref(x, w), "float32")


def test_pointer_way_matches_the_array_interface(rng):
    base = rng.standard_normal((6, 8, 16)).astype(np.float32)
    views = (base, base[:, 2:5], base[::-1], base[:, :, ::2], base[:0], np.ones((), np.float32),
             np.broadcast_to(base[2, 3], (4, 8, 16)))  # reversed: data is the first item, not the lowest address
    for arr in views:
        _call._NUMPY.clear()
        arg = _call.Call("aiter_rmsnorm", like=arr).input(arr, "x")
        data = int(_call.ffi.cast("uintptr_t", arg.c.data))
        if arr.size:
            assert data == pointer(arr)
        assert tuple(arg.c.shape[i] for i in range(arr.ndim)) == arr.shape
        assert tuple(arg.c.strides[i] * 4 for i in range(arr.ndim)) == arr.strides
        assert arg.shape == arr.shape and arg.dtype == "float32"


def test_strided_in_place_updates_its_view(rng):
    """rope on q and k as strided views of one qkv array, as the demo calls it."""
    tokens, hq, hkv, d = 3, 4, 2, 16
    qkv = rng.standard_normal((tokens, hq + 2 * hkv, d)).astype(np.float32)
    q, k = qkv[:, :hq], qkv[:, hq:hq + hkv]
    before = qkv.copy()
    cache = aiter.rope_cos_sin_cache(64, d, 10000.0).astype(np.float32)
    positions = np.array([5, 0, 63], np.int64)
    aiter.rope(q, k, positions, cache)
    cos, sin = f64(cache[positions, : d // 2])[:, None], f64(cache[positions, d // 2:])[:, None]

    def neox(x):
        x1, x2 = f64(x[..., : d // 2]), f64(x[..., d // 2:])
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    assert_close(qkv[:, :hq], neox(before[:, :hq]), "float32")
    assert_close(qkv[:, hq:hq + hkv], neox(before[:, hq:hq + hkv]), "float32")
    np.testing.assert_array_equal(qkv[:, hq + hkv:], before[:, hq + hkv:])  # v untouched


def test_read_only_out_and_in_place_arrays_are_refused(rng):
    x = rng.standard_normal((2, 16)).astype(np.float32)
    w = np.ones(16, np.float32)
    out = np.zeros_like(x)
    out.setflags(write=False)
    with pytest.raises(aiter.InvalidArgumentError, match="out: the array is read-only"):
        aiter.rmsnorm(x, w, out=out)
    q = rng.standard_normal((2, 2, 16)).astype(np.float32)
    q.setflags(write=False)
    cache = aiter.rope_cos_sin_cache(8, 16, 10000.0).astype(np.float32)
    with pytest.raises(aiter.InvalidArgumentError, match="q: the array is read-only"):
        aiter.rope(q, None, np.zeros(2, np.int64), cache)


def test_ndarray_subclasses_and_non_arrays_keep_their_path(rng):
    class Sub(np.ndarray):
        pass

    x = rng.standard_normal((3, 24)).astype(np.float32).view(Sub)
    w = rng.standard_normal(24).astype(np.float32)
    assert_close(np.asarray(aiter.rmsnorm(x, w)), rms_ref(np.asarray(x), w), "float32")
    with pytest.raises(aiter.InvalidArgumentError, match="weight: expected an array"):
        aiter.rmsnorm(np.ones((2, 4), np.float32), [1.0, 2.0, 3.0, 4.0])


def test_outputs_of_each_dtype_name_are_made_once(rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    w = rng.standard_normal(64).astype(np.float32)
    first = aiter.rmsnorm(x, w)
    second = aiter.rmsnorm(x, w)
    assert first is not second and not np.shares_memory(first, second)
    assert first.dtype == np.float32 and _call._NUMPY_DTYPES["float32"] == np.dtype(np.float32)
    np.testing.assert_array_equal(first, second)
