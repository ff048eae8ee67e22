#!/usr/bin/env python3
"""What can be proven of the conda packaging without conda-forge (unreachable here).

usage: check_conda.py PREFIX WORKDIR
  PREFIX   a `meson install` of the library, configured with --prefix=PREFIX --libdir=lib
  WORKDIR  an empty folder for the package, the local channel and the environment

1. conda-recipe/recipe.yaml renders (py-rattler-build, the library rattler-build
   is made of) and agrees with the project: version, soversion, outputs, pins,
   the Python dependencies of pyproject.toml, the source files its tests name.
2. The files of PREFIX become a .conda package of the recipe's libaiter output
   (its name, version, build string and run_exports; text files that hold the
   build prefix are marked for relocation), written with conda-package-handling.
3. py-rattler indexes a local channel holding it, solves `libaiter` from that
   channel alone and installs it into a fresh environment.
4. The recipe's own tests of libaiter run against that environment: its
   package_contents, then its test script (the C example built through
   pkg-config, with the environment's relocated aiter.pc).
Not done: building with rattler-build itself (its compilers, meson and clang
come from conda-forge), and the aiter output (its tests need conda's Python).
"""
import asyncio
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

import conda_package_handling.api as cph
import rattler
from rattler_build import Stage0Recipe, VariantConfig
from rattler_build.render import RenderConfig
from rattler_build.tool_config import PlatformConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE_DIR = os.path.join(ROOT, "conda-recipe")
# conda's name of this machine's platform, and the architecture index.json gives it.
ARCH = platform.machine()
SUBDIR = {"x86_64": "linux-64", "aarch64": "linux-aarch64", "ppc64le": "linux-ppc64le"}[ARCH]


def fail(message):
    print(f"conda check failed: {message}", file=sys.stderr)
    sys.exit(1)


# ---- 1. the recipe ------------------------------------------------------------------
def render_outputs():
    """{output name: rendered stage-1 recipe as a dict} for linux-64."""
    recipe = Stage0Recipe.from_file(os.path.join(RECIPE_DIR, "recipe.yaml"))
    variants = VariantConfig.from_file(os.path.join(RECIPE_DIR, "variants.yaml"))
    rendered = recipe.render(variants, RenderConfig(platform=PlatformConfig(target_platform=SUBDIR)))
    return {v.recipe.package.name: v.recipe.to_dict() for v in rendered}


def project_facts():
    with open(os.path.join(ROOT, "meson.build"), encoding="utf-8") as f:
        version = re.search(r"^\s*version:\s*'([^']+)'", f.read(), re.M).group(1)
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    return version, project


def check_recipe(outputs):
    version, project = project_facts()
    problems = []
    if sorted(outputs) != ["aiter", "libaiter"]:
        problems.append(f"outputs are {sorted(outputs)}, expected aiter and libaiter")
    lib, py = outputs.get("libaiter", {}), outputs.get("aiter", {})
    for name, out in outputs.items():
        if out["package"]["version"] != version:
            problems.append(f"{name}: version {out['package']['version']}, meson.build says {version}")
    if project["version"] != version:
        problems.append(f"pyproject.toml version {project['version']} differs from meson.build {version}")
    soversion = lib.get("context", {}).get("soversion")
    if soversion != version.split(".")[0]:
        problems.append(f"context.soversion {soversion} is not the major version of {version}")
    weak = lib.get("requirements", {}).get("run_exports", {}).get("weak", [])
    if not any(p.get("pin_subpackage", {}).get("name") == "libaiter" for p in weak):
        problems.append("libaiter has no run_exports pinning itself")
    run = py.get("requirements", {}).get("run", [])
    if {"pin_subpackage": {"name": "libaiter", "exact": True}} not in run:
        problems.append("aiter does not pin libaiter exactly")
    conda_specs = {re.split(r"[\s<>=!]", s)[0]: s.replace(" ", "") for s in run if isinstance(s, str)}
    for dep in project["dependencies"]:
        name = re.split(r"[<>=!~ ]", dep)[0]
        if conda_specs.get(name) != dep.replace(" ", ""):
            problems.append(f"aiter runs with {conda_specs.get(name)!r}, pyproject.toml asks {dep!r}")
    if conda_specs.get("python") != "python" + project["requires-python"].replace(" ", ""):
        problems.append(f"aiter runs with {conda_specs.get('python')!r}, pyproject.toml requires-python is "
                        f"{project['requires-python']!r}")
    for name, out in outputs.items():
        for test in out.get("tests", []):
            for path in test.get("files", {}).get("source", []):
                if not os.path.exists(os.path.join(ROOT, path)):
                    problems.append(f"{name}: a test names source file {path}, which does not exist")
    if problems:
        fail("recipe and project disagree:\n  " + "\n  ".join(problems))
    names = [f"{n} {o['package']['version']} {o['build']['string']}" for n, o in sorted(outputs.items())]
    print(f"recipe renders: {', '.join(names)}")


# ---- 2. the package -----------------------------------------------------------------
def run_exports_of(lib):
    """The recipe's weak run_exports as match specs: pin_subpackage(upper_bound='x') -> >=V,<next major."""
    version = lib["package"]["version"]
    specs = []
    for pin in lib["requirements"]["run_exports"]["weak"]:
        pin = pin["pin_subpackage"]
        if pin.get("upper_bound") != "x":
            fail(f"run_exports pin {pin}: only upper_bound='x' is understood by this check")
        specs.append(f"{pin['name']} >={version},<{int(version.split('.')[0]) + 1}.0a0")
    return specs


def path_entry(prefix, relative):
    path = os.path.join(prefix, relative)
    if os.path.islink(path):
        return {"_path": relative, "path_type": "softlink", "size_in_bytes": 0,
                "sha256": hashlib.sha256(os.readlink(path).encode()).hexdigest()}
    with open(path, "rb") as f:
        data = f.read()
    entry = {"_path": relative, "path_type": "hardlink", "sha256": hashlib.sha256(data).hexdigest(),
             "size_in_bytes": len(data)}
    if prefix.encode() in data:  # conda rewrites the build prefix at install time
        entry.update(prefix_placeholder=prefix, file_mode="binary" if b"\0" in data else "text")
    return entry


def build_package(lib, prefix, workdir):
    files = sorted(os.path.relpath(os.path.join(d, n), prefix)
                   for d, dirs, names in os.walk(prefix) for n in names + [x for x in dirs
                                                                            if os.path.islink(os.path.join(d, x))])
    stage = os.path.join(workdir, "stage")
    shutil.copytree(prefix, stage, symlinks=True)
    os.makedirs(os.path.join(stage, "info"))
    build = lib["build"]["string"]
    index = {"name": "libaiter", "version": lib["package"]["version"], "build": build,
             "build_number": lib["build"]["number"], "depends": [], "license": lib["about"]["license"],
             "subdir": SUBDIR, "arch": ARCH, "platform": "linux", "timestamp": int(time.time() * 1000)}
    metadata = {
        "index.json": index,
        "paths.json": {"paths_version": 1, "paths": [path_entry(prefix, f) for f in files]},
        "run_exports.json": {"weak": run_exports_of(lib)},
        "about.json": {"summary": lib["about"]["summary"], "license": lib["about"]["license"]},
    }
    for name, content in metadata.items():
        with open(os.path.join(stage, "info", name), "w", encoding="utf-8") as f:
            json.dump(content, f, indent=1, sort_keys=True)
    with open(os.path.join(stage, "info", "files"), "w", encoding="utf-8") as f:
        f.write("\n".join(files) + "\n")
    channel = os.path.join(workdir, "channel")
    os.makedirs(os.path.join(channel, SUBDIR))
    os.makedirs(os.path.join(channel, "noarch"))
    filename = f"libaiter-{index['version']}-{build}.conda"
    cph.create(stage, files + [f"info/{n}" for n in sorted(os.listdir(os.path.join(stage, "info")))],
               filename, out_folder=os.path.join(channel, SUBDIR))
    relocated = [e["_path"] for e in metadata["paths.json"]["paths"] if "prefix_placeholder" in e]
    print(f"package: {filename}, {len(files)} files, relocated at install: {', '.join(relocated) or 'none'}; "
          f"run_exports {metadata['run_exports.json']['weak']}")
    return channel


# ---- 3. channel and environment -------------------------------------------------------
async def install_environment(channel, env):
    await rattler.index.index_fs(channel)
    channel_url = "file://" + os.path.abspath(channel)
    # Only the local channel is given, so the solve cannot reach out for anything.
    records = await rattler.solve([rattler.Channel(channel_url)], ["libaiter"], platforms=[SUBDIR, "noarch"])
    await rattler.install(records, env, cache_dir=os.path.join(os.path.dirname(env), "pkgs"), show_progress=False)
    print(f"environment {env}: {', '.join(f'{r.name.normalized} {r.version} {r.build}' for r in records)}")


# ---- 4. the recipe's tests of libaiter ------------------------------------------------
def run_recipe_tests(lib, env, workdir):
    for test in lib["tests"]:
        if "package_contents" in test:
            contents = test["package_contents"]
            expected = (contents.get("files", []) + [f"include/{h}" for h in contents.get("include", [])] +
                        [f"lib/lib{name}.so" for name in contents.get("lib", [])])
            missing = [p for p in expected if not os.path.exists(os.path.join(env, p))]
            if missing:
                fail(f"package_contents: missing from the environment: {missing}")
            print(f"package_contents: {len(expected)} paths present")
        if "script" in test:
            testdir = os.path.join(workdir, "test")
            for path in test.get("files", {}).get("source", []):
                shutil.copytree(os.path.join(ROOT, path), os.path.join(testdir, path))
            # What conda's pkg-config would find by itself in its own prefix.
            environ = dict(os.environ, PREFIX=env, PKG_CONFIG_PATH=os.path.join(env, "lib", "pkgconfig"))
            script = "set -eux\n" + "\n".join(test["script"])
            result = subprocess.run(["bash", "-c", script], cwd=testdir, env=environ, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            print(result.stdout, end="")
            if result.returncode != 0:
                fail("the recipe's test script failed")
            if f"code objects: {env}/lib/aiter/" not in result.stdout:
                fail("the C example did not find the code objects in the environment")
    with open(os.path.join(env, "lib", "pkgconfig", "aiter.pc"), encoding="utf-8") as f:
        if f"prefix={env}\n" not in f.read():
            fail("aiter.pc was not relocated to the environment")


def main():
    prefix, workdir = (os.path.abspath(p) for p in sys.argv[1:3])
    outputs = render_outputs()
    check_recipe(outputs)
    channel = build_package(outputs["libaiter"], prefix, workdir)
    env = os.path.join(workdir, "env")
    asyncio.run(install_environment(channel, env))
    run_recipe_tests(outputs["libaiter"], env, workdir)
    print("conda: the recipe renders and agrees with the project; libaiter installs from a local channel and works")


if __name__ == "__main__":
    main()
