"""Registration of every table op as ``torch.ops.aiter.<name>`` (and
``<name>.out``) with a manual ``torch.library.Library``: ``define`` +
``impl`` per dispatch key costs less per call than ``torch.library.custom_op``,
whose Python wrapper layers run on every call (benchmarks/bench_overhead.py).

Where libaiter_torch.so is at hand (_native.py), the CPU and CUDA kernels of
the overloads it can serve are its C++ ones; the others, and every overload
without it, get the Python kernels of _kernels.py."""
import torch

from ..spec import OPS
from . import _native
from ._kernels import fake_kernel, real_kernel
from ._schema import functional_schema, out_schema

NAMESPACE = "aiter"
# Kept alive for the life of the process: dropping a Library unregisters its ops.
_library = torch.library.Library(NAMESPACE, "DEF")
NATIVE = _native.load(_library)


def _register(op):
    _library.define(functional_schema(op))
    overloads = ["default"]
    schema = out_schema(op)
    if schema is not None:
        _library.define(schema)
        overloads.append("out")
    real, fake = real_kernel(op), fake_kernel(op)
    for overload in overloads:
        qualname = op.name if overload == "default" else f"{op.name}.{overload}"
        for key in _native.register(op, qualname, functional=overload == "default"):
            _library.impl(qualname, real, key)
        # register_fake also serves the Meta key: meta tensors propagate shapes.
        torch.library.register_fake(f"{NAMESPACE}::{qualname}", fake, lib=_library)


for _op in OPS:
    _register(_op)
