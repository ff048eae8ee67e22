"""Routes the functional ops to ``torch.ops.aiter`` for torch tensors, once
``aiter.torch`` is loaded.  Then ``aiter.rmsnorm(t, w)`` inside a
``torch.compile``d function is a registered op in the graph instead of cffi
calls Dynamo cannot trace, and eager calls share the ops' fast path.

This module imports no array library: ``aiter.torch`` fills in ``tensor_type``
and ``functions`` when it loads.  It loads by itself at the first eager call
with a torch tensor, or at ``import aiter`` when torch is already imported.
"""
import functools
import sys


class _NoType:
    """Matches nothing until aiter.torch sets the torch tensor type."""


tensor_type = _NoType
functions = {}  # op name -> the torch form of the functional wrapper
eager = {}  # op name -> its plain eager call on torch tensors, or NotImplemented


def _first(args, kwargs):
    if args:
        return args[0]
    return next(iter(kwargs.values()), None)


def _load_torch_if_torch(value):
    """Imports aiter.torch at the first call with a torch tensor.  Not inside
    torch.compile: registering ops while Dynamo traces breaks its guards, so
    that case (torch imported after aiter, first call compiled) asks for the
    import instead."""
    if "torch" not in sys.modules or type(value).__module__.split(".", 1)[0] != "torch":
        return False
    if sys.modules["torch"].compiler.is_compiling():
        # A built-in exception: Dynamo traces its construction (not AiterError's).
        raise RuntimeError("aiter: torch was imported after aiter, and this first call with torch tensors is being "
                         "compiled: run `import aiter.torch` before torch.compile")
    from . import torch as _  # noqa: F401  (fills tensor_type and functions)
    return True


def via_torch(name):
    """Decorates the functional wrapper of table op ``name``."""
    def decorate(wrapper):
        @functools.wraps(wrapper)
        def routed(*args, **kwargs):
            first = args[0] if args else _first(args, kwargs)  # (inlined: a call costs 0.1 us)
            if isinstance(first, tensor_type) or (tensor_type is _NoType and _load_torch_if_torch(first)):
                direct = eager.get(name)
                result = NotImplemented if direct is None else direct(*args, **kwargs)
                if result is not NotImplemented:
                    return result
                try:
                    result = functions[name](*args, **kwargs)
                except (ValueError, RuntimeError):
                    if sys.modules["torch"].compiler.is_compiling():
                        raise
                    # A refused call again through the plain wrapper, for aiter's own error
                    # classes (torch's C++ boundary reduces them to ValueError /
                    # RuntimeError; a refused call writes nothing, so it fails alike).
                    result = NotImplemented
                if result is not NotImplemented:
                    return result
            return wrapper(*args, **kwargs)
        return routed
    return decorate


def install(torch_tensor_type, torch_functions, eager_functions):
    """Called by aiter.torch once its ops are registered."""
    global tensor_type
    functions.update(torch_functions)
    eager.update(eager_functions)
    tensor_type = torch_tensor_type
