"""The real and fake implementations of a table op, for torch.library.

The real one allocates the outputs (functional form) or takes the caller's
(``.out``), builds the C arguments in the table's C order and calls the C
function on the current stream.  The fake one only allocates: shapes and
dtypes propagate (meta tensors, FakeTensor, torch.compile, torch.export)
without running a kernel."""
import torch

from .._lib import check, ffi, lib
from ._dltensor import dltensor, stream_of


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
    """Raises when grad mode is on and a tensor argument requires grad: the op has
    no derivative, and a silently detached output would train wrongly."""
    if not torch.is_grad_enabled():
        return
    for a in op.args:
        value = named.get(a.name)
        if isinstance(value, torch.Tensor) and value.requires_grad:
            raise RuntimeError(f"aiter.{op.name}: {a.name} requires grad, but libaiter ops have no derivative; "
                               "call it under torch.no_grad() / torch.inference_mode(), or pass detached tensors")


def _c_plan(op):
    """For each C argument: (name, converter of its value)."""
    by_name = {a.name: a for a in op.args}
    plan = []
    for name in op.c_order:
        arg = by_name.get(name)
        if name == "@params" or arg is None or arg.is_tensor:
            plan.append((name, None))
        else:
            plan.append((name, arg.to_c or (float if arg.kind == "float" else int)))
    same_as = {a.name: a.same_as for a in op.args if a.same_as}
    return tuple(plan), same_as


def _c_arguments(op, plan, same_as, named, outs):
    cargs = []
    for name, convert in plan:
        if name == "@params":
            cargs.append(op.params(named, outs, lambda t: dltensor(t, "lse")))
            continue
        value = outs[name] if name in outs else named.get(name)
        if value is None and name in same_as:
            value = named[same_as[name]]
        if convert is not None:
            cargs.append(convert(value))
        else:
            cargs.append(ffi.NULL if value is None else dltensor(value, name))
    return cargs


def real_kernel(op):
    plan, same_as = _c_plan(op)
    function = getattr(lib, op.symbol)
    out_names = tuple(o.name for o in op.outs)

    def kernel(*args, **kwargs):
        named = _arguments(op, args, kwargs)
        _refuse_grad(op, named)
        like = _first_tensor(op, named)
        given = {n: kwargs[n] for n in out_names if n in kwargs}
        outs = given if given else _allocate(op, named, like)
        check(function(*_c_arguments(op, plan, same_as, named, outs), stream_of(like)))
        if given or not outs:
            return None
        return outs[out_names[0]] if len(outs) == 1 else tuple(outs[n] for n in out_names)

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
