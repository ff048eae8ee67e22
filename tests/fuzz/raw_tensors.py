"""DLTensors built field by field over guarded host buffers, for calling the C ABI
with descriptions that may lie.

Every array lives in its own buffer: guard bytes, the array's bytes, slack (seven
times the array's size, so that a lie about the dtype's size still describes
memory we own), guard bytes.  After each call the guards must be intact, and a
call that failed must have changed no byte of any buffer.
"""
import numpy as np

from aiter._lib import ffi
from aiter.dtypes import DLPACK

GUARD = 64
GUARD_BYTE = 0x5A
KDLCPU, KDLCUDA, KDLROCM = 1, 2, 10
INT64_MAX = 2 ** 63 - 1


def wrap64(value):
    """A Python int as the int64 a C caller's arithmetic would leave (two's complement)."""
    return (int(value) + 2 ** 63) % 2 ** 64 - 2 ** 63


def dtype_name(array):
    return array.dtype.name


class Buffer:
    """An array's bytes between guards, with slack after it."""

    def __init__(self, array):
        self.nbytes = array.nbytes
        self.capacity = max(8 * array.nbytes, 64)
        self.raw = np.full(GUARD + 64 + self.capacity + GUARD, GUARD_BYTE, np.uint8)
        self.start = GUARD + (-(self.raw.ctypes.data + GUARD)) % 64  # 64-byte aligned, as allocators give
        self.payload()[:] = 0
        self.payload()[:array.nbytes] = np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8)
        self.address = self.raw.ctypes.data + self.start

    def payload(self):
        return self.raw[self.start:self.start + self.capacity]

    def guards_intact(self):
        return bool((self.raw[:self.start] == GUARD_BYTE).all() and
                    (self.raw[self.start + self.capacity:] == GUARD_BYTE).all())

    def view(self, like):
        """The array's bytes as an array shaped like `like`."""
        return self.payload()[:like.nbytes].view(like.dtype).reshape(like.shape)


class RawTensor:
    """The fields of one DLTensor; start from an array, then change any field."""

    def __init__(self, array, buffer):
        code, bits = DLPACK[dtype_name(array)]
        self.dtype = (code, bits, 1)
        self.shape = list(array.shape)
        self.strides = [s // array.itemsize for s in array.strides] if array.ndim else []
        self.ndim = array.ndim
        self.byte_offset = 0
        self.device = (KDLCPU, 0)
        self.address = buffer.address  # None: a NULL data pointer
        self.buffer = buffer
        self.null_shape = False
        self.null_strides = False

    def span_bytes(self):
        """Bytes from the data pointer the description reaches, or None when the
        description is invalid in a way the library must refuse (so no span)."""
        code, bits, lanes = self.dtype
        if lanes != 1 or bits % 8 or bits == 0 or not 0 <= self.ndim <= 8 or self.null_shape:
            return None
        shape = (self.shape + [1] * 8)[:self.ndim]  # to_c pads lists that a lie about ndim outgrew
        if any(e < 0 for e in shape):
            return None
        if 0 in shape:
            return 0
        strides = self.compact() if self.null_strides else (self.strides + [1] * 8)[:self.ndim]
        if any(s < 0 for s in strides):
            return None
        last = sum((e - 1) * s for e, s in zip(shape, strides))
        nbytes = (last + 1) * (bits // 8)
        return None if nbytes > INT64_MAX else self.byte_offset + nbytes

    def compact(self):
        strides, step = [], 1
        for e in reversed((self.shape + [1] * 8)[:self.ndim]):
            strides.insert(0, step)
            step *= e
        return strides

    def fits(self):
        """True unless the description is one the library cannot tell from a valid
        one yet reaches past the memory we own (such a lie is not the library's to
        catch, so the fuzzer never makes it)."""
        if self.device[0] != KDLCPU or self.address is None or self.buffer is None:
            return True
        span = self.span_bytes()
        if span is None:
            return True
        base = self.address - self.buffer.address
        return base >= 0 and base + span <= self.buffer.capacity

    def to_c(self, keep):
        """A `DLTensor *` (the cffi objects it points into are appended to keep)."""
        count = max(min(self.ndim, 8), len(self.shape), len(self.strides), 1)  # ndim may lie past 8
        shape = ffi.new("int64_t[]", [wrap64(v) for v in (self.shape + [1] * count)[:count]])
        strides = ffi.new("int64_t[]", [wrap64(v) for v in (self.strides + [1] * count)[:count]])
        t = ffi.new("DLTensor *")
        t.data = ffi.NULL if self.address is None else ffi.cast("void *", self.address)
        # The device type is written through its bytes: any int32, as a C caller could.
        device = ffi.cast("int32_t *", ffi.addressof(t, "device"))
        device[0], device[1] = self.device
        t.ndim = self.ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = self.dtype
        t.shape = ffi.NULL if self.null_shape else shape
        t.strides = ffi.NULL if self.null_strides else strides
        t.byte_offset = self.byte_offset
        keep += [shape, strides, t]
        return t
