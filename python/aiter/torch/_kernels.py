"""The real and fake implementations of a table op, for torch.library.

The real one allocates the outputs (functional form) or takes the caller's
(``.out``), builds the C arguments in the table's C order and calls the C
function on the current stream.  The fake one only allocates: shapes and
dtypes propagate (meta tensors, FakeTensor, torch.compile, torch.export)
without running a kernel."""
import torch

from ..dtypes import canonical
from ..spec.types import MUTATED
from .._lib import check, ffi, lib
from ..errors import UnsupportedDtypeError
from ._dltensor import DLPACK_CODES, dltensor, stream_of


_MISSING = object()  # a required argument left out after an optional one


def torch_dtype(value):
    """A torch dtype from what a table dtype rule returns: a name, a torch dtype or a tensor."""
    if isinstance(value, torch.dtype):
        return value
    if isinstance(value, torch.Tensor):
        return value.dtype
    return getattr(torch, canonical(value))


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


def _c_argument(op, name, by_name):
    """The source of one C argument of the generated call."""
    if name == "@params":
        return "_params(named, named, _lse_dl)"
    arg = by_name.get(name)
    if arg is not None and not arg.is_tensor:
        return f"_to_c_{name}({name})" if arg.to_c else f"{'float' if arg.kind == 'float' else 'int'}({name})"
    label = repr(f"aiter.{op.name}: {name}")
    optional = arg is not None and arg.optional
    return f"(_NULL if {name} is None else _dl({name}, {label}))" if optional else f"_dl({name}, {label})"


def _signature(op):
    """The arguments in table order, then the outputs as keywords.  An argument
    with no default after one with a default (rope's positions after the
    optional k) gets the _MISSING sentinel, checked in the body."""
    params, checks, defaulted = [], [], False
    for arg in op.args:
        defaulted = defaulted or arg.has_default
        if arg.has_default:
            params.append(f"{arg.name}=_default_{arg.name}")
        elif defaulted:
            params.append(f"{arg.name}=_MISSING")
            checks.append(f"    if {arg.name} is _MISSING: raise TypeError({repr(f'aiter.{op.name}: missing argument {arg.name!r}')})")
        else:
            params.append(arg.name)
    outs = [f"{o.name}=None" for o in op.outs]
    return ", ".join(params + (["*"] + outs if outs else [])), checks


def _eager_guard(op, tensors, first):
    """The lines that send a call elsewhere (NotImplemented) unless it is a plain
    eager call on torch tensors: not traced, compiled or under a mode or
    transform that must see the op, no array of another library, no meta tensor."""
    optional = {a.name for a in op.args if a.optional} | {o.name for o in op.outs}
    checks = [f"({n} is None or isinstance({n}, _Tensor))" if n in optional else f"isinstance({n}, _Tensor)"
              for n in tensors + [o.name for o in op.outs]]
    return ["    if _special_mode(): return NotImplemented",
            f"    if not ({' and '.join(checks)}) or {first}.is_meta: return NotImplemented"]


def _source(op, returns, eager):
    """The body of one op's implementation, as straight-line Python: a call costs
    what its own arguments need (half the time of walking the table per call:
    benchmarks/bench_overhead.py)."""
    by_name = {a.name: a for a in op.args}
    signature, lines = _signature(op)
    tensors = [a.name for a in op.args if a.is_tensor]
    first = op.args[0].name
    if eager:
        lines += _eager_guard(op, tensors, first)
    lines.append(f"    if _grad_enabled(): _refuse_grad(_op, {{{', '.join(f'{n!r}: {n}' for n in tensors)}}})")
    for arg in op.args:
        if arg.kind == "dtype":
            lines.append(f"    if {arg.name} is not None: {arg.name} = _torch_dtype({arg.name})")
        if arg.same_as:
            lines.append(f"    if {arg.name} is None: {arg.name} = {arg.same_as}")
    by_name_dict = op.params is not None or any(o.like is None for o in op.outs)  # rules and params read it
    if by_name_dict:
        everything = [a.name for a in op.args] + [o.name for o in op.outs]
        lines.append(f"    named = {{{', '.join(f'{n!r}: {n}' for n in everything)}}}")
    for i, out in enumerate(op.outs):
        lines += [f"    if {out.name} is None:",
                  f"        if {first}.dtype not in _CODES: raise _Unsupported({repr(f'aiter.{op.name}: {first}')} + "
                  f"': unsupported dtype ' + str({first}.dtype))",
                  f"        {out.name} = {'named[' + repr(out.name) + '] = ' if by_name_dict else ''}{_allocation(out, i, first)}"]
    call = ", ".join([_c_argument(op, n, by_name) for n in op.c_order] + [f"_stream({first})"])
    lines.append(f"    _check(_function({call}))")
    if returns:
        results = [o.name for o in op.outs] or [a.name for a in op.args if a.kind == MUTATED]
        lines.append(f"    return {results[0]}" if len(results) == 1 else f"    return ({', '.join(results)},)")
    return f"def {op.name}({signature}):\n" + "\n".join(lines) + "\n"


def _allocation(out, i, first):
    """The expression allocating output ``out`` (the i-th): empty_like of the
    argument it copies (1.0 us against new_empty's 1.9 for a [1, 4096] bf16
    tensor, CPU host, 2026-11-27), or the table's shape and dtype rules."""
    if out.like:
        return f"_empty_like({out.like}, memory_format=_contiguous)"
    return f"{first}.new_empty(tuple(_shape_{i}(named)), dtype=_torch_dtype(_dtype_{i}(named)))"


def _special_mode():
    C = torch._C
    return (torch.compiler.is_compiling() or C._get_tracing_state() is not None or C._len_torch_dispatch_stack() > 0
            or C._are_functorch_transforms_active() or C._is_torch_function_mode_enabled())


def direct_kernel(op, returns=True, eager=False):
    """A function calling op's C function on torch tensors: the arguments in
    table order (keywords too), outputs by keyword, each output not given
    allocated.  With ``returns`` it returns the outputs (or, with none, the
    tensors written in place), as the functional API does; the ``.out``
    overload's implementation returns nothing, as its schema says.  An ``eager``
    one is the functional API's shortcut past the dispatcher: it returns
    NotImplemented for any call the registered op must see (_eager_guard)."""
    scope = {"_op": op, "_function": getattr(lib, op.symbol), "_check": check, "_dl": dltensor,
             "_stream": stream_of, "_NULL": ffi.NULL, "_MISSING": _MISSING, "_CODES": DLPACK_CODES,
             "_Unsupported": UnsupportedDtypeError, "_grad_enabled": torch.is_grad_enabled,
             "_refuse_grad": _refuse_grad, "_torch_dtype": torch_dtype, "_params": op.params,
             "_lse_dl": lambda t: dltensor(t, f"aiter.{op.name}: lse"), "_Tensor": torch.Tensor,
             "_special_mode": _special_mode, "_empty_like": torch.empty_like,
             "_contiguous": torch.contiguous_format}
    for arg in op.args:
        scope[f"_default_{arg.name}"] = None if arg.optional else arg.default
        if arg.to_c:
            scope[f"_to_c_{arg.name}"] = arg.to_c
    for i, out in enumerate(op.outs):
        scope[f"_shape_{i}"], scope[f"_dtype_{i}"] = out.shape, out.dtype
    exec(compile(_source(op, returns, eager), f"<aiter.torch {op.name}>", "exec"), scope)  # noqa: S102
    return scope[op.name]


def real_kernel(op):
    """The CPU/CUDA implementation registered for both overloads: the functional
    one returns its allocated outputs, the ``.out`` one (outputs by keyword) and
    the in-place ops nothing, as their schemas say."""
    returning, writing = direct_kernel(op, returns=bool(op.outs)), direct_kernel(op, returns=False)

    def kernel(*args, **kwargs):
        return writing(*args, **kwargs) if kwargs else returning(*args)

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
