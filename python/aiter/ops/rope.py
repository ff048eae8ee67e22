"""Rotary position embedding (RoPE), applied in place to q and k (the wrapper
comes from the op table, ``aiter.spec``), and the cos/sin cache it reads."""
import numpy as np

from .. import dtypes
from .._frameworks import _numpy_dtype
from ..errors import InvalidArgumentError, UnsupportedDtypeError
from ._from_spec import table_op

rope = table_op("rope", """Rotates q [T, Hq, D] and k [T, Hk, D] in place; returns ``(q, k)``.

    ``positions`` [T] (int32 or int64) index rows of ``cos_sin_cache``
    [max_position, R] (cos in the first R/2 columns, sin in the last R/2; fp32 or
    q's dtype).  The first R elements of each head are rotated, the rest left as
    they are.  ``style="neox"`` rotates the pairs (i, i + R/2), ``"gptj"`` the
    pairs (2i, 2i + 1).  ``k`` may be None (then None comes back in its place).
    q and k may be strided views (e.g. of one fused QKV buffer) with a
    contiguous last dim.  JAX arrays are immutable: new arrays are returned.

    A position outside ``[0, max_position)`` raises InvalidArgumentError for CPU
    arrays (nothing is rotated); on a GPU, where the positions are not read by
    the host, that token is left untouched and the rest are rotated.""")


def rope_cos_sin_cache(max_position, rotary_dim, base=10000.0, dtype="float32"):
    """The NumPy cache ``rope`` reads: row p holds cos(p * inv_freq) then
    sin(p * inv_freq), with ``inv_freq = base ** (-arange(0, R, 2) / R)``;
    computed in float64, then rounded to ``dtype`` (fp32, fp16 or bf16)."""
    name = dtypes.canonical(dtype)
    if name not in dtypes.FLOAT_TYPES:
        raise UnsupportedDtypeError(f"dtype: expected one of {', '.join(dtypes.FLOAT_TYPES)}, got {name}")
    if int(rotary_dim) != rotary_dim or rotary_dim < 2 or rotary_dim % 2:
        raise InvalidArgumentError(f"rotary_dim: expected an even integer >= 2, got {rotary_dim!r}")
    if int(max_position) != max_position or max_position < 0:
        raise InvalidArgumentError(f"max_position: expected an integer >= 0, got {max_position!r}")
    rotary_dim, max_position = int(rotary_dim), int(max_position)
    inv_freq = float(base) ** (-np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    angles = np.outer(np.arange(max_position, dtype=np.float64), inv_freq)
    return np.concatenate([np.cos(angles), np.sin(angles)], axis=1).astype(_numpy_dtype(name))
