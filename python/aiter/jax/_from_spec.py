"""aiter.jax's ops made from the op table: each one ``jax.ffi.ffi_call`` of the
target named after its C function, laid out as libaiter/xla/bind.hpp takes it.

While JAX traces a call, the table's rules give each output's shape and dtype
(and the size of any workspace, which XLA allocates as an extra result);
what they depend on is checked then, raising aiter's exceptions.  The
operands are the read tensors in C order, then the tensors the op updates in
place, each aliased with its result; the results are the C function's
``DLTensor *`` parameters in order, then the outputs a params struct carries
(lse); the scalars are attributes of their own names.
"""
import jax
import jax.numpy as jnp
import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError, UnsupportedDtypeError
from ..ops._from_spec import int32
from ..spec import OPS_BY_NAME
from ..spec.signature import default_name, default_value, missing_checks, parameters
from ..spec.types import MUTATED
from . import _targets

_MISSING = object()


def _array(value, what):
    """``value`` as a JAX array (or tracer) of a dtype libaiter knows."""
    if value is None:
        raise InvalidArgumentError(f"{what}: expected an array, got None")
    arr = value if isinstance(value, jax.Array) else jnp.asarray(value)
    if arr.dtype.name not in dtypes.DLPACK:
        raise UnsupportedDtypeError(f"{what}: unsupported dtype {arr.dtype}")
    return arr


def _dtype(value):
    """A dtype rule's result (a name, an array to copy the dtype of) as a jnp dtype."""
    return jnp.dtype(value if isinstance(value, str) else value.dtype)


def _scalar(arg, value):
    if arg.optional and value is None and arg.default is not None:
        value = arg.default
    if arg.check:
        value = arg.check(value)
    elif arg.kind == "dtype" and value is not None:
        value = dtypes.canonical(value)
    return int32(value, arg.name) if arg.kind == "int" else value


def _tensors(op, a):
    """The call's tensors as JAX arrays (None where left out), in place in ``a``."""
    for arg in op.args:
        if not arg.is_tensor or arg.name in op.scratch:
            continue
        value = a[arg.name]
        if value is not None and arg.check:
            value = arg.check(value)
        if value is None and arg.same_as:
            value = a[arg.same_as]
        a[arg.name] = None if value is None and arg.optional else _array(value, arg.name)


def _attribute(arg, value):
    """A scalar as the attribute bind.hpp reads: float32, or int32 (enums and bools too)."""
    if arg.to_c:
        return np.int32(arg.to_c(value))
    return np.float32(value) if arg.kind == "float" else np.int32(value)


def _attributes(op, a):
    in_c = set(op.c_order)
    attrs = {}
    for arg in op.args:
        if arg.is_tensor or arg.kind == "dtype" or (arg.name not in in_c and op.params is None):
            continue  # an output's dtype; the C function reads it from the output
        if a[arg.name] is not None:  # None: a struct field left to the library's default
            attrs[arg.name] = _attribute(arg, a[arg.name])
    return attrs


class _Layout:
    """Operands, results, aliases and NULL parameters of one call."""

    def __init__(self):
        self.operands, self.results, self.result_names = [], [], []
        self.aliases, self.absent, self.updated = {}, 0, []

    def result(self, name, struct):
        self.result_names.append(name)
        self.results.append(struct)
        return len(self.results) - 1


def _layout(op, a, wanted):
    """Walks the C order: what each parameter becomes in the XLA call."""
    by_name, outs = {x.name: x for x in op.args}, {o.name: o for o in op.outs}
    lay = _Layout()
    for position, name in enumerate(op.c_order):
        if name in outs:
            lay.result(name, wanted[name])
        elif name in by_name and by_name[name].is_tensor:
            value = a[name]
            if value is None:
                lay.absent |= 1 << position
            elif name in op.scratch:
                lay.result(name, value)
            elif by_name[name].kind == MUTATED:
                lay.updated.append((name, lay.result(name, jax.ShapeDtypeStruct(value.shape, value.dtype))))
            else:
                lay.operands.append(value)
    for name, struct in wanted.items():  # outputs a params struct carries
        if name not in op.c_order:
            lay.result(name, struct)
    for name, index in lay.updated:  # updated in place: operands after the read ones, aliased
        lay.aliases[len(lay.operands)] = index
        lay.operands.append(a[name])
    return lay


def _reuse(op, a, lay):
    """Outputs that may take an input's buffer (add_rmsnorm's residual_out)."""
    for out in op.outs:
        source = a.get(out.reuse) if out.reuse else None
        if source is None or out.name not in lay.result_names:
            continue
        index = lay.result_names.index(out.name)
        struct = lay.results[index]
        if struct.shape == source.shape and struct.dtype == source.dtype:
            lay.aliases[len(lay.operands)] = index
            lay.operands.append(source)


def _outputs(op, a, asked):
    wanted = {}
    for out in op.outs:
        if out.optional and not asked.get(out.name):
            continue
        wanted[out.name] = jax.ShapeDtypeStruct(tuple(out.shape(a)), _dtype(out.dtype(a)))
        a[out.name] = wanted[out.name]
    return wanted


def _scratch(op, a):
    """Workspaces as results: an optional one left out (NULL) where none is
    needed, a required one never empty (the library takes no NULL there)."""
    optional = {x.name for x in op.args if x.optional}
    for name, size in op.scratch.items():
        bytes_ = size(a)
        if bytes_ == 0 and name in optional:
            a[name] = None
        else:
            a[name] = jax.ShapeDtypeStruct((max(bytes_, 16),), jnp.uint8)


def call(op, a, asked):
    """Runs op under XLA with arguments ``a`` (by name, checked scalars);
    ``asked``: the optional outputs wanted."""
    _targets.register()
    _tensors(op, a)
    wanted = _outputs(op, a, asked)
    if op.check:
        op.check(a)
    _scratch(op, a)
    lay = _layout(op, a, wanted)
    _reuse(op, a, lay)
    attrs = _attributes(op, a)
    if lay.absent:
        attrs["absent"] = np.int64(lay.absent)
    # Batching runs one call per element: the ops take fixed ranks.
    run = jax.ffi.ffi_call(op.symbol, tuple(lay.results), input_output_aliases=lay.aliases or None,
                           vmap_method="sequential")
    values = dict(zip(lay.result_names, run(*lay.operands, **attrs)))
    if op.outs:
        results = [values[name] for name in wanted]
        return results[0] if len(results) == 1 else tuple(results)
    updated = [values.get(x.name) for x in op.args if x.kind == MUTATED]
    return updated[0] if len(updated) == 1 else tuple(updated)


def _source(op):
    params, missing = parameters(op, outputs=False, skip=op.scratch)
    lines = missing_checks(op, missing)
    names = [x.name for x in op.args if x.name not in op.scratch]
    lines.append(f"    a = {{{', '.join(f'{n!r}: {n}' for n in names)}}}")
    for x in op.args:
        if not x.is_tensor:
            lines.append(f"    a[{x.name!r}] = _scalar(_by_name[{x.name!r}], {x.name})")
    lines += [f"    a[{n!r}] = None" for n in op.scratch]
    asked = ", ".join(f"{o.name!r}: return_{o.name}" for o in op.outs if o.optional)
    lines.append(f"    return _call(_op, a, {{{asked}}})")
    return f"def {op.name}({params}):\n" + "\n".join(lines) + "\n"


def jax_op(name, doc):
    """aiter.jax's form of table op ``name``: the functional wrapper's
    signature less its outputs and workspaces, docstring ``doc``."""
    op = OPS_BY_NAME[name]
    scope = {"_op": op, "_call": call, "_scalar": _scalar, "_MISSING": _MISSING,
             "_by_name": {x.name: x for x in op.args}}
    scope.update({default_name(x): default_value(x) for x in op.args})
    exec(compile(_source(op), f"<aiter.jax {name}>", "exec"), scope)  # noqa: S102
    function = scope[name]
    function.__doc__, function.__module__ = doc, "aiter.jax"
    return function
