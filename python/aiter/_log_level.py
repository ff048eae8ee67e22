"""``aiter.set_log_level`` and the spelling of ``AITER_LOG_LEVEL``.

The C library reads AITER_LOG_LEVEL once, at its first log call, and knows
the lower-case names ``off``, ``error``, ``info``, ``debug`` (or 0-3).  So
``import aiter`` rewrites the variable in that form (``INFO`` works, and an
unknown value is warned about once), and ``set_log_level`` sets it: it takes
effect when set before the library's first log line (at import, or before the
first op), as there is no C call to change the level later."""
import os
import warnings

LEVELS = ("off", "error", "info", "debug")
_warned = set()


def canonical_level(value, what="AITER_LOG_LEVEL"):
    """``value`` (a name in any case, or 0-3) as the library's spelling; None if unknown."""
    text = str(value).strip().lower()
    if text.isdigit() and int(text) < len(LEVELS):
        return LEVELS[int(text)]
    return text if text in LEVELS else None


def normalize_environment():
    """Rewrites AITER_LOG_LEVEL in the library's spelling; warns once about an unknown value."""
    raw = os.environ.get("AITER_LOG_LEVEL")
    if raw is None or raw == "":
        return
    level = canonical_level(raw)
    if level is None:
        if raw not in _warned:
            _warned.add(raw)
            warnings.warn(f"AITER_LOG_LEVEL={raw!r} is not one of {', '.join(LEVELS)} (any case) or 0-3; "
                          "logging stays off", RuntimeWarning, stacklevel=3)
        return
    os.environ["AITER_LOG_LEVEL"] = level


def set_log_level(level):
    """Sets libaiter's log level: "off", "error", "info" or "debug" (any case) or
    0-3.  The library reads it at its first log line, so call this before the
    first op runs (the order of ``import aiter; aiter.set_log_level("info")``)."""
    canonical = canonical_level(level)
    if canonical is None:
        from .errors import InvalidArgumentError
        raise InvalidArgumentError(f"aiter.set_log_level: level: expected one of {', '.join(LEVELS)} (any case) "
                                   f"or 0-3, got {level!r}")
    os.environ["AITER_LOG_LEVEL"] = canonical
    return canonical
