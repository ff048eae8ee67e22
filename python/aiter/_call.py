"""One op call from Python: arguments to DLTensors, outputs allocated like the
first input, the C function run on the caller's stream, its status checked."""
from ._frameworks import adapter_for, describe
from ._lib import check, ffi, lib
from .dtypes import DLPACK
from .errors import InvalidArgumentError

_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
# C types resolved once: parsing a type string costs more than the call it serves.
_DLTENSOR_P, _INT64_ARRAY, _VOID_P = ffi.typeof("DLTensor *"), ffi.typeof("int64_t[]"), ffi.typeof("void *")


class Arg:
    """An array seen by the C library; ``c`` is its ``DLTensor *``."""
    __slots__ = ("array", "c", "shape", "dtype", "_keep")

    def __init__(self, array, what, writable=False, stream=None):
        d = describe(array, what, stream)
        if writable and d.managed is not None and getattr(d.managed, "flags", 0) & _READ_ONLY:
            raise InvalidArgumentError(f"{what}: the array is read-only")
        self.array, self.shape, self.dtype = array, d.shape, d.dtype
        if d.managed is not None:
            self.c = ffi.addressof(d.managed[0], "dl_tensor")
            self._keep = (d.capsule,)
            return
        # Shape and strides share one allocation; the struct is filled in one go.
        ndim = len(d.shape)
        dims = ffi.new(_INT64_ARRAY, tuple(d.shape) + tuple(d.strides or ()))
        code, bits = DLPACK[d.dtype]
        self.c = ffi.new(_DLTENSOR_P, {
            "data": ffi.cast(_VOID_P, d.data), "device": (d.device_type, d.device_id), "ndim": ndim,
            "dtype": (code, bits, 1), "shape": dims, "strides": dims + ndim if d.strides is not None else ffi.NULL})
        self._keep = dims


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
        check(getattr(lib, self.symbol)(*args, self.stream))

    def result(self, arg):
        return self.adapter.finish(arg.array, self.like)


def c_or_null(arg):
    return ffi.NULL if arg is None else arg.c
