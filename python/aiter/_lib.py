"""Loading libaiter.so.0 with cffi in ABI mode: no compiler, nothing built at import.

Where the library comes from, first match wins:
  1. $AITER_LIBRARY, a path to libaiter.so.0 (a build tree, say);
  2. the copy inside this package (wheels);
  3. <sys.prefix>/lib/libaiter.so.0: a conda environment's libaiter, which the
     dynamic loader does not search by itself;
  4. the system's libaiter.so.0 (Debian's libaiter0).
The declarations (_cdef.h) are generated from the public headers at build time
and sit in this package and beside the built library.
"""
import os
import sys

from cffi import FFI

from .errors import AiterError, error_for_status

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SONAME = "libaiter.so.0"


def _library_candidates():
    env = os.environ.get("AITER_LIBRARY")
    if env:
        return [env]
    for path in (os.path.join(_PACKAGE_DIR, _SONAME), os.path.join(sys.prefix, "lib", _SONAME)):
        if os.path.exists(path):
            return [path]
    return [_SONAME]


def _read_cdef(library_path):
    # The declarations beside an explicitly named library describe that library.
    folders = [_PACKAGE_DIR]
    if os.sep in library_path:
        folders.insert(0, os.path.dirname(os.path.abspath(library_path)))
    for folder in folders:
        path = os.path.join(folder, "_cdef.h")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise AiterError(f"aiter: _cdef.h not found in {_PACKAGE_DIR} nor beside {library_path}; "
                     "reinstall the package or rebuild the library")


def _load():
    errors = []
    for candidate in _library_candidates():
        try:
            ffi = FFI()
            ffi.cdef(_read_cdef(candidate))
            return ffi, ffi.dlopen(candidate), candidate
        except OSError as e:
            errors.append(f"{candidate}: {e}")
    raise AiterError("aiter: could not load libaiter.so.0 (" + "; ".join(errors) +
                     "); install libaiter0 or the libaiter wheel, or set AITER_LIBRARY")


ffi, lib, library_path = _load()


def check(status):
    """Raise the matching AiterError unless ``status`` is AITER_OK."""
    if status != 0:
        message = ffi.string(lib.aiter_last_error()).decode("utf-8", "replace")
        raise error_for_status(int(status), message or ffi.string(lib.aiter_status_string(status)).decode())
