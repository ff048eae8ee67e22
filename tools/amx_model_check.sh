#!/usr/bin/env bash
# The AMX GEMM path on a CPU without AMX: a copy of HEAD's tree whose AMX
# kernel calls the software model tools/amx_model.h instead of the tile
# instructions, and whose CPU detection claims AMX when AITER_FAKE_AMX is set;
# then the CPU tests that reach the GEMM kernels, at level amx.
# usage: tools/amx_model_check.sh [python]   (a Python with numpy, ml_dtypes, cffi, pytest, xdist)
set -euo pipefail
py=${1:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
git -C "$repo" archive HEAD | tar x -C "$dir"
cp "$repo/tools/amx_model.h" "$dir/libaiter/cpu/amx_model.h"
sed -i 's|#include <immintrin.h>|#include "cpu/amx_model.h"|; s|__attribute__((target(AITER_TARGET_AMX)))||g' \
  "$dir/libaiter/cpu/gemm_amx_kernels.cpp"
sed -i 's|^\(  f.amx_allowed = .*\)$|\1\n  if (std::getenv("AITER_FAKE_AMX")) f.amx = f.amx_allowed = true;|' "$dir/libaiter/cpu/isa.cpp"
grep -q AITER_FAKE_AMX "$dir/libaiter/cpu/isa.cpp"
meson setup "$dir/build" "$dir" -Dgpu_targets=none -Djax=disabled -Dtests=false >/dev/null
ninja -C "$dir/build" >/dev/null
export PYTHONPATH="$dir/python" AITER_LIBRARY="$dir/build/libaiter.so.0" AITER_FAKE_AMX=1
"$py" -m aiter info | grep "CPU kernels"
T="$dir/tests/python"
cd /tmp && "$py" -m pytest -q -n 2 -p no:cacheprovider "$T"/test_gemm.py "$T"/test_gemm_variants.py \
  "$T"/test_gemm_dot_stream.py "$T"/test_gemm_batched.py "$T"/test_moe_isa.py "$T"/test_mla_isa.py "$T"/test_moe.py \
  "$T"/test_mla.py "$T"/test_moe_fused.py "$T"/test_cpu_demo.py
rm -rf "$dir"
