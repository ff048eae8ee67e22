"""Host DLTensors that describe shapes only, for the library's workspace-size
queries, which read no data: aiter.jax sizes a workspace while tracing,
from shapes and dtypes alone.  Their data pointer is a small buffer that is
never read (the library refuses NULL for a non-empty tensor)."""

_PLACEHOLDER = []  # the never-read buffer, made once


def query(function, arrays, *extra):
    """``function(size_t *, DLTensor *..., *extra)``'s size for arrays with
    ``.shape`` and ``.dtype`` (jax tracers, ShapeDtypeStructs, described arrays)."""
    from .._lib import check, ffi
    from ..dtypes import DLPACK
    if not _PLACEHOLDER:
        _PLACEHOLDER.append(ffi.new("char[]", 64))
    keep, tensors = [], []
    for t in arrays:
        shape = ffi.new("int64_t[]", tuple(int(d) for d in t.shape) or (0,))
        code, bits = DLPACK[str(t.dtype)]
        keep.append(shape)  # alive until the call returns
        tensors.append(ffi.new("DLTensor *", {"data": _PLACEHOLDER[0], "device": (1, 0), "ndim": len(t.shape),
                                              "dtype": (code, bits, 1), "shape": shape}))
    size = ffi.new("size_t *")
    check(function(size, *tensors, *extra))
    return int(size[0])
