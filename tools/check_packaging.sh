#!/usr/bin/env bash
# The packaging checks, run by `tools/bootstrap.sh test` (and so by CI), last, beside the sanitized checks:
#   deb    dpkg-buildpackage on a copy of the tree (build profile pkg.libaiter.onegpu:
#          one AMD target's code objects, see debian/rules), lintian (no errors allowed),
#          apt install of libaiter0, libaiter-dev and python3-aiter, then their
#          autopkgtests (debian/tests) run by autopkgtest against them
#   wheel  the wheel given, installed into a fresh venv: tag, contents, `info`, `demo`
#   conda  tools/check_conda.py on a `meson install` of the library into a prefix
#          (built in the background while the deb is checked by lintian and autopkgtest)
# What this machine cannot do is reported as skipped, with the reason.  The
# packages, venvs and environments it installs are removed at the end; the build
# dependencies it installs with apt (as bootstrap does with compilers) stay.
# usage: tools/check_packaging.sh WHEEL
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=$(realpath "$1")
version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" meson.build)
work=$(mktemp -d /tmp/aiter-packaging.XXXXXX)
sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
apt_get() { DEBIAN_FRONTEND=noninteractive $sudo apt-get -y -qq "$@"; }
debs_installed=0
passed=0 skipped=0
conda_pid="" conda_started=0

cleanup() {
  # The conda build, when still running (a failure before its check): its process group.
  if [ -n "$conda_pid" ]; then kill -TERM -- "-$conda_pid" 2>/dev/null || true; wait "$conda_pid" 2>/dev/null || true; fi
  if ((debs_installed)); then apt_get purge libaiter0 libaiter-dev python3-aiter >/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== packaging: %s\n' "$*"; }
pass() { echo "PASS $1 (${SECONDS}s since the packaging checks began)"; passed=$((passed + 1)); }
skip() { echo "SKIPPED $1"; skipped=$((skipped + 1)); }

# The environment of a Debian build: Debian's meson and python3, none of the
# venv's (bootstrap puts it first on PATH) nor an nvcc from /usr/local.
debian_env() {
  env -i HOME="$HOME" PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEB_BUILD_OPTIONS="parallel=$(nproc)" ${profile:+DEB_BUILD_PROFILES=$profile} "$@"
}

check_deb() {
  step "Debian packages"
  if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
    skip "deb: not a Debian or Ubuntu system (no apt-get/dpkg): the .debs were not built"
    return
  fi
  if dpkg-query -W -f='${Status}' libaiter0 2>/dev/null | grep -q " installed"; then
    skip "deb: libaiter0 is already installed on this machine; not replacing it"
    return
  fi
  local top="$work/deb" src="$work/deb/libaiter-$version"
  mkdir -p "$src"
  # The tree as the working copy has it: tracked files and new ones git does not
  # ignore (outside git: everything but .git, build folders and venvs).
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -C "$src" -xf -
  else
    tar --exclude='./.git' --exclude='./build*' --exclude='./.venv*' --exclude='./dist' -cf - . | tar -C "$src" -xf -
  fi
  tar -C "$top" --exclude="libaiter-$version/debian" -cJf "$top/libaiter_$version.orig.tar.xz" "libaiter-$version"

  apt_get update
  # One AMD target (gfx942) is enough to check the packaging of code objects; the
  # wheel, built by the same compiler with the same flags, carries every target
  # and the test suite checks them.  Without the profile the package has them all.
  profile=pkg.libaiter.onegpu
  if ! apt-cache show clang-19 lld-19 >/dev/null 2>&1; then
    profile=pkg.libaiter.nogpu
    echo "clang-19 is not in this distribution's archive: building with the $profile profile (no code objects)"
  fi
  apt_get install dpkg-dev lintian autopkgtest >/dev/null
  if ! apt_get build-dep ${profile:+-P "$profile"} "$src" >"$top/build-dep.log" 2>&1; then
    cat "$top/build-dep.log"
    if [ "$(. /etc/os-release && echo "$ID")" = debian ]; then
      echo "apt-get build-dep failed"
      return 1
    fi
    skip "deb: this distribution cannot provide debian/control's Build-Depends (above); they are Debian bookworm's"
    return
  fi

  local start=$SECONDS
  (cd "$src" && debian_env dpkg-buildpackage -us -uc >"$top/build.log" 2>&1) || {
    tail -40 "$top/build.log"; echo "dpkg-buildpackage failed (log above)"; return 1; }
  echo "dpkg-buildpackage -us -uc (DEB_BUILD_PROFILES=$profile): $((SECONDS - start))s"
  start_conda_build
  sed -n '/^  GPU targets/,/^$/p' "$top/build.log"
  ls "$top"/*.deb "$top"/*.dsc | xargs -n1 basename

  local changes=("$top"/libaiter_"$version"-*.changes)
  lintian --pedantic --display-info --fail-on error "${changes[@]}" >"$top/lintian.log" 2>&1 || {
    cat "$top/lintian.log"; echo "lintian found errors"; return 1; }
  echo "lintian (errors fail, overrides in debian/*.lintian-overrides):"
  grep -v "running with root" "$top/lintian.log" | sed 's/^/  /' || echo "  no tags"

  apt_get install "$top"/libaiter0_*.deb "$top"/libaiter-dev_*.deb "$top"/python3-aiter_*.deb >/dev/null
  debs_installed=1
  dpkg-query -W libaiter0 libaiter-dev python3-aiter

  # -B: test the packages installed above; null: on this machine, as they are.
  (debian_env $sudo autopkgtest -B "$src" -- null >"$top/autopkgtest.log" 2>&1) || {
    cat "$top/autopkgtest.log"; echo "autopkgtest failed"; return 1; }
  grep -E "passed|all checks passed|PASS:|^libaiter [0-9]" "$top/autopkgtest.log" | sed 's/^/  /'
  sed -n '/@@@@ summary/,$p' "$top/autopkgtest.log"

  apt_get purge libaiter0 libaiter-dev python3-aiter >/dev/null
  debs_installed=0
  pass "deb: built, lintian clean of errors, installed, autopkgtests passed, purged"
}

check_wheel() {
  step "wheel $(basename "$wheel")"
  case "$(basename "$wheel")" in
    libaiter-"$version"-py3-none-manylinux_*_"$(uname -m)".whl) ;;
    *) echo "unexpected wheel name: want libaiter-$version-py3-none-manylinux_*_$(uname -m).whl"; return 1 ;;
  esac
  local listing
  listing=$(python3 -m zipfile -l "$wheel")
  for member in aiter/libaiter.so.0 aiter/_cdef.h aiter/kernels/manifest.tsv aiter/__main__.py \
    aiter/libaiter_xla.so aiter/jax/__init__.py aiter/libaiter_torch.so; do
    grep -q "^$member " <<<"$listing" || { echo "the wheel lacks $member"; return 1; }
  done
  echo "holds the library, its declarations and $(grep -c 'aiter/kernels/.*\.\(hsaco\|cubin\) ' <<<"$listing") code objects"
  python3 -m venv "$work/wheel-venv"
  "$work/wheel-venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel"
  (cd "$work" && "$work/wheel-venv/bin/python" -m aiter info && "$work/wheel-venv/bin/python" -m aiter demo)
  # The library and code objects are the wheel's own, not a system copy.
  (cd "$work" && "$work/wheel-venv/bin/python" -c '
import aiter, os, sys
info = aiter.library_info()
inside = lambda p: os.path.realpath(p).startswith(os.path.realpath(sys.prefix) + os.sep)
assert inside(info["library_path"]) and inside(info["kernel_dir"]), info
# The XLA targets of aiter.jax load beside it (through $ORIGIN), with no jax here.
import ctypes; ctypes.CDLL(os.path.join(os.path.dirname(info["library_path"]), "libaiter_xla.so")).aiter_xla_targets')
  pass "wheel: installs into a fresh venv and runs the demo from its own library"
}

# The conda check's tools and its `meson install`, which need neither root nor the
# deb: in the background (its own process group, output to a log) from the end of
# dpkg-buildpackage, they take the core lintian and autopkgtest leave idle.
start_conda_build() {
  ((conda_started)) && return
  conda_started=1
  set -m; conda_build >"$work/conda-build.log" 2>&1 & conda_pid=$!; set +m
}
conda_build() {
  local prefix="$work/conda/build_prefix"
  python3 -m venv "$work/conda-tools"
  "$work/conda-tools/bin/python" -m pip install -q --disable-pip-version-check \
    py-rattler py-rattler-build conda-package-handling 'tomli; python_version < "3.11"'
  # One AMD target is enough to prove that the code objects are found in a conda
  # layout; the recipe itself builds every target (gpu_targets=auto).
  meson setup "$work/conda-build" --prefix="$prefix" --libdir=lib -Dpython=disabled -Dtests=false \
    -Dgpu_targets=gfx942 -Djax=disabled >/dev/null
  ninja -C "$work/conda-build" -j"$(nproc)" >/dev/null
  meson install -C "$work/conda-build" --no-rebuild >/dev/null
}

check_conda() {
  step "conda"
  start_conda_build  # when the deb check did not
  local rc=0
  wait "$conda_pid" || rc=$?
  conda_pid=""
  cat "$work/conda-build.log"
  if ((rc)); then echo "the conda build failed (log above)"; return 1; fi
  "$work/conda-tools/bin/python" tools/check_conda.py "$work/conda/build_prefix" "$work/conda"
  pass "conda: recipe consistent; the library's .conda installs from a local channel and the C example uses it"
}

check_deb
check_wheel
check_conda
echo
echo "packaging: $passed passed, 0 failed, $skipped skipped"
