#!/usr/bin/env bash
# The README's two commands:
#   tools/bootstrap.sh demo   install libaiter into .venv and run `python -m aiter demo`
#   tools/bootstrap.sh test   install it with the test tools and run every test (C and Python),
#                             the sanitized checks (tools/sanitized_checks.sh), then the
#                             packaging checks (tools/check_packaging.sh)
# Works on a fresh Debian/Ubuntu machine with Python >= 3.10: the compiler and
# venv support come from apt when missing (through sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case "$mode" in demo|test) ;; *) echo "usage: $0 demo|test" >&2; exit 2 ;; esac

missing=()
command -v g++ >/dev/null || missing+=(g++)
command -v gcc >/dev/null || missing+=(gcc)
python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
# The tests also check the AMD code objects, built by Debian's clang-19 when the
# distribution has it (nvcc, for the NVIDIA ones, is used when already installed).
optional=()
if [ "$mode" = test ]; then
  command -v clang-19 >/dev/null || optional+=(clang-19)
  command -v ld.lld-19 >/dev/null || [ -x /usr/lib/llvm-19/bin/ld.lld ] || optional+=(lld-19)
fi
if ((${#missing[@]} + ${#optional[@]})); then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  if ((${#missing[@]})); then
    echo "installing system packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  if ((${#optional[@]})); then
    echo "installing ${optional[*]} for the AMD code objects"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${optional[@]}" >/dev/null ||
      echo "  not available here: AMD targets will be skipped"
  fi
fi

venv=.venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)

if [ "$mode" = demo ]; then
  # Code objects for this machine's GPU only (none without one), and the build's
  # progress shown: the whole log goes to .venv/install.log.
  target=$(tools/present_gpu_target.sh)
  echo "building libaiter into $venv (GPU code objects: $target); the full log: $venv/install.log"
  "$venv/bin/python" -m pip install -v --disable-pip-version-check '.[bf16]' -Csetup-args="-Dgpu_targets=$target" \
    2>&1 | tee "$venv/install.log" | awk '/^ *\[[0-9]+\/[0-9]+\]/ { printf "\r  %-76.76s", $0; fflush() } END { print "" }' ||
    { tail -30 "$venv/install.log"; exit 1; }
  cd /tmp && exec "$OLDPWD/$venv/bin/python" -m aiter demo
fi

# Much of the work runs one process at a time (pip, pytest, the fuzzer, lintian,
# autopkgtest), which leaves a core of a 2-core machine idle.  So the builds that
# need nothing from them run beside them, in the background: each in its own
# process group (stopped, with all it started, if the run fails first), its output
# kept in a log that is shown when it is waited for.
logs=$(mktemp -d)
declare -A bg=()
background() {  # NAME COMMAND...
  local name=$1; shift
  set -m; "$@" >"$logs/$name.log" 2>&1 & bg[$name]=$!; set +m
}
wait_for() {  # NAME [quiet]: its exit status becomes ours; its log is shown (on failure only, if quiet)
  local rc=0
  wait "${bg[$1]}" || rc=$?
  unset "bg[$1]"
  if ((rc)) || [ "${2:-}" != quiet ]; then cat "$logs/$1.log"; fi
  if ((rc)); then echo "$1 failed (exit status $rc)" >&2; exit "$rc"; fi
}
stop_background() {
  local pid
  for pid in ${bg[@]+"${bg[@]}"}; do kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap stop_background EXIT

"$venv/bin/python" -m pip uninstall -q -y libaiter 2>/dev/null || true  # the same version from an earlier run
"${pip[@]}" meson ninja
# The sanitized build, at the lowest priority, from now on: it takes what the
# wheel's build, pip, the C tests and pytest leave idle of the cores.
background sanitized-build env PATH="$PWD/$venv/bin:$PATH" nice -n 19 tools/sanitized_checks.sh --build-only
# The Python tests run against the wheel that would be distributed, built once
# here and installed again into a fresh venv by the packaging checks.
rm -rf build-wheel
wheel=$(PYTHON=python3 tools/build_wheel.sh build-wheel)
export PATH="$PWD/$venv/bin:$PATH"
# torch 2.13 is pinned so that machines with its CPU wheel at hand use it.
"${pip[@]}" "$wheel[test]" 'torch==2.13.*' meson ninja
rm -rf build-test
# C API tests: no code objects, and no libaiter_xla.so (the wheel's is tested by pytest).
meson setup build-test -Dpython=disabled -Dgpu_targets=none -Djax=disabled >/dev/null
meson test -C build-test --print-errorlogs
# From /tmp, so `import aiter` is the installed package, not a source folder.
(cd /tmp && "$OLDPWD/$venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/tests/python")
wait_for sanitized-build quiet
# The CPU backend again under AddressSanitizer + UBSan: C tests, the op suites, a
# bounded fuzz run; in the background, beside the packaging checks, which run at
# the lowest priority so that the fuzzer keeps a core of its own for its 90 seconds.
# (Neither touches what the other uses: the sanitized checks load the build's
# library by path, with the source tree's package, not the system's.)
echo "== sanitized checks: running in the background; their output follows the packaging checks'"
background sanitized tools/sanitized_checks.sh --prebuilt "$venv/bin/python"
# Debian packages, the wheel in a fresh venv, the conda recipe and package.
packaging=0
nice -n 19 tools/check_packaging.sh "$wheel" || packaging=$?
echo
wait_for sanitized  # its output, and its failure, whatever the packaging checks' outcome
exit "$packaging"
