"""The functional wrappers (``aiter.rmsnorm`` ...) made from the op table.

``table_op(name, doc)`` writes one op's wrapper as straight-line Python (its
signature from the table, see ``spec/signature.py``) and compiles it: scalar
checks, the arrays described for the C library, each output allocated like
the first input unless the caller gave it, the C function called on the
caller's stream, the outputs returned as the caller's array type.  A call
costs what its own arguments need: no walk over the table at run time.

Wrapped by ``via_torch``, a call with torch tensors goes to the registered
torch op instead (``aiter.torch``), which the same table describes.
"""
import inspect
import operator

from .. import dtypes
from .._call import Call, c_or_null, resolve_now
from .._route import via_torch
from ..errors import InvalidArgumentError
from ..spec import OPS_BY_NAME
from ..spec.signature import default_name, default_value, missing_checks, parameters
from ..spec.types import MUTATED

_MISSING = object()


def int32(value, name):
    """An int scalar checked before it reaches a C ``int32_t``."""
    try:
        value = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{name}: expected an integer, got {type(value).__name__}") from None
    if not -2**31 <= value < 2**31:
        raise InvalidArgumentError(f"{name}: expected a 32-bit integer, got {value}")
    return value


def dtype_name(value):
    """A dtype rule's result (a name, or a described array to copy the dtype of) as a name."""
    return value if isinstance(value, str) else value.dtype


def _require_out_dtype(given, expected, name, arg_name):
    if given.dtype != expected:
        raise InvalidArgumentError(f"{name}: expected dtype {expected} (the {arg_name} argument), got {given.dtype}")


def _scalar_lines(op):
    """Defaults for None, the table's checks (of tensors too), int ranges: before
    anything is described."""
    lines = []
    for arg in op.args:
        n = arg.name
        if arg.is_tensor:
            if arg.check:
                lines.append(f"    if {n} is not None: {n} = _check_{n}({n})")
            continue
        if arg.optional and arg.default is not None:
            lines.append(f"    if {n} is None: {n} = {default_name(arg)}")
        if arg.check:
            lines.append(f"    {n} = _check_{n}({n})")
        elif arg.kind == "dtype":
            lines.append(f"    if {n} is not None: {n} = _canonical({n})")
        if arg.kind == "int":
            lines.append(f"    {n} = _int32({n}, {n!r})")
    return lines


def _tensor_line(arg):
    n = arg.name
    if arg.kind == MUTATED:
        describe = f"c.inplace({n}, {n!r})"
    else:
        describe = f"c.input({n}, {n!r})"
    if arg.same_as:
        return f"    {n}_ = {arg.same_as}_ if {n} is None else {describe}"
    if arg.optional:
        return f"    {n}_ = None if {n} is None else {describe}"
    return f"    {n}_ = {describe}"


def _output_lines(op, i, out, named):
    n = out.name
    if out.like:
        shape, dtype = f"{out.like}_.shape", f"{out.like}_.dtype"
    else:
        shape, dtype = f"_shape_{i}(named)", f"_dtype_name(_dtype_{i}(named))"
    allocate = f"c.output({n}, {n!r}, {shape}, {dtype})"
    if out.optional:
        lines = [f"    {n}_ = {allocate} if (return_{n} or {n} is not None) else None"]
    else:
        lines = [f"    {n}_ = {allocate}"]
    if out.dtype_arg:
        lines.append(f"    if {n} is not None: _require_out_dtype({n}_, {dtype}, {n!r}, {out.dtype_arg!r})")
    if named:
        lines.append(f"    named[{n!r}] = {n}_")
    return lines


def _c_argument(op, name, by_name):
    if name == "@params":
        return "_p"
    arg = by_name.get(name)
    if arg is None or arg.is_tensor:  # an output or a tensor argument
        maybe_none = arg is None and next(o for o in op.outs if o.name == name).optional
        maybe_none = maybe_none or (arg is not None and arg.optional and not arg.same_as)
        return f"_c_or_null({name}_)" if maybe_none else f"{name}_.c"
    if arg.to_c:
        return f"_to_c_{name}({name})"
    return f"float({name})" if arg.kind == "float" else name


def _return_line(op):
    if op.outs:
        results = [f"c.result({o.name}_)" for o in op.outs if not o.optional]
        optional = [o for o in op.outs if o.optional]
        if not optional:
            return f"    return {results[0]}" if len(results) == 1 else f"    return ({', '.join(results)})"
        # Each optional output comes back only where it was asked for.
        lines = [f"    results = [{', '.join(results)}]"]
        lines += [f"    if {o.name}_ is not None: results.append(c.result({o.name}_))" for o in optional]
        return "\n".join(lines + ["    return results[0] if len(results) == 1 else tuple(results)"])
    mutated = [a for a in op.args if a.kind == MUTATED]
    values = [f"(None if {a.name}_ is None else c.result({a.name}_))" if a.optional else f"c.result({a.name}_)"
              for a in mutated]
    return f"    return {values[0]}" if len(values) == 1 else f"    return ({', '.join(values)})"


def source(op):
    """The wrapper of ``op`` as Python source."""
    params, missing = parameters(op)
    by_name = {a.name: a for a in op.args}
    tensors = [a for a in op.args if a.is_tensor]
    named = op.params is not None or op.check is not None or any(o.like is None for o in op.outs)
    lines = missing_checks(op, missing) + _scalar_lines(op)
    lines.append(f"    c = _Call(_symbol, like={tensors[0].name})")
    lines += [_tensor_line(a) for a in tensors]
    if named:
        values = [f"{a.name!r}: {a.name}_" if a.is_tensor else f"{a.name!r}: {a.name}" for a in op.args]
        lines.append(f"    named = {{{', '.join(values)}}}")
    for i, out in enumerate(op.outs):
        lines += _output_lines(op, i, out, named)
    if op.check:
        lines.append("    _op_check(named)")
    if op.params:  # the struct points at the outputs it carries (lse), where present
        lines.append(f"    outs = {{{', '.join(f'{o.name!r}: {o.name}_' for o in op.outs)}}}")
        lines.append("    _p = _params(named, {n: o for n, o in outs.items() if o is not None}, _dl)")
    call = ", ".join(_c_argument(op, n, by_name) for n in op.c_order)
    lines.append(f"    c.run({call})")
    lines.append(_return_line(op))
    return f"def {op.name}({params}):\n" + "\n".join(lines) + "\n"


def _scope(op):
    scope = {"_Call": Call, "_symbol": op.symbol, "_c_or_null": c_or_null, "_MISSING": _MISSING,
             "_int32": int32, "_canonical": dtypes.canonical, "_dtype_name": dtype_name,
             "_require_out_dtype": _require_out_dtype, "_op_check": op.check, "_params": op.params,
             "_dl": lambda arg: arg.c}
    for arg in op.args:
        scope[default_name(arg)] = default_value(arg)
        if arg.check:
            scope[f"_check_{arg.name}"] = arg.check
        if arg.to_c:
            scope[f"_to_c_{arg.name}"] = arg.to_c
    for i, out in enumerate(op.outs):
        scope[f"_shape_{i}"], scope[f"_dtype_{i}"] = out.shape, out.dtype
    return scope


def table_op(name, doc, route=True):
    """The functional wrapper of table op ``name`` with docstring ``doc``;
    ``route``: torch tensors go to ``torch.ops.aiter.<name>``."""
    op = OPS_BY_NAME[name]
    resolve_now(op.symbol)  # at import, in bulk: cffi's first look-up cost more than a small op's call
    scope = _scope(op)
    exec(compile(source(op), f"<aiter.ops {name}>", "exec"), scope)  # noqa: S102
    function = scope[name]
    function.__doc__, function.__module__ = doc, f"aiter.ops"
    return via_torch(name)(function) if route else function
