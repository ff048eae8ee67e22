"""What every AITER-compatible function shares: refusing AITER options that
libaiter does not implement (with an error naming the function, the argument
and what is supported), and views that reconcile AITER's shapes with the
library's."""
from ..errors import InvalidArgumentError


def refuse(function, name, value, supported):
    """Raises unless ``value`` equals ``supported`` (AITER's default)."""
    if value != supported:
        raise InvalidArgumentError(
            f"aiter.compat.{function}: {name}={value!r} is not supported by libaiter (only {supported!r})")


def refuse_tensor(function, name, value):
    if value is not None:
        raise InvalidArgumentError(f"aiter.compat.{function}: {name} is not supported by libaiter (pass None)")


def row_scale_view(scale, x):
    """AITER's per-row scales come as [M] or [M, 1]: the library's [..., 1] view."""
    return scale.view(tuple(x.shape[:-1]) + (1,))
