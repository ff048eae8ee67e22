"""``python -m aiter --cflags --libs`` (and ``--pkgconfig-dir``): how a C or C++
program finds the headers and the library of an installed aiter package.

    cc demo.c $(python -m aiter --cflags --libs)

Wheels carry the headers in aiter/include and aiter.pc in aiter/pkgconfig;
run from a source tree (PYTHONPATH=python), the tree's include/ serves and the
library is the one aiter loaded."""
import os

FLAGS = ("--cflags", "--libs", "--pkgconfig-dir")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _include_dir():
    bundled = os.path.join(_PACKAGE, "include")
    if os.path.isfile(os.path.join(bundled, "aiter", "aiter.h")):
        return bundled
    tree = os.path.join(os.path.dirname(os.path.dirname(_PACKAGE)), "include")  # <repo>/python/aiter -> <repo>
    if os.path.isfile(os.path.join(tree, "aiter", "aiter.h")):
        return tree
    return None


def _library():
    from .._lib import library_path
    return os.path.abspath(library_path) if os.sep in library_path else None


def run(argv):
    """Prints the requested flags on one line; 2 when something is missing."""
    words = []
    for flag in argv:
        if flag == "--cflags":
            include = _include_dir()
            if include is None:
                print("python -m aiter --cflags: no aiter headers in this package (install the libaiter wheel, "
                      "or libaiter-dev for the system library)")
                return 2
            words.append(f"-I{include}")
        elif flag == "--libs":
            library = _library()
            if library is None:
                words.append("-laiter")  # the system's libaiter, found by the linker
            else:
                folder = os.path.dirname(library)
                words += [f"-L{folder}", f"-l:{os.path.basename(library)}", f"-Wl,-rpath,{folder}"]
        else:
            words.append(os.path.join(_PACKAGE, "pkgconfig"))
    print(" ".join(words))
    return 0
