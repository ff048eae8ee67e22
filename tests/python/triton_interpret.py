"""What the tests of Triton kernel sources under Triton's CPU interpreter share
(test_gemm_triton_interpret.py, test_attention_triton_interpret.py): the
interpreter must be switched on before triton is imported, so each test file
runs its cases in a child process of itself and reads their verdicts back."""
import importlib.util
import json
import os
import subprocess
import sys


def load_kernel(path, name):
    """The kernel source at `path` as a module (under TRITON_INTERPRET=1: interpreted)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report(module, cases):
    """In the child: runs each case on the kernel module, prints {case: "ok" or the error}."""
    results = {}
    for name, case in cases.items():
        try:
            case(module)
            results[name] = "ok"
        except Exception as e:  # noqa: BLE001 (reported to the parent test)
            results[name] = f"{type(e).__name__}: {e}"
    print(json.dumps(results))


def run_or_collect(namespace, kernel, module_name, cases, case_names):
    """The end of each interpreter test file: as the child (__main__), runs the
    cases on the interpreted kernel; under pytest, adds to the file's namespace
    one test per case name, reading the child's verdicts (one child run a file)."""
    if namespace["__name__"] == "__main__":
        report(load_kernel(kernel, module_name), cases())
        return
    import pytest

    @pytest.fixture(scope="module")
    def interpreted_results():
        return interpreted(namespace["__file__"])

    @pytest.mark.parametrize("case", case_names)
    def test_interpreted_kernel(interpreted_results, case):
        assert interpreted_results[case] == "ok", interpreted_results[case]

    namespace.update(interpreted_results=interpreted_results, test_interpreted_kernel=test_interpreted_kernel)


def interpreted(test_file, timeout=900):
    """In the parent: runs `test_file` as the child, returns its verdicts."""
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1")
    run = subprocess.run([sys.executable, test_file], capture_output=True, text=True, env=env, timeout=timeout)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
