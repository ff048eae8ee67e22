"""libaiter: fast LLM-inference operators for any array library.

Every op takes arrays from NumPy, PyTorch, JAX, CuPy or anything with
``__dlpack__`` and returns results of the caller's array type on the caller's
device.  Outputs are allocated unless passed as ``out=``.  Failures raise
``aiter.AiterError`` subclasses carrying the library's message.
"""
from ._log_level import normalize_environment as _normalize_log_level

_normalize_log_level()  # before the library can read AITER_LOG_LEVEL: any case, a warning if unknown

from . import dtypes, tuning  # noqa: E402
from ._lib import ffi as _ffi, lib as _lib, library_path
from .errors import (AiterError, DeviceError, InternalError, InvalidArgumentError, NoDeviceError,
                     NoKernelError, OutOfMemoryError, UnsupportedDtypeError, UnsupportedShapeError)
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _op_names
from .convenience import attention, linear, matmul, quantize, set_log_level  # noqa: E402,F401

__version__ = _ffi.string(_lib.aiter_version_string()).decode()

if "torch" in __import__("sys").modules:
    # torch is loaded already: register torch.ops.aiter now (tens of ms), so that
    # aiter.rmsnorm(t) works inside torch.compile from its first call.
    from . import torch as _torch_ops  # noqa: F401


def library_info():
    """Version, backends, GPU targets and CPU threads of the loaded library."""
    from ._lib import check
    info = _ffi.new("aiter_library_info *")
    info.struct_size = _ffi.sizeof("aiter_library_info")
    check(_lib.aiter_get_library_info(info))
    backends = [name for bit, name in ((1, "cpu"), (2, "cuda"), (4, "hip")) if info.backends & bit]
    targets = _ffi.string(info.gpu_targets).decode()
    return {
        "version": f"{info.version_major}.{info.version_minor}.{info.version_patch}",
        "backends": backends,
        "gpu_targets": [t for t in targets.split(",") if t],
        "build_config": _ffi.string(info.build_config).decode(),
        "cpu_threads": info.cpu_threads,
        "kernel_dir": _ffi.string(info.kernel_dir).decode(),
        "cpu_isa": _ffi.string(info.cpu_isa).decode(),
        "cpu_libraries": [s for s in _ffi.string(info.cpu_libraries).decode().split(",") if s],
        "library_path": library_path,
    }


__all__ = ["AiterError", "InvalidArgumentError", "UnsupportedDtypeError", "UnsupportedShapeError",
           "NoDeviceError", "NoKernelError", "OutOfMemoryError", "DeviceError", "InternalError",
           "dtypes", "tuning", "library_info", "__version__", "matmul", "linear", "attention",
           "quantize", "set_log_level"] + list(_op_names)
