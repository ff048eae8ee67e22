"""Tuned tables are parsed per target: a CPU call parses only the files that can
hold rows for the CPU (their text holds "cpu"), never the GPU tables, and still
selects what reading every file would; listing the sources parses the rest."""
import os
import subprocess
import sys

import pytest

HEADER = "op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant\n"

# Runs one float32 gemm_a16w16 of M 3 (bucket 4), N 5, K 6 on the CPU, then lists
# the sources; stderr gets a marker between the two so a test can tell which
# log lines came from the call.
CALL_THEN_SOURCES = """
import os, numpy as np, aiter
from aiter import tuning
a, w = np.ones((3, 6), np.float32), np.ones((5, 6), np.float32)
assert aiter.gemm_a16w16(a, w)[0, 0] == 6.0
last = tuning.last_variant()
print(last.variant, last.how.name)
os.write(2, b"--- sources\\n")
print("\\n".join(tuning.config_sources()))
"""


def gemm_row(target, m=4, variant="cpu.tiled"):
    return f"gemm_a16w16,{target},0,1,{m},5,6,float32,float32,{variant}\n"


def write(path, *rows):
    path.write_text(HEADER + "".join(rows))
    return str(path)


def run(tmp_path, config_path, level):
    env = dict(os.environ, AITER_LOG_LEVEL=level, XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    env.pop("AITER_CONFIG_PATH", None)
    if config_path:
        env["AITER_CONFIG_PATH"] = config_path
    done = subprocess.run([sys.executable, "-c", CALL_THEN_SOURCES], env=env, capture_output=True, text=True,
                          check=True)
    during, _, after = done.stderr.partition("--- sources\n")
    return done.stdout.splitlines(), during, after


def test_cpu_call_skips_a_broken_gpu_table_until_sources_are_listed(tmp_path):
    # m 3 is not a bucket: the whole file is rejected once it is parsed.
    gpu = write(tmp_path / "gpu.csv", gemm_row("sm_90a", variant="mma"), gemm_row("sm_90a", m=3, variant="mma"))
    cpu = write(tmp_path / "cpu.csv", gemm_row("cpu"))
    out, during, after = run(tmp_path, f"{gpu}:{cpu}", "error")
    assert out[0] == "cpu.tiled tuned"
    assert gpu not in during, during
    assert after.count(f"{gpu}:3: m: 3 is not a bucket") == 1, after
    assert out[-2:] == [f"{gpu}:3: m: 3 is not a bucket (1, 2, 4, ..., 8192, then multiples of 8192; "
                        "the next bucket is 4)", f"{cpu}: 1 rows"]


def test_cpu_rows_of_a_file_shared_with_gpu_rows_are_used_in_merge_order(tmp_path):
    mixed = write(tmp_path / "a.csv", gemm_row("sm_90a", variant="mma"), gemm_row("cpu", variant="cpu.no_such"))
    later = write(tmp_path / "b.csv", gemm_row("cpu"), gemm_row("gfx942", variant="portable"))
    gpu_only = write(tmp_path / "c.csv", gemm_row("sm_90a", variant="wgmma"))
    out, _, _ = run(tmp_path, f"{mixed}:{later}:{gpu_only}", "error")
    assert out[0] == "cpu.tiled tuned"  # b.csv's row replaced a.csv's
    out, _, _ = run(tmp_path, f"{later}:{mixed}", "error")
    assert out[0].endswith(" heuristic")  # a.csv's unknown variant won: no tuned row applies


def test_shipped_gpu_tables_are_not_read_by_a_cpu_call(tmp_path):
    out, during, after = run(tmp_path, "", "info")
    shipped = [line.split(": ")[0] for line in out[1:] if line.endswith(" rows")]
    assert out[0].endswith(" heuristic")
    if not shipped:
        pytest.skip("no tables installed with this library")
    for path in shipped:
        with open(path) as table:
            if "cpu" in table.read():
                continue
        assert path not in during, during
        assert f"tuned config {path}: " in after, after
