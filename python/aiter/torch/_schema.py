"""torch.library schemas from the op table: the functional form (allocates its
outputs, returns them) and the ``.out`` overload (writes the caller's outputs,
declared ``Tensor(a!)``, returns nothing)."""
from ..spec.types import MUTATED

_SCALAR_TYPES = {"float": "float", "int": "int", "bool": "bool", "str": "str", "dtype": "ScalarType"}
_ALIAS_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _default(arg):
    if arg.optional:
        return "=None"
    if arg.default is None:
        return ""
    value = arg.default
    if isinstance(value, bool):
        return f"={value}"
    if isinstance(value, str):
        return f'="{value}"'
    return f"={value!r}"


def _arg(arg, letters, defaulted):
    if arg.is_tensor:
        kind = f"Tensor({next(letters)}!)" if arg.kind == MUTATED else "Tensor"
    else:
        kind = _SCALAR_TYPES[arg.kind]
    return f"{kind}{'?' if arg.optional else ''} {arg.name}{_default(arg) if defaulted else ''}"


def _args(op, letters):
    # A default is only allowed where every later positional argument has one
    # (rope's optional k comes before the positions).
    defaulted, trailing = [], True
    for arg in reversed(op.args):
        trailing = trailing and arg.has_default
        defaulted.append(trailing)
    return [_arg(a, letters, d) for a, d in zip(op.args, reversed(defaulted))]


def functional_schema(op):
    letters = iter(_ALIAS_LETTERS)
    args = ", ".join(_args(op, letters))
    if not op.outs:
        returns = "()"
    elif len(op.outs) == 1:
        returns = "Tensor"
    else:
        returns = "(" + ", ".join("Tensor" for _ in op.outs) + ")"
    return f"{op.name}({args}) -> {returns}"


def out_schema(op):
    """The ``.out`` overload, or None for an op that allocates nothing."""
    if not op.outs:
        return None
    letters = iter(_ALIAS_LETTERS)
    args = _args(op, letters)
    outs = [f"Tensor({next(letters)}!) {o.name}" for o in op.outs]
    return f"{op.name}.out({', '.join(args)}, *, {', '.join(outs)}) -> ()"
