"""One op call from Python: arguments to DLTensors, outputs allocated like the
first input, the C function run on the caller's stream, its status checked.

What a call would otherwise redo each time is kept: the C functions (cffi
resolves a symbol at its first use: 25-120 us, more than the call it serves;
the op wrappers resolve theirs at import, see ``function``) and, per dtype,
shape, strides and device, a filled-in DLTensor that each call copies and
points at its data (building one from a dict took 1.6 us, describing a NumPy
array 5 us: four of these a call were most of a small op's time).
"""
import numpy as np

from ._frameworks import adapter_for, describe
from ._lib import check, ffi, lib
from .dtypes import DLPACK
from .errors import InvalidArgumentError, UnsupportedDtypeError

_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
_KDL_CPU = 1

_FUNCTIONS = {}


def function(symbol):
    """The C function ``symbol``, resolved once.  A symbol the loaded library
    lacks (an older libaiter under newer Python code) raises here, at its call."""
    found = _FUNCTIONS.get(symbol)
    if found is None:
        found = _FUNCTIONS[symbol] = getattr(lib, symbol)
    return found


_ARG_TYPES = {}


def arg_type(symbol, cname):
    """The C type ``cname`` (``"aiter_attention_params *"``) as C function
    ``symbol`` declares an argument: it comes with the declaration, whereas
    ``ffi.new(cname)`` parses the string, with every typedef of the header, at
    its first use (0.7 ms each here; 1-1.4 ms of the demo's first attention call)."""
    key = (symbol, cname)
    found = _ARG_TYPES.get(key)
    if found is None:
        try:
            found = next((t for t in ffi.typeof(function(symbol)).args if t.cname == cname), None)
        except AttributeError:  # a library without ``symbol``
            found = None
        if found is None:
            found = ffi.typeof(cname)  # parsed, as before
        _ARG_TYPES[key] = found
    return found


# C types resolved once: parsing a type string costs more than the call it serves.
_DLTENSOR_P, _VOID_P = arg_type("aiter_rmsnorm", "DLTensor *"), arg_type("aiter_rmsnorm", "void *")
_INT64_ARRAY = ffi.typeof("int64_t[]")
_SIZE_T = arg_type("aiter_paged_decode_attention_workspace_size", "size_t *").item  # for addresses too


def resolve_now(symbol):
    """Resolves ``symbol`` ahead of its first call where the library has it."""
    try:
        function(symbol)
    except (AttributeError, NotImplementedError):
        pass  # reported by the call, as before


# (dtype name, shape, strides, device) -> a DLTensor without data, and the shape /
# strides array it points at.  Bounded: a program that sees ever new shapes
# starts over rather than growing without end.
_TEMPLATES = {}
_MAX_TEMPLATES = 4096


def _template(dtype, shape, strides, device_type, device_id):
    key = (dtype, shape, strides, device_type, device_id)
    found = _TEMPLATES.get(key)
    if found is None:
        ndim = len(shape)
        dims = ffi.new(_INT64_ARRAY, shape + (strides or ()))
        code, bits = DLPACK[dtype]
        t = ffi.new(_DLTENSOR_P, {
            "device": (device_type, device_id), "ndim": ndim, "dtype": (code, bits, 1), "shape": dims,
            "strides": dims + ndim if strides is not None else ffi.NULL})
        if len(_TEMPLATES) >= _MAX_TEMPLATES:
            _TEMPLATES.clear()
        found = _TEMPLATES[key] = (t, dims)
    return found


# NumPy arrays: (dtype, shape, byte strides) -> (template, dims, dtype name, strides in items).
_NUMPY = {}


def _numpy_template(arr, what):
    dtype = arr.dtype
    name = dtype.name
    if name not in DLPACK or not dtype.isnative:
        raise UnsupportedDtypeError(f"{what}: unsupported dtype {dtype}" +
                                    ("" if dtype.isnative else " (not in the machine's byte order)"))
    item = arr.itemsize
    if any(s % item for s in arr.strides):
        raise InvalidArgumentError(f"{what}: strides {arr.strides} are not multiples of the item size {item}")
    strides = tuple(s // item for s in arr.strides)
    t, dims = _template(name, arr.shape, strides, _KDL_CPU, 0)
    if len(_NUMPY) >= _MAX_TEMPLATES:
        _NUMPY.clear()
    found = _NUMPY[(dtype, arr.shape, arr.strides)] = (t, dims, name)
    return found


class Arg:
    """An array seen by the C library; ``c`` is its ``DLTensor *``."""
    __slots__ = ("array", "c", "shape", "dtype", "_keep")

    def __init__(self, array, what, writable=False, stream=None):
        if type(array) is np.ndarray:
            self._numpy(array, what)
            return
        d = describe(array, what, stream)
        if writable and d.managed is not None and getattr(d.managed, "flags", 0) & _READ_ONLY:
            raise InvalidArgumentError(f"{what}: the array is read-only")
        self.array, self.shape, self.dtype = array, d.shape, d.dtype
        if d.managed is not None:
            self.c = ffi.addressof(d.managed[0], "dl_tensor")
            self._keep = (d.capsule,)
            return
        strides = None if d.strides is None else tuple(d.strides)
        template, self._keep = _template(d.dtype, tuple(d.shape), strides, d.device_type, d.device_id)
        self.c = ffi.new(_DLTENSOR_P, template[0])
        self.c.data = ffi.cast(_VOID_P, d.data)

    def _numpy(self, arr, what):
        found = _NUMPY.get((arr.dtype, arr.shape, arr.strides))
        template, self._keep, self.dtype = found or _numpy_template(arr, what)
        self.array, self.shape = arr, arr.shape
        self.c = ffi.new(_DLTENSOR_P, template[0])
        # from_buffer reads the pointer through the buffer protocol (0.2 us, against
        # 1.5 for __array_interface__), which hands out C-contiguous arrays only.
        if arr.flags.c_contiguous and arr.size:
            self.c.data = ffi.from_buffer(arr)
        else:
            self.c.data = ffi.cast(_VOID_P, arr.__array_interface__["data"][0])


class Call:
    """Usage: c = Call("aiter_rmsnorm", like=x); x_ = c.input(x, "x"); ...;
    c.run(out_.c, x_.c, ...); return c.result(out)."""

    def __init__(self, symbol, like):
        self.symbol = symbol
        self.adapter = adapter_for(like)
        self.like = like
        self.raw_stream = self.adapter.stream(like)
        self.stream = ffi.NULL if self.raw_stream is None else ffi.cast(_VOID_P, self.raw_stream)

    def input(self, array, name):
        return Arg(array, name, stream=self.raw_stream)

    def optional(self, array, name):
        return None if array is None else self.input(array, name)

    def output(self, out, name, shape, dtype):
        """The caller's ``out`` (checked by the library), or a new array like the first input."""
        if out is None:
            return Arg(self.adapter.empty(tuple(shape), dtype, self.like), name, True, self.raw_stream)
        if self.adapter.name == "jax":
            raise InvalidArgumentError(f"{name}: JAX arrays are immutable; leave {name}=None")
        return Arg(self.adapter.writable(out, name), name, True, self.raw_stream)

    def inplace(self, array, name):
        """An array the op updates in place (a copy for JAX, returned by result())."""
        return Arg(self.adapter.writable(array, name), name, True, self.raw_stream)

    def run(self, *args):
        check(function(self.symbol)(*args, self.stream))

    def result(self, arg):
        return self.adapter.finish(arg.array, self.like)


def c_or_null(arg):
    return ffi.NULL if arg is None else arg.c
