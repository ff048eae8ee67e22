"""Loading libaiter_xla.so with ctypes and registering its XLA FFI targets with
JAX, once, at the first op call.

Where the library comes from, first match wins:
  1. $AITER_XLA_LIBRARY, a path to libaiter_xla.so;
  2. beside the libaiter.so.0 that aiter loaded (wheels, system installs in
     libdir), or in libaiter/xla/ below it (a meson build tree);
  3. when aiter loaded libaiter by its bare name (a system install), the
     dynamic loader's search path.
It is built only where jaxlib's XLA FFI headers were found at build time.
"""
import ctypes
import os
import threading

from .._lib import library_path
from ..errors import AiterError

_NAME = "libaiter_xla.so"
# Each handler table row: jax platform name -> its column in aiter_xla_target.
_PLATFORMS = {"cpu": "cpu", "CUDA": "cuda", "ROCM": "rocm"}


def _graph_traits():
    """The XLA trait that lets XLA trace a call into a CUDA/HIP graph (a command
    buffer): every libaiter op launches the same kernels for the same shapes on
    the stream it is given and never synchronizes or allocates there.  None
    where this jaxlib has no such trait."""
    try:
        from jax._src.lib import xla_client
        return xla_client.CustomCallTargetTraits.COMMAND_BUFFER_COMPATIBLE
    except (ImportError, AttributeError):
        return None


class _Target(ctypes.Structure):  # aiter_xla_target, libaiter/xla/targets.cpp
    _fields_ = [("name", ctypes.c_char_p), ("cpu", ctypes.c_void_p), ("cuda", ctypes.c_void_p),
                ("rocm", ctypes.c_void_p), ("scalars", ctypes.c_char_p)]


def _candidates():
    env = os.environ.get("AITER_XLA_LIBRARY")
    if env:
        return [env]
    if os.sep not in library_path:
        return [_NAME]
    # Never the loader's search here: a shim found there may belong to another libaiter.
    folder = os.path.dirname(os.path.abspath(library_path))
    return [os.path.join(folder, _NAME), os.path.join(folder, "libaiter", "xla", _NAME)]


def _load():
    errors = []
    for candidate in _candidates():
        if os.sep in candidate and not os.path.exists(candidate):
            errors.append(f"{candidate}: no such file")
            continue
        try:
            return ctypes.CDLL(candidate), candidate
        except OSError as e:
            errors.append(f"{candidate}: {e}")
    raise AiterError("aiter.jax: could not load libaiter_xla.so, libaiter's XLA FFI targets (" + "; ".join(errors) +
                     "). It is built only where jaxlib's headers are found at build time: install jax, then "
                     "rebuild or reinstall libaiter (meson's summary says whether it was built), or set "
                     "AITER_XLA_LIBRARY")


_lock = threading.Lock()
_loaded = None  # (library, path); the library stays loaded: XLA holds pointers into it
scalars = {}  # target -> the names of its C function's scalar parameters (checked against the table by tests)


def register():
    """Loads libaiter_xla.so and registers every target for the cpu, CUDA and
    ROCM platforms (JAX keeps a platform's registrations until its plugin
    loads); later calls return at once.  Returns the path it was loaded from."""
    global _loaded
    with _lock:
        if _loaded is None:
            import jax.ffi
            library, path = _load()
            library.aiter_xla_targets.restype = ctypes.c_size_t
            library.aiter_xla_targets.argtypes = [ctypes.POINTER(ctypes.POINTER(_Target))]
            table = ctypes.POINTER(_Target)()
            traits = _graph_traits()
            for i in range(library.aiter_xla_targets(ctypes.byref(table))):
                row = table[i]
                scalars[row.name.decode()] = tuple(row.scalars.decode().split())
                for platform, column in _PLATFORMS.items():
                    handler = jax.ffi.pycapsule(getattr(row, column))
                    extra = {} if platform == "cpu" or traits is None else {"traits": traits}
                    jax.ffi.register_ffi_target(row.name.decode(), handler, platform=platform, **extra)
            _loaded = (library, path)
    return _loaded[1]
