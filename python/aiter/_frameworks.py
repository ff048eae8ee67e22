"""What libaiter needs from each array library: describe an array as a DLTensor,
allocate an output like an input, and hand results back as the caller's type.

NumPy and PyTorch arrays are described directly (their data pointer, shape and
strides: no capsule, and NumPy bfloat16/fp8 from ml_dtypes work too); anything
else goes through the standard ``__dlpack__`` protocol.
"""
import ctypes

import numpy as np

from . import dtypes
from .errors import InvalidArgumentError, UnsupportedDtypeError

KDL_CPU, KDL_CUDA, KDL_ROCM = 1, 2, 10

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class Described:
    """Plain facts about an array: what a DLTensor holds."""
    __slots__ = ("data", "shape", "strides", "dtype", "device_type", "device_id", "capsule", "managed")

    def __init__(self, data, shape, strides, dtype, device_type=KDL_CPU, device_id=0):
        self.data, self.shape, self.strides, self.dtype = data, tuple(shape), strides, dtype
        self.device_type, self.device_id = device_type, device_id
        self.capsule = self.managed = None


def _numpy_dtype(name):
    if name in ("bfloat16",) + dtypes.FP8_TYPES:
        try:
            import ml_dtypes
        except ImportError:
            raise UnsupportedDtypeError(
                f"dtype {name}: NumPy needs the ml_dtypes package for it (pip install ml_dtypes)") from None
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


class NumpyAdapter:
    name = "numpy"

    @staticmethod
    def describe(arr, what, stream=None):
        name = arr.dtype.name
        if name not in dtypes.DLPACK:
            raise UnsupportedDtypeError(f"{what}: unsupported dtype {arr.dtype}")
        item = arr.itemsize
        if any(s % item for s in arr.strides):
            raise InvalidArgumentError(f"{what}: strides {arr.strides} are not multiples of the item size {item}")
        data = arr.__array_interface__["data"][0]
        return Described(data, arr.shape, tuple(s // item for s in arr.strides), name)

    @staticmethod
    def empty(shape, dtype, like):
        return np.empty(shape, dtype=_numpy_dtype(dtype))

    @staticmethod
    def writable(arr, what):
        if not arr.flags.writeable:
            raise InvalidArgumentError(f"{what}: the array is read-only")
        return arr

    @staticmethod
    def finish(arr, like):
        return arr

    @staticmethod
    def stream(like):
        return None


class TorchAdapter:
    name = "torch"

    @staticmethod
    def describe(t, what, stream=None):
        name = _TORCH_DTYPE_NAMES.get(t.dtype)
        if name is None:
            name = str(t.dtype).replace("torch.", "")
            if name not in dtypes.DLPACK:
                raise UnsupportedDtypeError(f"{what}: unsupported dtype {t.dtype}")
            _TORCH_DTYPE_NAMES[t.dtype] = name
        if t.is_cuda:
            kind, index = _torch_gpu_kind(), t.get_device()
        elif t.device.type == "cpu":
            kind, index = KDL_CPU, 0
        else:
            raise InvalidArgumentError(f"{what}: device {t.device} is not supported (expected cpu or cuda)")
        return Described(t.data_ptr(), t.shape, t.stride(), name, kind, index)

    @staticmethod
    def empty(shape, dtype, like):
        import torch
        return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)

    @staticmethod
    def writable(t, what):
        return t

    @staticmethod
    def finish(t, like):
        return t

    @staticmethod
    def stream(like):
        if like.device.type != "cuda":
            return None
        import torch
        return torch.cuda.current_stream(like.device).cuda_stream


_TORCH_DTYPE_NAMES = {}


def _torch_gpu_kind():
    import torch
    return KDL_ROCM if torch.version.hip else KDL_CUDA


class DLPackAdapter:
    """Any other array with __dlpack__; outputs come back as NumPy arrays on the host."""
    name = "dlpack"

    @staticmethod
    def describe(obj, what, stream=None):
        capsule = _export(obj, what, stream)
        return _from_capsule(capsule, what)

    @staticmethod
    def empty(shape, dtype, like):
        return NumpyAdapter.empty(shape, dtype, like)

    @staticmethod
    def writable(obj, what):
        return obj

    @staticmethod
    def finish(arr, like):
        return arr

    @staticmethod
    def stream(like):
        return None


class JaxAdapter(DLPackAdapter):
    """Eager calls with JAX arrays (``aiter.rmsnorm(jax_array)``).  JAX arrays
    are immutable, and outside a compiled computation JAX has no stream to
    share.  On the CPU, outputs are computed in host buffers and returned as
    new JAX arrays, and in-place ops work on copies.  On a GPU, outputs are new
    device arrays written on the default stream, which is synchronized before
    they are handed to JAX; in-place ops work on device copies.  ``aiter.jax``
    has the same ops as XLA custom calls: usable inside ``jax.jit``, on XLA's
    own stream, with no synchronization."""
    name = "jax"

    @staticmethod
    def _on_gpu(arr):
        return arr.__dlpack_device__()[0] != KDL_CPU

    @staticmethod
    def empty(shape, dtype, like):
        if not JaxAdapter._on_gpu(like):
            return NumpyAdapter.empty(shape, dtype, like)
        import jax.numpy as jnp
        return jnp.empty(shape, dtype=jnp.dtype(dtype), device=next(iter(like.devices())))

    @staticmethod
    def writable(arr, what):
        if not JaxAdapter._on_gpu(arr):
            return np.array(arr)
        import jax.numpy as jnp
        return jnp.array(arr, copy=True)

    @staticmethod
    def finish(arr, like):
        import jax
        if not JaxAdapter._on_gpu(like):
            return jax.device_put(arr, next(iter(like.devices())))
        from ._lib import check, ffi, lib
        kind, index = arr.__dlpack_device__()
        check(lib.aiter_synchronize({"device_type": int(kind), "device_id": int(index)}, ffi.NULL))
        return arr


class CupyAdapter(DLPackAdapter):
    name = "cupy"

    @staticmethod
    def empty(shape, dtype, like):
        import cupy
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=dtype)

    @staticmethod
    def stream(like):
        import cupy
        return cupy.cuda.get_current_stream().ptr


# The DLPack protocol's name for the legacy default stream: 1 on CUDA (where 0 is
# ambiguous), 0 on ROCm (where 1 and 2 are not allowed).
_DEFAULT_STREAM = {KDL_CUDA: 1, KDL_ROCM: 0}


def _export(obj, what, stream):
    """The array's DLPack capsule.  A GPU producer is told the stream the op runs
    on (or the legacy default stream), so it orders its pending writes before it."""
    if not hasattr(obj, "__dlpack__"):
        raise InvalidArgumentError(f"{what}: expected an array (NumPy, PyTorch, JAX, CuPy or any object with "
                                   f"__dlpack__), got {type(obj).__name__}")
    kwargs = {}
    kind = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else None
    if kind in _DEFAULT_STREAM:
        kwargs["stream"] = stream or _DEFAULT_STREAM[kind]
    try:
        return obj.__dlpack__(max_version=(1, 1), **kwargs)
    except TypeError:
        return obj.__dlpack__(**kwargs)


def _from_capsule(capsule, what):
    from ._lib import ffi
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    kind = name(capsule)
    pointer = _capsule_pointer(capsule, kind)
    if kind == b"dltensor_versioned":
        managed = ffi.cast("DLManagedTensorVersioned *", pointer)
        if managed.version.major != 1:
            raise InvalidArgumentError(f"{what}: DLPack major version {managed.version.major}, expected 1")
    elif kind == b"dltensor":
        managed = ffi.cast("DLManagedTensor *", pointer)
    else:
        raise InvalidArgumentError(f"{what}: __dlpack__ returned a capsule named {kind!r}")
    t = managed.dl_tensor
    key = (t.dtype.code, t.dtype.bits)
    if key not in dtypes.NAME_OF or t.dtype.lanes != 1:
        raise UnsupportedDtypeError(f"{what}: unsupported DLPack dtype code {t.dtype.code} bits {t.dtype.bits}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None if t.strides == ffi.NULL else tuple(t.strides[i] for i in range(t.ndim))
    d = Described(int(ffi.cast("uintptr_t", t.data)) + t.byte_offset, shape, strides, dtypes.NAME_OF[key],
                  int(t.device.device_type), int(t.device.device_id))
    d.capsule, d.managed = capsule, managed  # the capsule owns the memory until the call ends
    return d


_ADAPTER_BY_MODULE = {"torch": TorchAdapter, "jax": JaxAdapter, "jaxlib": JaxAdapter, "cupy": CupyAdapter}
_ADAPTER_BY_TYPE = {}


def adapter_for(obj):
    """The adapter of an array's library, by the module its type comes from."""
    kind = type(obj)
    adapter = _ADAPTER_BY_TYPE.get(kind)
    if adapter is None:
        if issubclass(kind, np.ndarray):
            adapter = NumpyAdapter
        else:
            adapter = _ADAPTER_BY_MODULE.get(kind.__module__.split(".", 1)[0], DLPackAdapter)
        _ADAPTER_BY_TYPE[kind] = adapter
    return adapter


def describe(obj, what, stream=None):
    return adapter_for(obj).describe(obj, what, stream)

