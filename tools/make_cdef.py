#!/usr/bin/env python3
"""Turn libaiter's public headers into declarations cffi can parse.

usage: make_cdef.py OUTPUT HEADER...

Drops preprocessor lines, C++-only blocks and the export macro; each header is
emitted once, in the order given.  The Python layer loads the result, so the
ABI it calls is always the one the headers declare.
"""
import re
import sys


def strip_header(text: str) -> str:
    text = re.sub(r"\\\n", " ", text)  # join continued macro lines
    out, cplusplus_depth, depth = [], None, 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            directive = stripped[1:].strip()
            if directive.startswith(("if", "ifdef", "ifndef")):
                depth += 1
                if "__cplusplus" in directive and cplusplus_depth is None:
                    cplusplus_depth = depth
            elif directive.startswith("endif"):
                if cplusplus_depth == depth:
                    cplusplus_depth = None
                depth -= 1
            continue
        if cplusplus_depth is not None:
            continue
        out.append(line.replace("AITER_API ", ""))
    return "\n".join(out)


def main(argv):
    output, headers = argv[1], argv[2:]
    seen, parts = set(), []
    for path in headers:
        if path in seen:
            continue
        seen.add(path)
        with open(path, encoding="utf-8") as f:
            parts.append(f"/* ---- {path.rsplit('/', 1)[-1]} ---- */\n" + strip_header(f.read()))
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main(sys.argv)
