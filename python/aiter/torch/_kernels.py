"""The real and fake implementations of a table op, for torch.library.

The real one allocates the outputs (functional form) or takes the caller's
(``.out``), builds the C arguments in the table's C order and calls the C
function on the current stream.  The fake one only allocates: shapes and
dtypes propagate (meta tensors, FakeTensor, torch.compile, torch.export)
without running a kernel."""
import torch

from .._lib import check, ffi, lib
from ..errors import UnsupportedDtypeError
from ._dltensor import DLPACK_CODES, dltensor, stream_of


def torch_dtype(value):
    """A torch dtype from what a table dtype rule returns: a name, a torch dtype or a tensor."""
    if isinstance(value, torch.dtype):
        return value
    if isinstance(value, torch.Tensor):
        return value.dtype
    return getattr(torch, value)


def _arguments(op, args, kwargs):
    """The call's arguments by name.  The dispatcher passes them in schema order,
    less trailing ones equal to their defaults, and the keyword-only outputs
    by keyword."""
    named = {a.name: a.default for a in op.args}
    named.update(zip((a.name for a in op.args), args))
    named.update(kwargs)
    return named


def _first_tensor(op, named):
    for a in op.args:
        value = named.get(a.name)
        if isinstance(value, torch.Tensor):
            return value
    raise ValueError(f"aiter.{op.name}: no tensor argument")


def _allocate(op, named, like):
    return {o.name: torch.empty(tuple(o.shape(named)), dtype=torch_dtype(o.dtype(named)), device=like.device)
            for o in op.outs}


def _refuse_grad(op, named):
    """Raises when a tensor argument requires grad (the caller checked that grad
    mode is on): the op has no derivative, and a silently detached output would
    train wrongly."""
    for a in op.args:
        value = named.get(a.name)
        if isinstance(value, torch.Tensor) and value.requires_grad:
            raise RuntimeError(f"aiter.{op.name}: {a.name} requires grad, but libaiter ops have no derivative; "
                               "call it under torch.no_grad() / torch.inference_mode(), or pass detached tensors")


def _c_plan(op):
    """For each C argument: (name, converter of a scalar or None for a tensor, is
    the params struct, the label its errors carry)."""
    by_name = {a.name: a for a in op.args}
    plan = []
    for name in op.c_order:
        arg = by_name.get(name)
        label = f"aiter.{op.name}: {name}"
        if name == "@params" or arg is None or arg.is_tensor:
            plan.append((name, None, name == "@params", label))
        else:
            plan.append((name, arg.to_c or (float if arg.kind == "float" else int), False, label))
    return tuple(plan)


def real_kernel(op):
    """The CPU/CUDA implementation.  Everything that depends only on the op is
    worked out here, once; a call only binds, allocates, converts and calls
    (each step measured by benchmarks/bench_overhead.py)."""
    plan, function = _c_plan(op), getattr(lib, op.symbol)
    names, first = tuple(a.name for a in op.args), op.args[0].name
    defaults = {a.name: a.default for a in op.args}
    same_as = tuple((a.name, a.same_as) for a in op.args if a.same_as)
    outs_spec = tuple((o.name, o.shape, o.dtype) for o in op.outs)
    out_names = tuple(o.name for o in op.outs)
    lse_dl = lambda t: dltensor(t, f"aiter.{op.name}: lse")  # noqa: E731
    first_label = f"aiter.{op.name}: {first}"

    def kernel(*args, **kwargs):
        named = defaults.copy()
        named.update(zip(names, args))
        if kwargs:  # the .out overload: the caller's outputs
            named.update(kwargs)
        if torch.is_grad_enabled():
            _refuse_grad(op, named)
        like = named[first]
        if like.dtype not in DLPACK_CODES:  # before outputs are allocated like it
            raise UnsupportedDtypeError(f"{first_label}: unsupported dtype {like.dtype}")
        if not kwargs:
            for name, shape, dtype in outs_spec:
                named[name] = like.new_empty(tuple(shape(named)), dtype=torch_dtype(dtype(named)))
        for name, other in same_as:
            if named[name] is None:
                named[name] = named[other]
        cargs = [op.params(named, named, lse_dl) if params else
                 (convert(named[name]) if convert is not None else
                  (ffi.NULL if named[name] is None else dltensor(named[name], label)))
                 for name, convert, params, label in plan]
        check(function(*cargs, stream_of(like)))
        if kwargs or not out_names:
            return None
        return named[out_names[0]] if len(out_names) == 1 else tuple(named[n] for n in out_names)

    kernel.__name__ = f"aiter_{op.name}"
    return kernel


def fake_kernel(op):
    out_names = tuple(o.name for o in op.outs)

    def fake(*args, **kwargs):
        named = _arguments(op, args, kwargs)
        if not out_names or out_names[0] in kwargs:
            return None
        outs = _allocate(op, named, _first_tensor(op, named))
        return outs[out_names[0]] if len(outs) == 1 else tuple(outs[n] for n in out_names)

    fake.__name__ = f"aiter_{op.name}_fake"
    return fake
