"""python -m aiter --cflags --libs / --pkgconfig-dir: a C program builds and runs
against the headers and library of the installed package."""
import os
import shutil
import subprocess
import sys

import pytest

import aiter

PROGRAM = r"""
#include <stdio.h>
#include "aiter/aiter.h"
int main(void) { printf("%s\n", aiter_version_string()); return 0; }
"""


def _flags(*args):
    result = subprocess.run([sys.executable, "-m", "aiter", *args], capture_output=True, text=True)
    if result.returncode != 0 and "no aiter headers in this package" in result.stdout:
        # The package uses a system library (Debian's python3-aiter): C users take
        # libaiter-dev's pkg-config file instead, checked by its own autopkgtest.
        pytest.skip(result.stdout.strip())
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split()


def _build_and_run(tmp_path, flags):
    source = tmp_path / "version.c"
    source.write_text(PROGRAM)
    binary = tmp_path / "version"
    subprocess.run([shutil.which("cc"), str(source), "-o", str(binary), *flags], check=True)
    return subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_cflags_and_libs_build_a_c_program(tmp_path):
    assert _build_and_run(tmp_path, _flags("--cflags", "--libs")) == aiter.__version__


def test_unknown_flag_mixes_are_left_to_the_subcommand_parser():
    result = subprocess.run([sys.executable, "-m", "aiter", "--cflags", "info"], capture_output=True, text=True)
    assert result.returncode != 0


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("pkg-config") is None,
                    reason="no C compiler or pkg-config")
def test_pkgconfig_dir_of_a_wheel(tmp_path):
    folder = _flags("--pkgconfig-dir")[0]
    if not os.path.exists(os.path.join(folder, "aiter.pc")):
        pytest.skip("aiter.pc is installed by the wheel build, not present in a source tree")
    env = dict(os.environ, PKG_CONFIG_PATH=folder)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "aiter"], env=env, capture_output=True, text=True,
                           check=True).stdout.split()
    assert _build_and_run(tmp_path, flags) == aiter.__version__
