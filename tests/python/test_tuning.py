"""Kernel selection: tuned tables (format, merge order, buckets, malformed rows),
the untuned and lookup logs, forcing variants, and `python -m aiter tune` end to
end on the CPU with tiny shapes."""
import csv
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import aiter
from aiter import tuning

HEADER = "op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant\n"
ENV = ("AITER_CONFIG_PATH", "AITER_LOG_UNTUNED", "AITER_UNTUNED_PATH", "AITER_LOG_TUNED_CONFIG", "XDG_CONFIG_HOME")


SHIPPED = []


def own_sources():
    """The table sources a test set up: config_sources() without the shipped tables."""
    return [line for line in tuning.config_sources() if line not in SHIPPED]


@pytest.fixture
def env(tmp_path):
    """Sets tuning variables (then reloads); restores them and reloads afterwards.
    The user's own tables are hidden behind an empty XDG_CONFIG_HOME."""
    saved = {name: os.environ.get(name) for name in ENV}
    for name in ENV:
        os.environ.pop(name, None)
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    tuning.reload()
    SHIPPED[:] = tuning.config_sources()  # the tables installed with the library

    def set_env(**values):
        for name, value in values.items():
            os.environ[name] = value
        tuning.reload()

    yield set_env
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    tuning.reload()


def units():
    return tuning.device_key("cpu")[1]


def row(m=4, n=5, k=6, variant="cpu.tiled", cu=0, op="gemm_a16w16", dtype="float32"):
    return f"{op},cpu,{cu},1,{m},{n},{k},{dtype},{dtype},{variant}\n"


def write(path, *rows, header=HEADER):
    path.write_text(header + "".join(rows))
    return str(path)


def run_gemm(rng, m, n=5, k=6):
    """Runs gemm_a16w16 (float32) and returns how its variant was chosen."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    out = aiter.gemm_a16w16(a, w)
    np.testing.assert_allclose(out, a.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-5)
    last = tuning.last_variant()
    assert last.op == "gemm_a16w16" and last.variant in tuning.variants("gemm_a16w16", "cpu")
    # The table rows of these tests all name cpu.tiled; the heuristic may pick another.
    assert last.how == tuning.How.heuristic or last.variant == "cpu.tiled"
    return last.how


# ---- variants and forcing ------------------------------------------------------------

def test_variants_and_device_key():
    assert "cpu.tiled" in tuning.variants("gemm_a16w16", "cpu")
    assert "cpu.tiled" in tuning.variants("gemm_a8w8")
    target, compute_units = tuning.device_key("cpu")
    assert target == "cpu" and compute_units == aiter.library_info()["cpu_threads"]
    with pytest.raises(aiter.InvalidArgumentError, match="unknown op 'gemm_nope'"):
        tuning.variants("gemm_nope")
    with pytest.raises(aiter.InvalidArgumentError, match="device"):
        tuning.variants("gemm_a16w16", "tpu")


def test_force_variant(rng, env):
    env()
    assert run_gemm(rng, 3) == tuning.How.heuristic
    with tuning.force_variant("gemm_a16w16", "cpu.tiled"):
        assert run_gemm(rng, 3) == tuning.How.forced
    assert run_gemm(rng, 3) == tuning.How.heuristic  # restored on exit
    tuning.force_variant("gemm_a16w16", "cpu.tiled")
    try:
        assert run_gemm(rng, 2) == tuning.How.forced
    finally:
        tuning.force_variant("gemm_a16w16", None)
    assert run_gemm(rng, 2) == tuning.How.heuristic


def test_force_errors():
    with pytest.raises(aiter.InvalidArgumentError, match="unknown op 'gemm_x'"):
        tuning.force_variant("gemm_x", "cpu.tiled")
    with pytest.raises(aiter.InvalidArgumentError, match="'no.such' is not a variant of gemm_a16w16"):
        tuning.force_variant("gemm_a16w16", "no.such")


# ---- tables ---------------------------------------------------------------------------

def test_tuned_row_is_used_for_its_bucket(rng, env, tmp_path):
    env(AITER_CONFIG_PATH=write(tmp_path / "t.csv", row(m=4), row(m=16384, n=1, k=1)))
    assert own_sources() == [f"{tmp_path / 't.csv'}: 2 rows"]
    assert run_gemm(rng, 3) == tuning.How.tuned  # bucket 4
    assert run_gemm(rng, 4) == tuning.How.tuned
    assert run_gemm(rng, 2) == tuning.How.heuristic  # bucket 2: no row
    assert run_gemm(rng, 5) == tuning.How.heuristic  # bucket 8: no row
    assert run_gemm(rng, 3, n=6) == tuning.How.heuristic  # another N
    assert run_gemm(rng, 8193, n=1, k=1) == tuning.How.tuned  # beyond 8192: multiples of 8192
    assert run_gemm(rng, 16385, n=1, k=1) == tuning.How.heuristic


def test_m_bucket():
    assert [tuning.m_bucket(m) for m in (0, 1, 2, 3, 5, 4096, 4097, 8192, 8193, 16384, 16385)] == \
        [1, 1, 2, 4, 8, 4096, 8192, 8192, 16384, 16384, 24576]


def test_unknown_variant_falls_back_to_heuristic(rng, env, tmp_path):
    env(AITER_CONFIG_PATH=write(tmp_path / "t.csv", row(variant="gpu.only_kernel")))
    assert run_gemm(rng, 4) == tuning.How.heuristic


@pytest.mark.parametrize("order, how", [(("good", "bad"), tuning.How.heuristic),
                                        (("bad", "good"), tuning.How.tuned)])
def test_later_sources_replace_rows(rng, env, tmp_path, order, how):
    files = {"good": write(tmp_path / "good.csv", row()), "bad": write(tmp_path / "bad.csv", row(variant="nope"))}
    env(AITER_CONFIG_PATH=":".join(files[name] for name in order))
    assert run_gemm(rng, 4) == how


def test_folder_entries_read_sorted_and_user_folder_first(rng, env, tmp_path):
    folder, user = tmp_path / "tables", tmp_path / "xdg" / "aiter" / "configs"
    folder.mkdir()
    user.mkdir(parents=True)
    write(folder / "b.csv", row())  # read after a.csv: its row wins
    write(folder / "a.csv", row(variant="nope"), row(n=7, variant="cpu.tiled"))
    (folder / "notes.txt").write_text("not a table")
    write(user / "u.csv", row(n=8))
    env(AITER_CONFIG_PATH=str(folder))
    sources = own_sources()
    assert sources == [f"{user / 'u.csv'}: 1 rows", f"{folder / 'a.csv'}: 2 rows", f"{folder / 'b.csv'}: 1 rows"]
    assert run_gemm(rng, 4) == tuning.How.tuned
    assert run_gemm(rng, 4, n=7) == tuning.How.tuned
    assert run_gemm(rng, 4, n=8) == tuning.How.tuned  # the user's table


def test_exact_compute_units_beat_any(rng, env, tmp_path):
    cu = units()
    env(AITER_CONFIG_PATH=write(tmp_path / "t.csv", row(cu=0), row(cu=cu, variant="nope"), row(n=7, cu=cu + 1)))
    assert run_gemm(rng, 4) == tuning.How.heuristic  # the exact row (nope) wins over compute_units 0
    assert run_gemm(rng, 4, n=7) == tuning.How.heuristic  # a row for another count does not apply


def test_extra_columns_comments_and_any_column_order(rng, env, tmp_path):
    text = ("# tuned on a quiet machine\n\n"
            "variant, us ,op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,tflops\n"
            "  # a comment between rows\n"
            "cpu.tiled,1.5,gemm_a16w16,cpu,0,1,4,5,6,float32,float32,0.1\r\n")
    path = tmp_path / "t.csv"
    path.write_text(text)
    env(AITER_CONFIG_PATH=str(path))
    assert own_sources() == [f"{path}: 1 rows"]
    assert run_gemm(rng, 4) == tuning.How.tuned


@pytest.mark.parametrize("bad, message", [
    ("gemm_a16w16,cpu,0,1,4,5,6,float32,float32\n", "expected 10 columns as in the header, got 9"),
    ("gemm_a16w16,cpu,0,1,4,5,six,float32,float32,cpu.tiled\n", "k: expected an integer"),
    ("gemm_a16w16,cpu,-1,1,4,5,6,float32,float32,cpu.tiled\n", "compute_units: expected an integer"),
    ("gemm_a16w16,cpu,0,1,4,5,6,float32,bf16,cpu.tiled\n", "out_dtype: unknown dtype 'bf16'"),
    ("gemm_a16w16,cpu,0,1,3,5,6,float32,float32,cpu.tiled\n", "m: 3 is not a bucket"),
    ("gemm_a16w17,cpu,0,1,4,5,6,float32,float32,cpu.tiled\n", "op: unknown op 'gemm_a16w17'"),
    ("gemm_a16w16,cpu,0,1,4,5,6,float32,float32,\n", "variant: must not be empty"),
])
def test_malformed_row_rejects_its_file(rng, env, tmp_path, bad, message):
    broken = write(tmp_path / "broken.csv", "# comment\n", row(n=9), bad, row(n=10))
    good = write(tmp_path / "good.csv", row(n=11))
    env(AITER_CONFIG_PATH=f"{broken}:{good}")
    sources = own_sources()
    assert len(sources) == 2 and sources[1] == f"{good}: 1 rows"
    assert sources[0].startswith(f"{broken}:4: ") and message in sources[0], sources[0]
    assert run_gemm(rng, 4, n=9) == tuning.How.heuristic  # rows before the bad one are not used either
    assert run_gemm(rng, 4, n=11) == tuning.How.tuned


def test_header_problems_and_missing_entries(env, tmp_path):
    no_variant = write(tmp_path / "h.csv", row(), header=HEADER.replace(",variant", ",kernel"))
    env(AITER_CONFIG_PATH=f"{no_variant}:{tmp_path / 'missing.csv'}")
    assert own_sources() == [
        f"{no_variant}:1: the header lacks column 'variant' "
        "(expected op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant)",
        f"{tmp_path / 'missing.csv'}: no such file or folder (named in AITER_CONFIG_PATH)"]


def test_malformed_table_logged_and_ops_keep_working(tmp_path):
    table = write(tmp_path / "t.csv", "gemm_a16w16,cpu,0,1,4,5,6,float32,float32\n")
    code = ("import numpy as np, aiter\n"
            "print(aiter.gemm_a16w16(np.ones((4, 6), np.float32), np.ones((5, 6), np.float32))[0, 0])\n")
    env = dict(os.environ, AITER_CONFIG_PATH=table, AITER_LOG_LEVEL="error", XDG_CONFIG_HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "6.0"
    assert f"[aiter] tuned config {table}:2: expected 10 columns" in done.stderr
    assert done.stderr.count(f"{table}:2") == 1  # reported once


# ---- logs -----------------------------------------------------------------------------

def test_untuned_log(rng, env, tmp_path):
    log = tmp_path / "untuned.csv"
    env(AITER_CONFIG_PATH=write(tmp_path / "t.csv", row(m=8)), AITER_LOG_UNTUNED="1", AITER_UNTUNED_PATH=str(log))
    for m in (3, 3, 5, 8, 3):
        run_gemm(rng, m)
    run_gemm(rng, 2, n=7, k=9)
    cu = units()
    assert log.read_text() == (
        "op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,topk\n"
        f"gemm_a16w16,cpu,{cu},1,3,5,6,float32,float32,0\n"  # real M, once; 5 and 8 have a row
        f"gemm_a16w16,cpu,{cu},1,2,7,9,float32,float32,0\n")


def test_untuned_log_off_by_default(rng, env, tmp_path):
    log = tmp_path / "untuned.csv"
    env(AITER_UNTUNED_PATH=str(log))
    run_gemm(rng, 3)
    assert not log.exists()


def test_lookup_log(rng, env, tmp_path, capfd):
    env(AITER_CONFIG_PATH=write(tmp_path / "t.csv", row()), AITER_LOG_TUNED_CONFIG="1")
    capfd.readouterr()
    run_gemm(rng, 3)
    run_gemm(rng, 9)
    cu = units()
    err = capfd.readouterr().err.splitlines()
    heuristic = tuning.last_variant().variant  # whichever CPU variant the heuristic picks for M = 9
    assert err == [
        f"[aiter] tuned config lookup: op=gemm_a16w16 target=cpu compute_units={cu} batch=1 m=3 (bucket 4) n=5 k=6 "
        "a_dtype=float32 out_dtype=float32 -> cpu.tiled (tuned)",
        f"[aiter] tuned config lookup: op=gemm_a16w16 target=cpu compute_units={cu} batch=1 m=9 (bucket 16) n=5 k=6 "
        f"a_dtype=float32 out_dtype=float32 -> {heuristic} (heuristic)"]
    env(AITER_LOG_TUNED_CONFIG="0")
    run_gemm(rng, 3)
    assert capfd.readouterr().err == ""


# ---- python -m aiter tune / bench -----------------------------------------------------

UNTUNED = ("op,target,compute_units,batch,m,n,k,a_dtype,out_dtype\n"
           "gemm_a16w16,cpu,2,1,3,24,40,float32,float32\n"
           "gemm_a16w16,cpu,2,1,4,24,40,float32,float32\n"  # same bucket as M=3: tuned once, at M=4
           "gemm_a16w16,sm_90a,132,1,1,8,16,bfloat16,bfloat16\n"
           "gemm_a8w8,cpu,2,1,2,16,64,int8,bfloat16\n"
           "gemm_a8w8,cpu,2,1,5,16,64,float8_e4m3fn,float32\n")


def cli(tmp_path, *args):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    env.pop("AITER_CONFIG_PATH", None)
    return subprocess.run([sys.executable, "-m", "aiter", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


def read_csv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_tune_end_to_end_on_cpu(tmp_path, rng, env):
    pytest.importorskip("ml_dtypes", reason="the shapes include bfloat16 and fp8 NumPy arrays")
    (tmp_path / "untuned.csv").write_text(UNTUNED)
    out = tmp_path / "tuned.csv"
    keep = "gemm_a16w16,cpu,0,1,64,99,99,float32,float32,cpu.tiled,,,\n"  # another key: kept
    out.write_text("op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant,us,tflops,error\n" + keep)
    done = cli(tmp_path, "tune", "--op", "a16w16,a8w8", "--untuned", "untuned.csv", "--device", "cpu",
               "--iters", "2", "--out", str(out), "--log-dir", "logs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a16w16: before and after tuning" in done.stdout and "a8w8: before and after tuning" in done.stdout
    assert re.search(r"cpu\.\w+ \(heuristic\)", done.stdout) and re.search(r"cpu\.\w+ \(tuned\)", done.stdout)
    logs = sorted(os.listdir(tmp_path / "logs"))
    phases = ("bench_after", "bench_before", "tuning")
    assert [name.rsplit("_", 1)[0] for name in logs] == [f"{op}_{p}" for op in ("a16w16", "a8w8") for p in phases]
    tuning_log = (tmp_path / "logs" / logs[2]).read_text()
    assert "M=4 N=24 K=40 float32->float32:\n  cpu." in tuning_log and "  cpu.tiled: " in tuning_log
    assert "selected: cpu." in tuning_log
    assert "WARNING" not in (tmp_path / "logs" / logs[0]).read_text()  # every tuned row was used after
    cu = str(units())
    rows = read_csv(out)
    keys = [(r["op"], r["target"], r["compute_units"], r["m"], r["n"], r["k"], r["a_dtype"], r["out_dtype"])
            for r in rows]
    assert keys == [("gemm_a16w16", "cpu", "0", "64", "99", "99", "float32", "float32"),
                    ("gemm_a16w16", "cpu", cu, "1", "8", "16", "bfloat16", "bfloat16"),  # any target's shapes
                    ("gemm_a16w16", "cpu", cu, "4", "24", "40", "float32", "float32"),
                    ("gemm_a8w8", "cpu", cu, "8", "16", "64", "float8_e4m3fn", "float32"),
                    ("gemm_a8w8", "cpu", cu, "2", "16", "64", "int8", "bfloat16")]
    assert all(r["variant"] in tuning.variants(r["op"], "cpu") for r in rows)
    assert all(float(r["us"]) > 0 and float(r["error"]) < 0.016 for r in rows[1:])
    # The library reads what the tuner wrote.
    env(AITER_CONFIG_PATH=str(out))
    a, w = rng.standard_normal((3, 40)).astype(np.float32), rng.standard_normal((24, 40)).astype(np.float32)
    aiter.gemm_a16w16(a, w)
    assert tuning.last_variant() == ("gemm_a16w16", rows[2]["variant"], tuning.How.tuned)


def test_any_compute_units(tmp_path, env):
    pytest.importorskip("ml_dtypes", reason="the shapes include bfloat16 and fp8 NumPy arrays")
    from aiter.cli import main
    (tmp_path / "untuned.csv").write_text(UNTUNED)
    out = tmp_path / "tuned.csv"
    assert main(["tune", "--op", "a16w16", "--untuned", str(tmp_path / "untuned.csv"), "--device", "cpu",
                 "--iters", "1", "--out", str(out), "--log-dir", str(tmp_path / "logs"), "--any-compute-units"]) == 0
    assert {r["compute_units"] for r in read_csv(out)} == {"0"}


def test_timed_calls_step_past_the_cache(monkeypatch):
    """Timing runs each call on the next of enough input sets to overflow the
    device's cache three times over (weights come from memory, as in a model);
    with no cache to step past, one set."""
    from aiter.cli.arrays import NumpyArrays
    from aiter.cli.gemm_cases import Case, Problem
    p = Problem("gemm_a16w16", 1, 4, 64, 32, "float32", "float32")
    per_set = (4 * 32 + 64 * 32 + 4 * 64) * 4
    seen = []

    def record(a, w, out):
        seen.append((id(a), id(w), id(out)))
        out[...] = a @ w.T

    for cache, sets in [(0, 1), (10 * per_set, 24), (per_set, 3), (per_set // 4, 2)]:
        arrays = NumpyArrays(seed=1)
        arrays.cache_bytes = cache
        case = Case(p, arrays)
        monkeypatch.setattr(case, "fn", record)
        seen.clear()
        for _ in range(2 * sets):
            case.run_cold()
        assert len(set(seen)) == sets and seen[:sets] == seen[sets:], (cache, sets)
        assert len({ids[1] for ids in seen}) == sets  # a weight of its own per set


@pytest.mark.parametrize("op, a_dtype", [("gemm_a8w8_blockscale", "float8_e4m3fn"), ("batched_gemm_a8w8", "int8"),
                                         ("batched_gemm_a16w16", "float32")])
def test_tuner_references_of_every_op(op, a_dtype):
    """The tuner's float64 references (the correctness gate of every candidate)
    against loops over the definition: block scales per 128 of K (and 128 x 128
    of W), batches independent."""
    from aiter.cli.arrays import NumpyArrays
    from aiter.cli.gemm_cases import SPECS, Problem
    p = Problem(op, 2, 3, 130, 260, a_dtype, "float32")
    arrays = NumpyArrays(seed=5)
    inputs = SPECS[op].make_inputs(p, arrays)
    ref = SPECS[op].reference(inputs, arrays)
    x = [np.asarray(t).astype(np.float64) for t in inputs]
    if op == "gemm_a8w8_blockscale":
        a, w, sa, sw = x
        kb = np.arange(p.k) // 128
        expect = np.array([[np.sum(a[i] * w[j] * sa[i, kb] * sw[j // 128, kb]) for j in range(p.n)]
                           for i in range(p.m)])
    else:
        expect = np.stack([x[0][b] @ x[1][b].T * (x[2][b] * x[3][b] if len(x) == 4 else 1) for b in range(2)])
    assert ref.shape == expect.shape
    np.testing.assert_allclose(ref, expect, rtol=1e-12, atol=1e-12)


def test_tuner_never_selects_a_candidate_above_tolerance(tmp_path, monkeypatch, capsys, env):
    pytest.importorskip("ml_dtypes", reason="the shapes include bfloat16 and fp8 NumPy arrays")
    from aiter.cli import main
    from aiter.cli import gemm_cases
    (tmp_path / "untuned.csv").write_text(UNTUNED)
    monkeypatch.setitem(gemm_cases.TOLERANCE, "float32", 0.0)  # fp32 accumulation has some error: rejected
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "--op", "a16w16", "--untuned", "untuned.csv", "--device", "cpu", "--iters", "1",
                 "--out", "tuned.csv", "--log-dir", "logs"]) == 0
    assert [r["m"] for r in read_csv(tmp_path / "tuned.csv")] == ["1"]  # only the bfloat16 shape passed
    log = next(p for p in (tmp_path / "logs").iterdir() if "tuning" in p.name).read_text()
    assert "cpu.tiled: REJECTED, error " in log and "> tolerance 0 (never selected)" in log
    assert "selected: none (no variant passed; no row)" in log
    assert "before and after tuning" in capsys.readouterr().out


def test_bench_command(tmp_path):
    pytest.importorskip("ml_dtypes", reason="the shapes include bfloat16 and fp8 NumPy arrays")
    (tmp_path / "untuned.csv").write_text(UNTUNED)
    done = cli(tmp_path, "bench", "--gemm", "a8w8", "--untuned", "untuned.csv", "--device", "cpu", "--iters", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "a8w8:" and len(lines) == 5  # name, header, rule, two shapes
    assert lines[3].startswith("M=2 N=16 K=64 int8->bfloat16") and re.search(r"cpu\.\w+ \(heuristic\)", lines[3])


@pytest.mark.parametrize("args, message", [
    (["tune", "--op", "a4w4"], "--op: unknown op 'a4w4'"),
    (["bench", "--gemm", "a16w16", "--model", "gpt2"], "--model: unknown model 'gpt2'"),
    (["bench", "--gemm", "a16w16", "--m", "0,4"], "--m: expected positive integers"),
    (["tune", "--op", "a16w16", "--untuned", "u.csv", "--m", "4"], "--untuned takes its shapes from the file"),
    (["tune", "--op", "a16w16", "--untuned", "missing.csv"], "No such file"),
])
def test_cli_option_errors(tmp_path, monkeypatch, capsys, args, message):
    from aiter.cli import main
    monkeypatch.chdir(tmp_path)
    extra = ["--log-dir", "logs"] if args[0] == "tune" else []
    assert main(args + ["--device", "cpu"] + extra) == 2
    assert message in capsys.readouterr().out
