"""The functional API's eager shortcut for the ops whose kernels are C++
(libaiter_torch.so): ``aiter.rmsnorm(t, w)`` calls the registered op's
overload directly, with no generic binding, and the dispatcher takes it
straight to the C++ kernel.  (For ops served by Python kernels the shortcut is
_kernels.direct_kernel, which skips the dispatcher instead.)  A call returned
as NotImplemented goes to the generic torch form: one being compiled, one with
an array that is not a torch tensor, one with some outputs given and others not.

A failed call is made again through the Python kernel, so that the functional
API raises aiter's own error classes (``aiter.InvalidArgumentError``...), which
torch's C++ boundary reduces to ValueError / RuntimeError: the library writes
nothing when it refuses a call, so the second call sees the same arguments and
fails with the same message."""
import torch

from ..spec.types import MUTATED
from ._kernels import _MISSING, _signature, direct_kernel, torch_dtype


def _source(op):
    signature, lines = _signature(op)
    tensors = [a for a in op.args if a.is_tensor]
    checks = [f"({a.name} is None or isinstance({a.name}, _Tensor))" if a.optional else f"isinstance({a.name}, _Tensor)"
              for a in tensors]
    lines.append(f"    if _compiling() or not ({' and '.join(checks)}): return NotImplemented")
    for arg in op.args:
        if arg.kind == "dtype":
            lines.append(f"    if {arg.name} is not None and not isinstance({arg.name}, _dtype): "
                         f"{arg.name} = _torch_dtype({arg.name})")
    values = ", ".join(a.name for a in op.args)
    outs = [o.name for o in op.outs]
    if not outs:
        mutated = [a.name for a in op.args if a.kind == MUTATED]
        body = [f"_default({values})",
                f"return {mutated[0]}" if len(mutated) == 1 else f"return ({', '.join(mutated)},)"]
    else:
        given = " and ".join(f"{o} is not None" for o in outs)
        none = " and ".join(f"{o} is None" for o in outs)
        returned = outs[0] if len(outs) == 1 else f"({', '.join(outs)},)"
        if len(outs) > 1:
            lines.append(f"    if not ({none}) and not ({given}): return NotImplemented")
        body = [f"if {none}: return _default({values})",
                f"_out({values}, {', '.join(f'{o}={o}' for o in outs)})",
                f"return {returned}"]
    lines += ["    try:"] + [f"        {line}" for line in body]
    lines += ["    except (ValueError, RuntimeError):",
              f"        return _python({', '.join([values] + [f'{o}={o}' for o in outs])})"]
    return f"def {op.name}({signature}):\n" + "\n".join(lines) + "\n"


def native_eager(op, packet):
    """The eager shortcut of table op ``op`` calling ``packet``'s overloads."""
    scope = {"_Tensor": torch.Tensor, "_dtype": torch.dtype, "_torch_dtype": torch_dtype, "_MISSING": _MISSING,
             "_default": packet.default, "_out": getattr(packet, "out", None), "_compiling": torch.compiler.is_compiling,
             "_python": direct_kernel(op, returns=True)}
    for arg in op.args:
        scope[f"_default_{arg.name}"] = None if arg.optional else arg.default
    exec(compile(_source(op), f"<aiter.torch eager {op.name}>", "exec"), scope)  # noqa: S102
    return scope[op.name]
