"""Tuned kernel selection of the fused MoE: the variant lists, table rows keyed by
(target, compute units, experts, token bucket, inter, hidden, dtypes, topk), the
untuned log, and `python -m aiter tune --op fused_moe...` run on the CPU."""
import csv
import os
import re

import numpy as np
import pytest

import aiter
from aiter import tuning
from harness import np_dtype, on_host, poisoned_on, to_device
from test_moe_fp8 import moe_fp8_ref
from test_moe_fused import moe_ref, routed_ids
from test_tuning import env, own_sources, units  # noqa: F401 (env is a fixture)

HEADER = "op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,topk,variant\n"
GPU_VARIANTS = ["mma", "mma_n128", "mma_n64", "triton", "triton_wide", "triton_narrow", "decode", "portable"]


def layer(rng, tokens, experts, k, hidden, inter, dtype="bfloat16"):
    dt = np_dtype(dtype)
    x = rng.standard_normal((tokens, hidden)).astype(dt)
    w1 = (rng.standard_normal((experts, 2 * inter, hidden)) / np.sqrt(hidden)).astype(dt)
    w2 = (rng.standard_normal((experts, hidden, inter)) / np.sqrt(inter)).astype(dt)
    return x, w1, w2, rng.random((tokens, k)).astype(np.float32), routed_ids(rng, tokens, experts, k)


def moe_row(m=8, experts=8, topk=2, hidden=64, inter=32, variant="blocks", op="fused_moe", a="bfloat16",
            out="bfloat16"):
    return f"{op},cpu,0,{experts},{m},{inter},{hidden},{a},{out},{topk},{variant}\n"


def write(path, *rows):
    path.write_text(HEADER + "".join(rows))
    return str(path)


def test_variants_listed():
    for op in ("fused_moe", "fused_moe_fp8", "fused_moe_fp8_blockscale"):
        assert tuning.variants(op, "cpu") == ["blocks"]
        assert tuning.variants(op, "cuda") == GPU_VARIANTS


def test_tuned_row_selects_and_keys_on_topk(rng, env, tmp_path):
    pytest.importorskip("ml_dtypes")
    env(AITER_CONFIG_PATH=write(tmp_path / "t.csv", moe_row(m=8, topk=2)))
    args = layer(rng, 5, 8, 2, 64, 32)  # T 5: bucket 8
    out = aiter.fused_moe(*args)
    assert tuning.last_variant() == ("fused_moe", "blocks", tuning.How.tuned)
    np.testing.assert_allclose(np.asarray(out, np.float64), moe_ref(*args), rtol=2e-2,
                               atol=3e-2 * np.sqrt(np.mean(moe_ref(*args) ** 2)))
    for other in (layer(rng, 5, 8, 3, 64, 32), layer(rng, 9, 8, 2, 64, 32), layer(rng, 5, 8, 2, 64, 48)):
        aiter.fused_moe(*other)  # another topk, token bucket, inter: no row
        assert tuning.last_variant().how == tuning.How.heuristic
    with tuning.force_variant("fused_moe", "blocks"):
        aiter.fused_moe(*args)
        assert tuning.last_variant().how == tuning.How.forced


def test_forced_gpu_variant_on_cpu_fails(rng):
    pytest.importorskip("ml_dtypes")
    with tuning.force_variant("fused_moe", "mma"):
        with pytest.raises(aiter.AiterError, match="the forced variant mma does not exist on this backend"):
            aiter.fused_moe(*layer(rng, 3, 4, 2, 32, 16))


@pytest.mark.parametrize("rows, message", [
    ("op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,variant\nfused_moe,cpu,0,8,8,32,64,bfloat16,"
     "bfloat16,blocks\n", "topk: expected the experts a token"),
    (HEADER + "gemm_a16w16,cpu,0,1,4,5,6,float32,float32,3,cpu.tiled\n", "topk: expected 0 for a gemm_a16w16 row"),
    (HEADER + "fused_moe,cpu,0,8,8,32,64,bfloat16,bfloat16,x,blocks\n", "topk: expected an integer"),
])
def test_bad_topk_rows(env, tmp_path, rows, message):
    (tmp_path / "bad.csv").write_text(rows)
    env(AITER_CONFIG_PATH=str(tmp_path / "bad.csv"))
    assert any(message in line for line in own_sources()), own_sources()


def test_untuned_log_has_moe_keys(rng, env, tmp_path):
    pytest.importorskip("ml_dtypes")
    log = tmp_path / "untuned.csv"
    env(AITER_LOG_UNTUNED="1", AITER_UNTUNED_PATH=str(log))
    aiter.fused_moe(*layer(rng, 5, 8, 2, 64, 32))
    assert log.read_text() == ("op,target,compute_units,batch,m,n,k,a_dtype,out_dtype,topk\n"
                               f"fused_moe,cpu,{units()},8,5,32,64,bfloat16,bfloat16,2\n")


def fp8_call(rng, tokens, experts, k, hidden, inter, block):
    x, w1, w2, weights, ids = layer(rng, tokens, experts, k, hidden, inter)
    q = np_dtype("float8_e4m3fn")
    w1q, w2q = w1.astype(np.float32) * 8, w2.astype(np.float32) * 8
    g = 128 if block else 1
    s1 = np.full((experts, 2 * inter // g) + ((hidden // g,) if block else ()), 0.125, np.float32)
    s2 = np.full((experts, hidden // g) + ((inter // g,) if block else ()), 0.125, np.float32)
    return x, w1q.astype(q), w2q.astype(q), s1, s2, weights, ids


def test_cli_reference_matches_the_test_references():
    """The tuner's reference (its own code, on the tuner's arrays) against the tests'."""
    pytest.importorskip("ml_dtypes")
    from aiter.cli.arrays import NumpyArrays
    from aiter.cli.moe_cases import MoeCase, MoeProblem
    arrays = NumpyArrays(seed=5)
    for op, a, hidden, inter in (("fused_moe", "bfloat16", 48, 40), ("fused_moe_fp8", "float8_e4m3fn", 64, 32),
                                 ("fused_moe_fp8_blockscale", "float8_e4m3fn", 128, 256)):
        case = MoeCase(MoeProblem(op, 6, 7, inter, hidden, a, "bfloat16", 3), arrays)
        ref = case.reference()
        tests_ref = moe_ref(*case.inputs) if op == "fused_moe" else moe_fp8_ref(*case.inputs, a)
        scale = np.abs(tests_ref).max()
        assert np.abs(ref - tests_ref).max() <= 2e-2 * scale, op
        case.run()
        assert case.error(ref) < case.tolerance
        case.poison()
        assert case.error(ref) == float("inf")  # an unwritten output is never accepted


def read_csv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_tune_fused_moe_on_cpu(rng, env, tmp_path, monkeypatch, capsys):
    """Calls logged as untuned, tuned from that log, then selected from the table."""
    pytest.importorskip("ml_dtypes")
    from aiter.cli import main
    log = tmp_path / "untuned.csv"
    env(AITER_LOG_UNTUNED="1", AITER_UNTUNED_PATH=str(log))
    bf16 = layer(rng, 5, 8, 2, 64, 32)
    per_channel = fp8_call(rng, 3, 6, 3, 64, 32, block=False)
    block = fp8_call(rng, 2, 4, 2, 128, 128, block=True)
    aiter.fused_moe(*bf16)
    aiter.fused_moe_fp8(*per_channel)
    aiter.fused_moe_fp8(*block)
    env(AITER_LOG_UNTUNED="0")
    out = tmp_path / "tuned.csv"
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "--op", "fused_moe,fused_moe_fp8,fused_moe_fp8_blockscale", "--untuned", str(log),
                 "--device", "cpu", "--iters", "1", "--out", str(out), "--log-dir", "logs"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"T=5 E=8 k=2 H=64 I=32 bfloat16->bfloat16 +blocks \(heuristic\).*blocks \(tuned\)", printed)
    rows = read_csv(out)
    keys = [(r["op"], r["batch"], r["m"], r["n"], r["k"], r["a_dtype"], r["out_dtype"], r["topk"]) for r in rows]
    assert keys == [("fused_moe", "8", "8", "32", "64", "bfloat16", "bfloat16", "2"),
                    ("fused_moe_fp8", "6", "4", "32", "64", "float8_e4m3fn", "bfloat16", "3"),
                    ("fused_moe_fp8_blockscale", "4", "2", "128", "128", "float8_e4m3fn", "bfloat16", "2")]
    assert all(r["variant"] == "blocks" and float(r["error"]) < 0.03 for r in rows)
    env(AITER_CONFIG_PATH=str(out))
    for op, call in (("fused_moe", lambda: aiter.fused_moe(*bf16)),
                     ("fused_moe_fp8", lambda: aiter.fused_moe_fp8(*per_channel)),
                     ("fused_moe_fp8_blockscale", lambda: aiter.fused_moe_fp8(*block))):
        call()
        assert tuning.last_variant() == (op, "blocks", tuning.How.tuned)


def test_model_presets():
    from aiter.cli.moe_cases import preset_problems
    from aiter.errors import InvalidArgumentError
    mixtral = preset_problems("fused_moe", ["mixtral-8x7b"], [1, 64], [])
    assert [(p.batch, p.topk, p.k, p.n, p.m, p.a_dtype) for p in mixtral] == [
        (8, 2, 4096, 14336, 1, "bfloat16"), (8, 2, 4096, 14336, 64, "bfloat16")]
    (qwen,) = preset_problems("fused_moe_fp8", ["qwen3-30b-a3b"], [16], ["float8_e4m3fnuz"], "float16")
    assert (qwen.batch, qwen.topk, qwen.k, qwen.n, qwen.a_dtype, qwen.out_dtype) == (
        128, 8, 2048, 768, "float8_e4m3fnuz", "float16")
    (ds,) = preset_problems("fused_moe_fp8_blockscale", [], [128], [])
    assert (ds.batch, ds.topk, ds.k, ds.n, ds.a_dtype) == (256, 8, 7168, 2048, "float8_e4m3fn")
    assert ds.flops() == 6.0 * 128 * 8 * 7168 * 2048
    with pytest.raises(InvalidArgumentError, match="unknown MoE model 'llama3-8b'"):
        preset_problems("fused_moe", ["llama3-8b"], [1], [])



SHIPPED_SM90A = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs",
                                              "moe_sm_90a.csv"))
TOKEN_BUCKETS = [1 << i for i in range(14)]  # 1, 2, 4, ..., 8192


def test_shipped_sm90a_table_loads(env):
    """configs/moe_sm_90a.csv (tuned on an H100): the library reads every row, each
    names a GPU variant of its op, and every layer swept (docs/performance_moe.md)
    has a row at every token bucket."""
    from aiter.cli.moe_cases import MODELS
    if not os.path.exists(SHIPPED_SM90A):
        pytest.skip("no source tree beside the tests (installed tests)")
    with open(SHIPPED_SM90A, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    env(AITER_CONFIG_PATH=SHIPPED_SM90A)
    assert f"{SHIPPED_SM90A}: {len(rows)} rows" in own_sources()
    for row in rows:
        assert row["target"] == "sm_90a" and int(row["compute_units"]) == 132
        assert row["variant"] in tuning.variants(row["op"], "cuda"), row
        assert int(row["m"]) in TOKEN_BUCKETS and int(row["topk"]) >= 1
    covered = {(r["op"], int(r["batch"]), int(r["topk"]), int(r["k"]), int(r["n"]), r["a_dtype"]): set() for r in rows}
    for r in rows:
        covered[r["op"], int(r["batch"]), int(r["topk"]), int(r["k"]), int(r["n"]), r["a_dtype"]].add(int(r["m"]))
    swept = [("fused_moe", model, "bfloat16") for model in MODELS] + [
        ("fused_moe_fp8_blockscale", "deepseek-v3", "float8_e4m3fn"),
        ("fused_moe_fp8", "qwen3-30b-a3b", "float8_e4m3fn"), ("fused_moe_fp8", "mixtral-8x7b", "float8_e4m3fn")]
    for op, model, a_dtype in swept:
        assert covered[(op,) + MODELS[model] + (a_dtype,)] == set(TOKEN_BUCKETS), (op, model)


# ---- GPU only: the forced variant "triton" -------------------------------------------

def cuda_or_skip():
    pytest.importorskip("ml_dtypes")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


@pytest.mark.gpu
@pytest.mark.parametrize("tokens", [3, 77])  # decode-sized (1-2 rows an expert) and more
def test_forced_triton_variant_on_gpu(rng, tokens):
    """The Triton stages at row counts the heuristic gives the mma.sync stages,
    against float64; every output row written (poisoned output)."""
    cuda_or_skip()
    args = layer(rng, tokens, 8, 2, 256, 192)
    out = poisoned_on((tokens, 256), "bfloat16", "cuda")
    with tuning.force_variant("fused_moe", "triton"):
        try:
            aiter.fused_moe(*[to_device(a, "cuda") for a in args], out=out)
        except aiter.UnsupportedShapeError as e:
            pytest.skip(f"no Triton MoE stages in this build ({e})")
        assert tuning.last_variant() == ("fused_moe", "triton", tuning.How.forced)
    ref = moe_ref(*args)
    got = np.asarray(on_host(out), np.float64)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=3e-2 * np.sqrt(np.mean(ref ** 2)))


@pytest.mark.gpu
def test_forced_triton_variant_refuses_what_it_cannot_run(rng):
    """I 40: stage 1's columns are not a multiple of 16 (mma.sync could run it)."""
    cuda_or_skip()
    args = [to_device(a, "cuda") for a in layer(rng, 5, 8, 2, 64, 40)]
    with tuning.force_variant("fused_moe", "triton"):
        with pytest.raises(aiter.UnsupportedShapeError, match="the forced variant triton cannot run this call"):
            aiter.fused_moe(*args)
