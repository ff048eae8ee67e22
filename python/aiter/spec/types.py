"""The vocabulary of the op table: an op, its arguments, its allocated outputs."""

# Argument kinds.  "tensor" is read; "mutated" is written in place (declared
# Tensor(a!) in torch schemas); scalars are float, int, bool, str or dtype.
TENSOR, MUTATED = "tensor", "mutated"
SCALAR_KINDS = ("float", "int", "bool", "str", "dtype")


class Arg:
    """A caller-visible argument, in the order of the functional wrapper.

    ``to_c`` turns a scalar into what the C function takes (an enum value).
    A scalar missing from the op's C order is one the C function never sees
    (an output's dtype, which the library reads from the output itself)."""
    __slots__ = ("name", "kind", "optional", "default", "to_c", "same_as")

    def __init__(self, name, kind=TENSOR, *, optional=False, default=None, to_c=None, same_as=None):
        if kind not in (TENSOR, MUTATED) + SCALAR_KINDS:
            raise ValueError(f"{name}: unknown argument kind {kind!r}")
        self.name, self.kind, self.optional, self.default = name, kind, optional, default
        # same_as: an optional tensor that, when None, is the named argument (cu_seqlens_k).
        self.to_c, self.same_as = to_c, same_as

    @property
    def is_tensor(self):
        return self.kind in (TENSOR, MUTATED)

    @property
    def has_default(self):
        return self.optional or self.default is not None


class Out:
    """An output the op allocates.  ``shape(args)`` and ``dtype(args)`` take a
    dict of the call's arguments (tensors have ``.shape`` and ``.dtype``) and
    return a shape tuple and a dtype name or a tensor to copy the dtype of.
    ``like`` names the argument whose shape and dtype it copies, if any: such an
    output is allocated without evaluating the rules (``same_as``)."""
    __slots__ = ("name", "shape", "dtype", "like")

    def __init__(self, name, shape, dtype, like=None):
        self.name, self.shape, self.dtype, self.like = name, shape, dtype, like

    @classmethod
    def same_as(cls, name, arg):
        """An output of argument ``arg``'s shape and dtype."""
        return cls(name, lambda a: tuple(a[arg].shape), lambda a: a[arg], like=arg)


class Op:
    """One op: its name (``torch.ops.aiter.<name>``, ``aiter.<name>``), the C
    symbol, the arguments in functional order, the allocated outputs, and the
    C argument order (names; ``"@params"`` for a params struct that ``params``
    builds from the arguments)."""
    __slots__ = ("name", "symbol", "args", "outs", "c_order", "params", "doc")

    def __init__(self, name, symbol, args, outs, c_order, params=None, doc=""):
        self.name, self.symbol, self.args, self.outs = name, symbol, tuple(args), tuple(outs)
        self.c_order, self.params, self.doc = tuple(c_order), params, doc
        known = {a.name for a in self.args} | {o.name for o in self.outs} | {"@params"}
        unknown = [n for n in self.c_order if n not in known]
        if unknown:
            raise ValueError(f"{name}: c_order names unknown arguments {unknown}")


def enum_to_c(table, what):
    """The ``to_c`` of a string argument naming one of ``table``'s enum values."""
    def to_c(value):
        if value not in table:
            raise ValueError(f"{what}: expected one of {', '.join(map(repr, table))}, got {value!r}")
        return table[value]
    return to_c
