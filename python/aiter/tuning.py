"""Kernel selection of the tuned ops (the GEMMs, the fused MoE): list their
variants, force one, see which one a call ran, and re-read the tuned tables.

Op names are the C function names without ``aiter_``: ``gemm_a16w16``,
``gemm_a8w8``, ``gemm_a8w8_blockscale``, ``batched_gemm_a16w16``,
``batched_gemm_a8w8``, ``fused_moe``; ``fused_moe_fp8`` (per-channel scales)
and ``fused_moe_fp8_blockscale`` (3-dim scales) for the two kinds of
``aiter_fused_moe_fp8`` call.  The fused MoE's selection applies to calls with
``variant="auto"``.  Tables and their environment variables are described in
``configs/README.md`` of the source tree.
"""
import enum
import threading
from collections import namedtuple

from ._lib import check, ffi, lib

OPS = ("gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale", "batched_gemm_a16w16", "batched_gemm_a8w8",
       "fused_moe", "fused_moe_fp8", "fused_moe_fp8_blockscale")

_DEVICE_TYPES = {"cpu": 1, "cuda": 2, "rocm": 10, "hip": 10}


class How(enum.IntEnum):
    """How a variant was chosen."""
    heuristic = 0
    tuned = 1
    forced = 2


LastVariant = namedtuple("LastVariant", "op variant how")


def _dl_device(device):
    """("cpu" | "cuda" | "cuda:1" | "rocm" ...) -> a DLDevice value."""
    name, _, index = str(device).partition(":")
    if name not in _DEVICE_TYPES or (index and not index.isdigit()):
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"device: expected cpu, cuda[:N] or rocm[:N], got {device!r}")
    return {"device_type": _DEVICE_TYPES[name], "device_id": int(index or 0)}


def _text(ptr):
    return ffi.string(ptr).decode()


def variants(op, device="cpu"):
    """The variants of ``op`` on ``device``'s backend, in the heuristic's order."""
    count = ffi.new("int *")
    dev = _dl_device(device)
    check(lib.aiter_kernel_variants(op.encode(), dev, ffi.NULL, 0, count))
    names = ffi.new("const char *[]", max(count[0], 1))
    check(lib.aiter_kernel_variants(op.encode(), dev, names, count[0], count))
    return [_text(names[i]) for i in range(count[0])]


_thread = threading.local()  # .forced: op -> variant, this thread's mirror of the library's


def _set_forced(op, variant):
    check(lib.aiter_force_kernel_variant(op.encode(), (variant or "").encode()))
    forced = _thread.__dict__.setdefault("forced", {})
    if variant:
        forced[op] = variant
    else:
        forced.pop(op, None)


class force_variant:
    """Makes this thread's later calls of ``op`` run ``variant`` (None: back to
    the tuned selection).  Works as a plain call or as a context manager that
    restores the previous choice on exit::

        with aiter.tuning.force_variant("gemm_a16w16", "cpu.tiled"):
            aiter.gemm_a16w16(a, w)

    An unknown op or variant raises InvalidArgumentError; a forced variant that
    cannot run a call's shape fails that call with UnsupportedShapeError."""

    def __init__(self, op, variant):
        self._op = op
        self._previous = _thread.__dict__.get("forced", {}).get(op)
        _set_forced(op, variant)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set_forced(self._op, self._previous)
        return False


def last_variant():
    """(op, variant, how) of the last successful tuned-op call on this thread;
    ``how`` is a How (0 heuristic, 1 tuned table row, 2 forced)."""
    op, variant, how = ffi.new("const char **"), ffi.new("const char **"), ffi.new("int *")
    check(lib.aiter_last_kernel_variant(op, variant, how))
    return LastVariant(_text(op[0]), _text(variant[0]), How(how[0]))


def device_key(device="cpu"):
    """(target, compute_units) that table rows for ``device`` are keyed by."""
    target, units = ffi.new("const char **"), ffi.new("int *")
    check(lib.aiter_tuned_config_device(_dl_device(device), target, units))
    return _text(target[0]), units[0]


def reload():
    """Re-reads the tuned tables and AITER_CONFIG_PATH, AITER_LOG_UNTUNED,
    AITER_UNTUNED_PATH, AITER_LOG_TUNED_CONFIG and AITER_VENDOR_BLAS (0: the
    cuBLASLt / hipBLASLt variants never run)."""
    check(lib.aiter_reload_tuned_configs())


def config_sources():
    """One line per table file read ("path: N rows") or rejected ("path:line: why")."""
    text = _text(lib.aiter_tuned_config_sources())
    return text.splitlines() if text else []


def m_bucket(m):
    """The table bucket of M: 1, 2, 4, ..., 8192, then multiples of 8192."""
    if m <= 1:
        return 1
    if m > 8192:
        return -(-m // 8192) * 8192
    return 1 << (m - 1).bit_length()


__all__ = ["OPS", "How", "LastVariant", "variants", "force_variant", "last_variant", "device_key", "reload",
           "config_sources", "m_bucket"]
