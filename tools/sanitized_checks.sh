#!/usr/bin/env bash
# The CPU backend under AddressSanitizer + UndefinedBehaviorSanitizer, halting on
# the first report, as run by `tools/bootstrap.sh test` (and so by CI):
#   1. the C API tests (meson test) of a sanitized build;
#   2. the CPU Python suite's ABI cases (tests/python/test_abi_hardening.py) and
#      the op suites named in $SANITIZED_SUITES, against that build;
#   3. a bounded run of the ABI fuzzer (tests/fuzz/fuzz_abi.py), $FUZZ_SECONDS long.
# usage: tools/sanitized_checks.sh PYTHON   (a Python with numpy, ml_dtypes, cffi, pytest)
#        tools/sanitized_checks.sh --build-only          configure and build build-sanitized, nothing else
#        tools/sanitized_checks.sh --prebuilt PYTHON     1-3 on the build that --build-only made
# (bootstrap builds in the background, while other tests run, then runs the checks.)
# A fuzzer finding prints the case; `python tests/fuzz/fuzz_abi.py --replay SEED:INDEX`
# reruns it, and each crash becomes an entry of tests/fuzz/regressions.json.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=all
case "${1:-}" in --build-only|--prebuilt) stage=${1#--}; shift ;; esac
if [ "$stage" != build-only ]; then
  python=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute, and still the venv's (no realpath)
fi
build=build-sanitized
fuzz_seconds=${FUZZ_SECONDS:-90}
suites=${SANITIZED_SUITES:-test_norm.py test_activation.py test_quant.py test_rope.py test_moe.py test_attention.py test_gemm.py test_gemm_batched.py test_gemm_blockscale.py}

# gcc's sanitizer runtimes; Python itself is not instrumented, so they are preloaded.
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
[ -f "$asan" ] && [ -f "$ubsan" ] || { echo "sanitized checks: gcc's libasan/libubsan not found" >&2; exit 1; }

if [ "$stage" != prebuilt ]; then
  rm -rf "$build"
  meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dpython=disabled -Dgpu_targets=none -Djax=disabled >/dev/null
  ninja -C "$build" >/dev/null
  [ "$stage" = all ] || exit 0
fi
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
echo "== sanitized: C API tests"
meson test -C "$build" --print-errorlogs

echo "== sanitized: Python ABI cases and op suites (CPU)"
run_python() {
  (cd /tmp && env AITER_LIBRARY="$OLDPWD/$build/libaiter.so.0" PYTHONPATH="$OLDPWD/python" \
    LD_PRELOAD="$asan:$ubsan" "$python" "$@")
}
paths=("$PWD/tests/python/test_abi_hardening.py")
for suite in $suites; do paths+=("$PWD/tests/python/$suite"); done
run_python -m pytest -q --capture=sys -p no:cacheprovider -m "not gpu" "${paths[@]}"

echo "== sanitized: ABI fuzzer, ${fuzz_seconds}s"
run_python -W ignore "$PWD/tests/fuzz/fuzz_abi.py" --seconds "$fuzz_seconds" --journal /tmp/aiter-fuzz-journal.json
