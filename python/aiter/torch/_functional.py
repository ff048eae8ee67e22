"""The functional API (``aiter.rmsnorm(x, w, out=...)``) on torch tensors, as
calls of the registered ops: plain Python over ``torch.ops``, so Dynamo traces
it with no graph break and no cffi object in sight.  One generic binder per
table op, matching the wrapper's signature (the table lists the arguments in
the wrapper's order); outputs passed by keyword select the ``.out`` overload."""
import torch

from ..dtypes import canonical
from ..spec import OPS
from . import _native
from ._eager import native_eager
from ._kernels import direct_kernel, torch_dtype


def _scalar(arg, value):
    if arg.kind == "dtype" and value is not None and not isinstance(value, torch.dtype):
        return getattr(torch, canonical(value))
    return value


def _bind(op, args, kwargs):
    if len(args) > len(op.args):
        raise TypeError(f"aiter.{op.name}: takes {len(op.args)} positional arguments, got {len(args)}")
    values = []
    for i, arg in enumerate(op.args):
        if i < len(args):
            value = args[i]
        elif arg.name in kwargs:
            value = kwargs[arg.name]
        elif arg.has_default:
            value = None if arg.optional else arg.default
        else:
            raise TypeError(f"aiter.{op.name}: missing argument {arg.name!r}")
        if arg.is_tensor and value is not None and not isinstance(value, torch.Tensor):
            return None  # mixed array types (a NumPy weight): the generic wrapper takes them
        values.append(value if arg.is_tensor else _scalar(arg, value))
    return values


def _returned(op, values, outs):
    if op.outs:
        result = tuple(outs[o.name] for o in op.outs)
    else:
        result = tuple(v for a, v in zip(op.args, values) if a.kind == "mutated")
    return result[0] if len(result) == 1 else result


def functional(op):
    packet = getattr(torch.ops.aiter, op.name)
    known = {a.name for a in op.args} | {o.name for o in op.outs}

    def call(*args, **kwargs):
        """The op on torch tensors, or NotImplemented where an array is not one."""
        unknown = [k for k in kwargs if k not in known]
        if unknown:
            raise TypeError(f"aiter.{op.name}: unexpected keyword argument {unknown[0]!r}")
        values = _bind(op, args, kwargs)
        if values is None:
            return NotImplemented
        given = {o.name: kwargs[o.name] for o in op.outs if kwargs.get(o.name) is not None}
        if not given:
            result = packet.default(*values)
            return result if op.outs else _returned(op, values, {})
        named = dict(zip((a.name for a in op.args), values))
        outs = {}
        for o in op.outs:  # outputs not given are allocated here, as the wrapper would
            outs[o.name] = given.get(o.name)
            if outs[o.name] is None:
                outs[o.name] = torch.empty(tuple(o.shape(named)), dtype=torch_dtype(o.dtype(named)),
                                           device=values[0].device)
        packet.out(*values, **outs)
        return _returned(op, values, outs)

    call.__name__ = op.name
    return call


TABLE_FORMS = {op.name: functional(op) for op in OPS}
FUNCTIONS = dict(TABLE_FORMS)



# Attention wrappers whose signatures add to the table's arguments.
def _with_optional_lse(name):
    """prefill_attention / paged_prefill_attention: the ops always give the
    log-sum-exp; the wrapper returns it with ``return_lse`` or a given ``lse``."""
    table_form = FUNCTIONS[name]

    def call(*args, return_lse=False, **kwargs):
        want = return_lse or kwargs.get("lse") is not None
        result = table_form(*args, **kwargs)
        if result is NotImplemented or want:
            return result
        return result[0]

    call.__name__ = name
    return call


_TABLE_PAGED_DECODE = FUNCTIONS["paged_decode_attention"]


def _paged_decode(*args, workspace=None, split_kv=False, **kwargs):
    """paged_decode_attention: the split-KV op when a workspace is given (or q has
    new tokens); split_kv=True without one needs the workspace-size query, a host
    call, so it is left to the generic wrapper (eager only)."""
    q = args[0] if args else kwargs.get("q")
    if workspace is not None:
        return FUNCTIONS["paged_decode_attention_split_kv"](*args, workspace=workspace, **kwargs)
    if split_kv or (isinstance(q, torch.Tensor) and q.dim() == 4):
        return NotImplemented
    return _TABLE_PAGED_DECODE(*args, **kwargs)


FUNCTIONS.update({"prefill_attention": _with_optional_lse("prefill_attention"),
                  "paged_prefill_attention": _with_optional_lse("paged_prefill_attention"),
                  "paged_decode_attention": _paged_decode})



def _eager(op):
    """The eager shortcut of an op whose wrapper is the table form: straight to
    the registered op where its kernels are C++ (the dispatcher then costs
    little), else past the dispatcher to the Python kernel's body (about half
    of a small op's host time), unless the registered op must see the call."""
    if _native.serves_every_device(op):
        return native_eager(op, getattr(torch.ops.aiter, op.name))
    return direct_kernel(op, returns=True, eager=True)


EAGER = {op.name: _eager(op) for op in OPS if FUNCTIONS[op.name] is TABLE_FORMS[op.name]}
