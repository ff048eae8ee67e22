"""The Python signature of a table op's wrappers (``aiter.<name>``,
``aiter.jax.<name>``), as source text for the generated functions.

Arguments come in table order; ``keyword`` ones after ``*``, then, for the
functional API, ``return_<out>=False`` for each optional output and the
outputs themselves (``out=None``).  An argument without a default after one
with a default (rope's positions after the optional k) gets the ``_MISSING``
sentinel, which the body turns into a TypeError."""


def default_name(arg):
    """The generated function's global holding the argument's default."""
    return f"_default_{arg.name}"


def default_value(arg):
    return arg.default  # None for an optional argument without a shown default


def parameters(op, outputs=True, skip=()):
    """``(source of the parameter list, names that need the _MISSING check)``;
    ``outputs=False`` leaves the outputs out (aiter.jax), ``skip`` arguments."""
    positional, keyword, missing, defaulted = [], [], [], False
    for arg in op.args:
        if arg.name in skip:
            continue
        if arg.keyword:
            keyword.append(f"{arg.name}={default_name(arg)}" if arg.has_default else arg.name)
            continue
        defaulted = defaulted or arg.has_default
        if arg.has_default:
            positional.append(f"{arg.name}={default_name(arg)}")
        elif defaulted:
            positional.append(f"{arg.name}=_MISSING")
            missing.append(arg.name)
        else:
            positional.append(arg.name)
    keyword += [f"return_{o.name}=False" for o in op.outs if o.optional]
    if outputs:
        keyword += [f"{o.name}=None" for o in op.outs]
    return ", ".join(positional + (["*"] + keyword if keyword else [])), missing


def missing_checks(op, missing, indent="    "):
    """The lines raising TypeError for a required argument left out."""
    return [f"{indent}if {name} is _MISSING: raise TypeError({f'{op.name}() missing argument {name!r}'!r})"
            for name in missing]
