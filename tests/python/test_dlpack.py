"""Arrays in and out: NumPy, PyTorch and JAX on the CPU, any __dlpack__ object,
strided views, out=, and clear errors for what cannot be used."""
import subprocess
import sys

import numpy as np
import pytest

import aiter
from harness import assert_close, f64, jax_cpu, rand

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")


def rms_ref(x, w, eps=1e-6):
    x, w = f64(x), f64(w)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_torch_in_torch_out(dtype):
    tdt = getattr(torch, dtype)
    x, w = torch.randn(6, 96, dtype=tdt), torch.randn(96, dtype=tdt)
    y = aiter.rmsnorm(x, w)
    assert isinstance(y, torch.Tensor) and y.dtype == tdt and y.shape == x.shape
    assert_close(y, rms_ref(x, w), dtype)


def test_torch_out_is_written_in_place_and_views_are_honoured():
    big = torch.randn(8, 200)
    x = big[1::2, 8:136]  # a strided view: rows 400 elements apart
    w = torch.randn(128)
    out = torch.full((4, 128), float("nan"))
    got = aiter.rmsnorm(x, w, out=out)
    assert got is out
    assert_close(out, rms_ref(x, w), "float32")
    transposed = torch.randn(128, 4).t()  # last dim not contiguous: rejected, not misread
    with pytest.raises(aiter.InvalidArgumentError, match="unit stride"):
        aiter.rmsnorm(transposed, torch.randn(4))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_jax_in_jax_out(dtype):
    rng = np.random.default_rng()
    x = jax_cpu(rand(rng, (5, 64), dtype))
    w = jax_cpu(rand(rng, (64,), dtype))
    y = aiter.rmsnorm(x, w)
    assert isinstance(y, jax.Array) and str(y.dtype) == dtype
    assert list(y.devices())[0].platform == "cpu"
    assert_close(np.asarray(y), rms_ref(np.asarray(x), np.asarray(w)), dtype)


def test_jax_out_is_refused_because_jax_arrays_are_immutable():
    x = jax_cpu(np.ones((2, 8), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="immutable"):
        aiter.rmsnorm(x, jax_cpu(np.ones(8, np.float32)), out=jax_cpu(np.zeros((2, 8), np.float32)))


def test_numpy_bfloat16_through_ml_dtypes(rng):
    x, w = rand(rng, (3, 40), "bfloat16"), rand(rng, (40,), "bfloat16")
    y = aiter.rmsnorm(x, w)
    assert isinstance(y, np.ndarray) and y.dtype == x.dtype
    assert_close(y, rms_ref(x, w), "bfloat16")


class OnlyDLPack:
    """An array type libaiter knows nothing about but the protocol."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_any_dlpack_object(rng):
    x, w = rand(rng, (4, 32), "float32"), rand(rng, (32,), "float32")
    y = aiter.rmsnorm(OnlyDLPack(x), OnlyDLPack(w))
    assert isinstance(y, np.ndarray)
    assert_close(y, rms_ref(x, w), "float32")


class ClaimsGpu(OnlyDLPack):
    """Host memory that reports a GPU device type and records the stream it is asked
    to order its writes before; the capsule it returns is the host array's."""

    def __init__(self, a, kind):
        super().__init__(a)
        self.kind, self.streams = kind, []

    def __dlpack__(self, stream=None, **kwargs):
        self.streams.append(stream)
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (self.kind, 0)


@pytest.mark.parametrize("kind, default_stream", [(2, 1), (10, 0)], ids=["cuda", "rocm"])
def test_gpu_producers_are_given_their_default_stream(rng, kind, default_stream):
    """The protocol names the legacy default stream 1 on CUDA but 0 on ROCm, where
    1 is not allowed."""
    x, w = rand(rng, (3, 24), "float32"), rand(rng, (24,), "float32")
    gx, gw = ClaimsGpu(x, kind), ClaimsGpu(w, kind)
    assert_close(aiter.rmsnorm(gx, gw), rms_ref(x, w), "float32")
    assert gx.streams == [default_stream] and gw.streams == [default_stream]


def test_mixed_frameworks_in_one_call(rng):
    x = torch.randn(3, 16)
    w = rand(rng, (16,), "float32")  # NumPy weight with a torch input: both host memory
    assert_close(aiter.rmsnorm(x, w), rms_ref(x, w), "float32")


def test_not_an_array():
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected an array"):
        aiter.rmsnorm([[1.0, 2.0]], np.ones(2, np.float32))


def test_read_only_output_is_refused(rng):
    x, w = rand(rng, (2, 8), "float32"), rand(rng, (8,), "float32")
    out = np.zeros((2, 8), np.float32)
    out.flags.writeable = False
    with pytest.raises(aiter.InvalidArgumentError, match="read-only"):
        aiter.rmsnorm(x, w, out=out)


def test_reversed_view_is_refused(rng):
    x = rand(rng, (4, 8), "float32")[::-1]
    with pytest.raises(aiter.InvalidArgumentError, match="negative stride"):
        aiter.rmsnorm(x, np.ones(8, np.float32))


def test_unsupported_numpy_dtype():
    with pytest.raises(aiter.UnsupportedDtypeError):
        aiter.rmsnorm(np.ones((2, 4), np.complex64), np.ones(4, np.float32))


def test_errors_are_value_and_runtime_errors():
    assert issubclass(aiter.InvalidArgumentError, ValueError)
    assert issubclass(aiter.UnsupportedDtypeError, ValueError)
    assert issubclass(aiter.NoDeviceError, RuntimeError)
    assert issubclass(aiter.DeviceError, RuntimeError)
    assert aiter.InvalidArgumentError("m").status == 1


def test_import_needs_no_framework_and_compiles_nothing():
    code = ("import sys, aiter; heavy = [m for m in ('torch', 'jax', 'cupy') if m in sys.modules]; "
            "print(heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_library_info():
    info = aiter.library_info()
    assert info["version"] == aiter.__version__
    assert "cpu" in info["backends"] and info["cpu_threads"] >= 1
