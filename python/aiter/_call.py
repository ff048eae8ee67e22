"""One op call from Python: arguments to DLTensors, outputs allocated like the
first input, the C function run on the caller's stream, its status checked.

What a call would otherwise redo each time is kept: the C functions (cffi
resolves a symbol at its first use: 25-120 us, more than the call it serves;
the op wrappers resolve theirs at import, see ``function``) and, per dtype,
shape, strides and device, a filled-in DLTensor that each call copies and
points at its data (building one from a dict took 1.6 us, describing a NumPy
array 5 us: four of these a call were most of a small op's time).
"""
import sys

import numpy as np

from ._frameworks import NumpyAdapter, adapter_for, describe
from ._frameworks import _numpy_dtype as numpy_dtype
from ._lib import check, ffi, lib
from .dtypes import DLPACK, FP8_TYPES
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


# NumPy arrays: (dtype, shape, byte strides) -> (template DLTensor, what keeps its
# shape / strides array alive, dtype name, shape, how the data pointer is read).
# Contiguity follows from the key, so it is decided once here rather than read
# from ``arr.flags`` each call.
_NUMPY = {}
_BUFFER, _FIRST_ITEM, _INTERFACE = 0, 1, 2


def _pointer_way(arr):
    """How to read ``arr``'s data pointer: through the buffer protocol (0.2 us)
    for a C-contiguous array, that of a view of its first item for a strided
    one (a one-item view is contiguous and starts where ``arr`` does: 0.3 us),
    ``__array_interface__`` (1.1 us) for an empty one."""
    if not arr.size:
        return _INTERFACE
    return _BUFFER if arr.flags.c_contiguous else _FIRST_ITEM


# NumPy dtype -> (name, DLPack code, bits, item size), for the dtypes libaiter takes.
# NumPy's own are filled in here, from their names: ``dtype.name`` is a
# Python-level property that costs 7-23 us the first time each dtype asks (the
# demo's first float32, int32 and int64 arrays paid it inside timed calls).
_DTYPES = {}
_ML_DTYPE_NAMES = ("bfloat16",) + FP8_TYPES  # ml_dtypes' types, not NumPy's
for _name, (_code, _bits) in DLPACK.items():
    if _name not in _ML_DTYPE_NAMES:
        _dt = np.dtype(_name)
        _DTYPES[_dt] = (_name, _code, _bits, _dt.itemsize)
del _name, _code, _bits, _dt


def _dtype_name(dtype):
    """``dtype.name``, for an ml_dtypes type by identity with the type of that
    name (``dtype.name`` took 10 us at bfloat16's first call)."""
    ml_dtypes = sys.modules.get("ml_dtypes")
    if ml_dtypes is not None:
        for name in _ML_DTYPE_NAMES:
            if dtype.type is getattr(ml_dtypes, name, None):
                return name
    return dtype.name


def _dtype_facts(dtype, what):
    found = _DTYPES.get(dtype)
    if found is None:
        name = _dtype_name(dtype)
        if name not in DLPACK or not dtype.isnative:
            raise UnsupportedDtypeError(f"{what}: unsupported dtype {dtype}" +
                                        ("" if dtype.isnative else " (not in the machine's byte order)"))
        found = _DTYPES[dtype] = (name,) + DLPACK[name] + (dtype.itemsize,)
    return found


def _numpy_template(arr, what):
    """The DLTensor of an array of this dtype, shape and strides, made once.  A
    process's first call at a new shape pays for it, with the interpreter's
    caches cold after a GEMM (about 8 us an array in the demo): few steps here."""
    dtype, shape, byte_strides = arr.dtype, arr.shape, arr.strides
    name, code, bits, item = _dtype_facts(dtype, what)
    if any(map(item.__rmod__, byte_strides)):
        raise InvalidArgumentError(f"{what}: strides {byte_strides} are not multiples of the item size {item}")
    ndim = len(shape)
    dims = _newp(_INT64_ARRAY, shape + tuple(map(item.__rfloordiv__, byte_strides)))
    t = _newp(_DLTENSOR_P, (ffi.NULL, (_KDL_CPU, 0), ndim, (code, bits, 1), dims, dims + ndim))
    if len(_NUMPY) >= _MAX_TEMPLATES:
        _NUMPY.clear()
    found = _NUMPY[(dtype, shape, byte_strides)] = (t[0], (t, dims), name, shape, _pointer_way(arr))
    return found


# cffi's C-level functions, without the Python-level wrappers of ``ffi.new`` and
# ``ffi.from_buffer`` (0.1-0.15 us each, four or more times a call).
_backend = getattr(ffi, "_backend", None)
if hasattr(_backend, "newp") and hasattr(_backend, "from_buffer"):
    _newp, _from_buffer_of = _backend.newp, _backend.from_buffer
else:
    _newp, _from_buffer_of = ffi.new, ffi.from_buffer
_CHAR_ARRAY = ffi.typeof("char[]")


def _strided_data(arr, way):
    """The data pointer of an array the buffer protocol does not hand out."""
    if way == _FIRST_ITEM:  # a one-item view is contiguous, and starts where arr does
        return _from_buffer_of(_CHAR_ARRAY, arr[_FIRST_ITEMS[arr.ndim]], False)
    return ffi.cast(_VOID_P, arr.__array_interface__["data"][0])


_FIRST_ITEMS = [(slice(0, 1),) * ndim for ndim in range(65)]  # NumPy allows 64 dimensions
_new_object = object.__new__
_ndarray = np.ndarray


def _fill_numpy(arg, arr, what):
    """Makes ``arg`` (an ``Arg``) describe a NumPy array (``type(arr) is np.ndarray``)."""
    found = _NUMPY.get((arr.dtype, arr.shape, arr.strides)) or _numpy_template(arr, what)
    template, arg._keep, arg.dtype, arg.shape, way = found
    arg.array = arr
    c = arg.c = _newp(_DLTENSOR_P, template)
    c.data = _from_buffer_of(_CHAR_ARRAY, arr, False) if way == _BUFFER else _strided_data(arr, way)
    return arg


def _numpy_arg(arr, what):
    return _fill_numpy(_new_object(Arg), arr, what)


class Arg:
    """An array seen by the C library; ``c`` is its ``DLTensor *``."""
    __slots__ = ("array", "c", "shape", "dtype", "_keep")

    def __init__(self, array, what, writable=False, stream=None):
        if type(array) is _ndarray:
            _fill_numpy(self, array, what)
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


# dtype name -> NumPy dtype, for outputs (bfloat16 and fp8 names import ml_dtypes).
_NUMPY_DTYPES = {}


def _numpy_empty(shape, dtype):
    np_dtype = _NUMPY_DTYPES.get(dtype)
    if np_dtype is None:
        np_dtype = _NUMPY_DTYPES[dtype] = numpy_dtype(dtype)
    return np.empty(tuple(shape), dtype=np_dtype)


def _writable_numpy(arr, name):
    if not arr.flags.writeable:
        raise InvalidArgumentError(f"{name}: the array is read-only")
    return _numpy_arg(arr, name)


class Call:
    """Usage: c = Call("aiter_rmsnorm", like=x); x_ = c.input(x, "x"); ...;
    c.run(out_.c, x_.c, ...); return c.result(out).

    A call whose first array is a NumPy array (``numpy``) takes the NumPy
    adapter's steps written out here: the demo's CPU path, 10-20 us a call."""

    def __init__(self, symbol, like):
        self.symbol = symbol
        self.like = like
        self.numpy = type(like) is _ndarray
        if self.numpy:
            self.adapter, self.raw_stream, self.stream = NumpyAdapter, None, ffi.NULL
            return
        self.adapter = adapter_for(like)
        self.raw_stream = self.adapter.stream(like)
        self.stream = ffi.NULL if self.raw_stream is None else ffi.cast(_VOID_P, self.raw_stream)

    def input(self, array, name):
        if type(array) is _ndarray:
            return _numpy_arg(array, name)
        return Arg(array, name, stream=self.raw_stream)

    def optional(self, array, name):
        return None if array is None else self.input(array, name)

    def output(self, out, name, shape, dtype):
        """The caller's ``out`` (checked by the library), or a new array like the first input."""
        if self.numpy:
            if out is None:
                return _numpy_arg(_numpy_empty(shape, dtype), name)
            if type(out) is _ndarray:
                return _writable_numpy(out, name)
        if out is None:
            return Arg(self.adapter.empty(tuple(shape), dtype, self.like), name, True, self.raw_stream)
        if self.adapter.name == "jax":
            raise InvalidArgumentError(f"{name}: JAX arrays are immutable; leave {name}=None")
        return Arg(self.adapter.writable(out, name), name, True, self.raw_stream)

    def inplace(self, array, name):
        """An array the op updates in place (a copy for JAX, returned by result())."""
        if self.numpy and type(array) is _ndarray:
            return _writable_numpy(array, name)
        return Arg(self.adapter.writable(array, name), name, True, self.raw_stream)

    def run(self, *args):
        status = (_FUNCTIONS.get(self.symbol) or function(self.symbol))(*args, self.stream)
        if status:
            check(status)

    def result(self, arg):
        if self.numpy:
            return arg.array
        return self.adapter.finish(arg.array, self.like)


def c_or_null(arg):
    return ffi.NULL if arg is None else arg.c
