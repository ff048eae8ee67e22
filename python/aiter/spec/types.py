"""The vocabulary of the op table: an op, its arguments, its allocated outputs."""
from ..errors import InvalidArgumentError  # a ValueError

# Argument kinds.  "tensor" is read; "mutated" is written in place (declared
# Tensor(a!) in torch schemas); scalars are float, int, bool, str or dtype.
TENSOR, MUTATED = "tensor", "mutated"
SCALAR_KINDS = ("float", "int", "bool", "str", "dtype")


class Arg:
    """A caller-visible argument, in the order of the functional wrapper.

    ``to_c`` turns a scalar into what the C function takes (an enum value).
    A scalar missing from the op's C order is one the C function never sees
    (an output's dtype, which the library reads from the output itself), or,
    for an op with a params struct, a field of that struct.

    For the NumPy-level wrappers (``aiter.<name>``, ``aiter.jax.<name>``):
    ``keyword`` makes the argument keyword-only; ``check`` validates a value
    before anything runs and returns it normalized (raising aiter's errors);
    an optional argument's ``default`` is what its None means, shown in the
    wrapper's signature (torch schemas keep None)."""
    __slots__ = ("name", "kind", "optional", "default", "to_c", "same_as", "keyword", "check")

    def __init__(self, name, kind=TENSOR, *, optional=False, default=None, to_c=None, same_as=None, keyword=False,
                 check=None):
        if kind not in (TENSOR, MUTATED) + SCALAR_KINDS:
            raise ValueError(f"{name}: unknown argument kind {kind!r}")
        self.name, self.kind, self.optional, self.default = name, kind, optional, default
        # same_as: an optional tensor that, when None, is the named argument (cu_seqlens_k).
        self.to_c, self.same_as, self.keyword, self.check = to_c, same_as, keyword, check

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
    output is allocated without evaluating the rules (``same_as``).

    ``dtype_arg``: the dtype argument a caller's output must match (a
    quantized output).  ``optional``: the wrapper computes it only when asked
    (``return_<name>=True`` or the array given); torch ops always do.
    ``reuse``: an input of the same shape and dtype whose buffer a JAX call
    may write it into (an input/output alias)."""
    __slots__ = ("name", "shape", "dtype", "like", "dtype_arg", "optional", "reuse")

    def __init__(self, name, shape, dtype, like=None, *, dtype_arg=None, optional=False, reuse=None):
        self.name, self.shape, self.dtype, self.like = name, shape, dtype, like
        self.dtype_arg, self.optional, self.reuse = dtype_arg, optional, reuse

    @classmethod
    def same_as(cls, name, arg, **kwargs):
        """An output of argument ``arg``'s shape and dtype."""
        return cls(name, lambda a: tuple(a[arg].shape), lambda a: a[arg], like=arg, **kwargs)


class Op:
    """One op: its name (``torch.ops.aiter.<name>``, ``aiter.<name>``), the C
    symbol, the arguments in functional order, the allocated outputs, and the
    C argument order (names; ``"@params"`` for a params struct that ``params``
    builds from the arguments).

    ``check(args)``: a check of the whole call before the C call, for what
    the library cannot see (topk's k, which it reads from the outputs'
    shape); ``args`` maps names to values, tensors and outputs as described
    arrays (``.shape``, ``.dtype``).  ``scratch``: for aiter.jax, the
    workspace arguments XLA allocates, each a function of the arguments
    giving its size in bytes."""
    __slots__ = ("name", "symbol", "args", "outs", "c_order", "params", "doc", "check", "scratch")

    def __init__(self, name, symbol, args, outs, c_order, params=None, doc="", check=None, scratch=None):
        self.name, self.symbol, self.args, self.outs = name, symbol, tuple(args), tuple(outs)
        self.c_order, self.params, self.doc = tuple(c_order), params, doc
        self.check, self.scratch = check, dict(scratch or {})
        known = {a.name for a in self.args} | {o.name for o in self.outs} | {"@params"}
        unknown = [n for n in self.c_order if n not in known]
        if unknown:
            raise ValueError(f"{name}: c_order names unknown arguments {unknown}")


def enum_to_c(table, what):
    """The ``to_c`` of a string argument naming one of ``table``'s enum values."""
    def to_c(value):
        if not isinstance(value, str) or value not in table:
            names = list(map(repr, table))
            expected = " or ".join(names) if len(names) == 2 else "one of " + ", ".join(names)
            raise InvalidArgumentError(f"{what}: expected {expected}, got {value!r}")
        return table[value]
    return to_c
