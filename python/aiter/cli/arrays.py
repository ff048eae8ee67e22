"""The array library a benchmark or tuning run works with: NumPy on the CPU,
PyTorch (else CuPy) on a CUDA GPU.  Each gives random inputs in any libaiter
dtype, float64 copies for references, and a timer that fits the device."""
import statistics
import time

import numpy as np

from ..errors import AiterError, UnsupportedDtypeError


class NumpyArrays:
    """CPU arrays; bfloat16 and fp8 through ml_dtypes.  Timing: perf_counter per
    call after warm-up, the median of the calls."""
    device = "cpu"
    cache_bytes = 0  # timed as is: no copies of the inputs to step past a cache

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def _dtype(self, name):
        if name == "bfloat16" or name.startswith("float8"):
            try:
                import ml_dtypes
            except ImportError:
                raise UnsupportedDtypeError(f"{name} on the CPU needs ml_dtypes (pip install ml_dtypes)") from None
            return np.dtype(getattr(ml_dtypes, name))
        return np.dtype(name)

    def randn(self, shape, dtype, scale=1.0):
        return (self.rng.standard_normal(shape, dtype=np.float32) * scale).astype(self._dtype(dtype))

    def uniform(self, shape, low, high):
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def randint8(self, shape):
        return self.rng.integers(-127, 128, size=shape, dtype=np.int8)

    def nan_filled(self, shape, dtype):
        return np.full(shape, np.nan, dtype=self._dtype(dtype))

    @staticmethod
    def f64(x):
        return np.asarray(x).astype(np.float64)

    @staticmethod
    def repeat(x, count, axis):
        return np.repeat(x, count, axis=axis)

    @staticmethod
    def mT(x):
        return np.swapaxes(x, -1, -2)

    @staticmethod
    def max_abs(x):
        return float(np.max(np.abs(x))) if x.size else 0.0

    @staticmethod
    def time_us(fn, iters, warmup=2):
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(max(iters, 1)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e6


class TorchArrays:
    """CUDA tensors; timing with CUDA events around `iters` back-to-back calls."""

    def __init__(self, device="cuda", seed=0):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(self.device)
        self.gen = torch.Generator(device=self.device).manual_seed(seed)
        self.cache_bytes = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 50 << 20)

    def _dtype(self, name):
        return getattr(self.torch, name)

    def randn(self, shape, dtype, scale=1.0):
        x = self.torch.randn(shape, device=self.device, generator=self.gen) * scale
        return x.to(self._dtype(dtype))

    def uniform(self, shape, low, high):
        return self.torch.rand(shape, device=self.device, generator=self.gen) * (high - low) + low

    def randint8(self, shape):
        return self.torch.randint(-127, 128, shape, device=self.device, generator=self.gen, dtype=self.torch.int8)

    def nan_filled(self, shape, dtype):
        return self.torch.full(shape, float("nan"), device=self.device, dtype=self._dtype(dtype))

    def f64(self, x):
        return x.to(self.torch.float32).to(self.torch.float64) if x.element_size() == 1 else x.double()

    @staticmethod
    def repeat(x, count, axis):
        return x.repeat_interleave(count, dim=axis)

    @staticmethod
    def mT(x):
        return x.transpose(-1, -2)

    @staticmethod
    def max_abs(x):
        return float(x.abs().max()) if x.numel() else 0.0

    def time_us(self, fn, iters, warmup=3):
        """Time of one call, from replays of a CUDA graph of the calls (the
        median replay over the calls in it), so that Python's per-call overhead
        does not hide short kernels."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(max(warmup, 1)):  # one call at least: see the capture below
                fn()
        torch.cuda.current_stream().wait_stream(side)
        calls = max(1, min(iters, 20))
        graph = torch.cuda.CUDAGraph()
        # Captured on the warm-up stream: a vendor BLAS variant keeps its
        # workspace per stream, made at its first call there, and cannot make
        # one while being captured (it would fail the capture, H100 2026-11-27).
        with torch.cuda.graph(graph, stream=side):
            for _ in range(calls):
                fn()
        graph.replay()
        # Replays timed one by one, their median taken: one replay of a few
        # short calls (tens of microseconds) varied by up to 10% run to run,
        # enough to pick the wrong variant; long replays are steady already.
        times = []
        while len(times) < max(1, iters // calls) or (len(times) < 9 and sum(times) < 20.0):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))  # milliseconds
        return statistics.median(times) * 1e3 / calls


class CupyArrays:
    """CUDA arrays through CuPy, which has no bfloat16 or fp8 (use torch for those)."""

    def __init__(self, device="cuda", seed=0):
        import cupy
        self.cp = cupy
        _, _, index = str(device).partition(":")
        cupy.cuda.Device(int(index or 0)).use()
        self.device = device
        self.rs = cupy.random.RandomState(seed)
        self.cache_bytes = cupy.cuda.runtime.getDeviceProperties(int(index or 0))["l2CacheSize"]

    def _dtype(self, name):
        if name == "bfloat16" or name.startswith("float8"):
            raise AiterError(f"{name} on the GPU needs PyTorch (CuPy has no {name})")
        return self.cp.dtype(name)

    def randn(self, shape, dtype, scale=1.0):
        return (self.rs.standard_normal(shape, dtype=self.cp.float32) * scale).astype(self._dtype(dtype))

    def uniform(self, shape, low, high):
        return self.rs.uniform(low, high, shape).astype(self.cp.float32)

    def randint8(self, shape):
        return self.rs.randint(-127, 128, size=shape).astype(self.cp.int8)

    def nan_filled(self, shape, dtype):
        return self.cp.full(shape, self.cp.nan, dtype=self._dtype(dtype))

    def f64(self, x):
        return x.astype(self.cp.float64)

    def repeat(self, x, count, axis):
        return self.cp.repeat(x, count, axis=axis)

    def mT(self, x):
        return self.cp.swapaxes(x, -1, -2)

    def max_abs(self, x):
        return float(self.cp.abs(x).max()) if x.size else 0.0

    def time_us(self, fn, iters, warmup=3):
        cp = self.cp
        for _ in range(warmup):
            fn()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(max(iters, 1)):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e3 / max(iters, 1)


def arrays_for(device, seed=0):
    """The array library for "cpu" or "cuda[:N]"."""
    if device == "cpu":
        return NumpyArrays(seed)
    try:
        import torch
        if torch.cuda.is_available():
            return TorchArrays(device, seed)
    except ImportError:
        pass
    try:
        import cupy  # noqa: F401
        return CupyArrays(device, seed)
    except ImportError:
        pass
    raise AiterError(f"--device {device}: needs PyTorch with CUDA (or CuPy) to make GPU arrays; neither is usable")


def resolve_device(device):
    """--device auto -> "cuda" when libaiter has a CUDA backend and PyTorch or CuPy
    sees a GPU, else "cpu"; other values pass through."""
    if device != "auto":
        return device
    import aiter
    if "cuda" not in aiter.library_info()["backends"]:
        return "cpu"
    try:
        import torch
        if torch.cuda.is_available():
            return "cuda"
    except ImportError:
        pass
    try:
        import cupy
        return "cuda" if cupy.cuda.runtime.getDeviceCount() > 0 else "cpu"
    except Exception:  # no CuPy, or no usable CUDA runtime
        return "cpu"
