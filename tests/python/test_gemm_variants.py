"""The CPU kernel variants of the GEMM ops: the list the library reports, the
heuristic's choice, forcing, and the portable (baseline ISA) build of every
variant's kernels.  Their numbers are checked per op in test_gemm.py,
test_gemm_batched.py and test_gemm_blockscale.py."""
import os
import subprocess
import sys

import numpy as np
import pytest

import aiter
from gemm_helpers import (CPU_VARIANTS, FLOAT_OP_VARIANTS, GEMM_OPS, ISA_LEVELS, VARIANT_ISA, forced, has_bf16_dot, kernel_variants,
                          last_variant, runnable)
from harness import rand


@pytest.mark.parametrize("op", GEMM_OPS)
def test_every_op_has_the_tested_cpu_variants(op):
    float_op = op in ("gemm_a16w16", "batched_gemm_a16w16")
    assert kernel_variants(op) == (FLOAT_OP_VARIANTS if float_op else CPU_VARIANTS)


def calls(rng, m, k, n=77):
    """One call of each GEMM op with M rows (N odd, so that no tuned table row
    can match and the heuristic decides)."""
    a, w = rand(rng, (m, k), "bfloat16"), rand(rng, (n, k), "bfloat16")
    a8, w8 = rand(rng, (m, k), "float8_e4m3fn"), rand(rng, (n, k), "float8_e4m3fn")
    one = np.ones((1,), np.float32)
    groups = (k + 127) // 128
    a_groups, w_blocks = np.ones((m, groups), np.float32), np.ones(((n + 127) // 128, groups), np.float32)
    return {
        "gemm_a16w16": lambda: aiter.gemm_a16w16(a, w),
        "gemm_a8w8": lambda: aiter.gemm_a8w8(a8, w8, one, one),
        "gemm_a8w8_blockscale": lambda: aiter.gemm_a8w8_blockscale(a8, w8, a_groups, w_blocks),
        "batched_gemm_a16w16": lambda: aiter.batched_gemm_a16w16(a[None], w[None]),
        "batched_gemm_a8w8": lambda: aiter.batched_gemm_a8w8(a8[None], w8[None], one, one),
    }


# (M, K) and the expected choice (blockscale's where it differs) on a CPU without
# AVX-512: decode-sized M, and medium M with A small enough to stay in L2, go to
# skinny; prefill-sized M to packed (to tiled for blockscale); medium M with long
# K to tiled.  With AVX-512, cpu.avx512 takes every M from AVX512_FROM_M on,
# and bf16 and fp8 (not blockscale) at every M where the CPU has AVX512_BF16.
HEURISTIC = [((1, 45), "cpu.skinny", None), ((16, 3001), "cpu.skinny", None), ((30, 1000), "cpu.skinny", None),
             ((64, 45), "cpu.packed", "cpu.tiled"), ((300, 700), "cpu.packed", "cpu.tiled"),
             ((40, 2001), "cpu.tiled", None)]
AVX512_FROM_M = 3


@pytest.mark.parametrize("op", GEMM_OPS)
@pytest.mark.parametrize("shape, expected, blockscale_expected", HEURISTIC)
def test_heuristic_choice(rng, op, shape, expected, blockscale_expected):
    calls(rng, *shape)[op]()
    if op == "gemm_a8w8_blockscale" and blockscale_expected:
        expected = blockscale_expected
    bf16_dot = op != "gemm_a8w8_blockscale" and has_bf16_dot()  # bf16 and fp8: any M
    if runnable("cpu.avx512") and (shape[0] >= AVX512_FROM_M or bf16_dot):
        expected = "cpu.avx512"
    assert last_variant() == (op, expected, 0)


@pytest.mark.parametrize("op", GEMM_OPS)
@pytest.mark.parametrize("variant", CPU_VARIANTS)
def test_forced_variant_runs_and_is_reported(rng, op, variant):
    with forced(op, variant):  # checks last_variant() on the way out
        calls(rng, 5, 45)[op]()
    calls(rng, 5, 45)[op]()  # forcing ends with the block
    assert last_variant()[2] == 0


def test_forcing_an_unknown_variant_fails():
    from aiter._lib import lib
    from aiter._lib import check as check_status
    with pytest.raises(aiter.InvalidArgumentError, match="'cpu.nope' is not a variant of gemm_a16w16"):
        check_status(lib.aiter_force_kernel_variant(b"gemm_a16w16", b"cpu.nope"))


# Every instruction-set level this machine has, each in its own process
# (AITER_CPU_ISA is read once): every variant that can run at that level, every
# dtype path (fp32 in place, bf16 / fp16 / int8 / fp8 converted or paired,
# blockscale), on the same inputs, against float64 NumPy; odd M, N and K tails
# of every kernel's blocks (20 x 70 x 2100: cpu.avx512's packed form with a
# 6-column second item and K in 5 blocks of bf16 pairs, 3 of int8 quads).
ISA_SCRIPT = """
import numpy as np, ml_dtypes, aiter, sys
sys.path.insert(0, sys.argv[1])
from gemm_helpers import CPU_VARIANTS, cpu_isa, forced, runnable
assert cpu_isa() == sys.argv[2], (cpu_isa(), sys.argv[2])
rng = np.random.default_rng(5)
ran = []
for variant in filter(runnable, CPU_VARIANTS):
    for m, n, k in [(1, 5, 3), (3, 33, 130), (17, 40, 257), (40, 129, 517), (20, 70, 2100)]:
        for dt in [np.float32, ml_dtypes.bfloat16, np.float16]:
            a = rng.standard_normal((m, k)).astype(dt)
            w = rng.standard_normal((n, k)).astype(dt)
            with forced('gemm_a16w16', variant):
                got = aiter.gemm_a16w16(a, w, out_dtype='float32')
            ref = a.astype(float) @ w.astype(float).T
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.sqrt(k), err_msg=variant)
        ai = rng.integers(-128, 128, (m, k), dtype=np.int8)
        wi = rng.integers(-128, 128, (n, k), dtype=np.int8)
        one = np.ones((1,), np.float32)
        exact = ai.astype(np.int64) @ wi.astype(np.int64).T
        with forced('gemm_a8w8', variant):
            got = aiter.gemm_a8w8(ai, wi, one, one, out_dtype='float32')
        np.testing.assert_array_equal(got, exact, err_msg=variant)
        a8 = (ai / 16).astype(ml_dtypes.float8_e4m3fn)
        w8 = (wi / 16).astype(ml_dtypes.float8_e4m3fn)
        ref = a8.astype(float) @ w8.astype(float).T
        with forced('gemm_a8w8', variant):
            got = aiter.gemm_a8w8(a8, w8, one, one, out_dtype='float32')
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.sqrt(k), err_msg=variant)
        g = (k + 127) // 128
        a_s = rng.uniform(0.5, 2, (m, g)).astype(np.float32)
        w_s = rng.uniform(0.5, 2, ((n + 127) // 128, g)).astype(np.float32)
        with forced('gemm_a8w8_blockscale', variant):
            got = aiter.gemm_a8w8_blockscale(a8, w8, a_s, w_s, out_dtype='float32')
        ka = np.repeat(a_s, 128, axis=1)[:, :k]
        kw = np.repeat(np.repeat(w_s, 128, axis=0)[:n], 128, axis=1)[:, :k]
        ref = (a8.astype(float) * ka) @ (w8.astype(float) * kw).T
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=4e-5 * np.sqrt(k), err_msg=variant)
    ran.append(variant)
print(' '.join(ran))
"""


def machine_levels():
    """The levels up to this machine's own (AITER_CPU_ISA unset)."""
    env = {key: value for key, value in os.environ.items() if key != "AITER_CPU_ISA"}
    done = subprocess.run([sys.executable, "-c", "import aiter; print(aiter.library_info()['cpu_isa'].split()[0])"],
                          env=env, capture_output=True, text=True, timeout=60)
    return ISA_LEVELS[:ISA_LEVELS.index(done.stdout.strip()) + 1]


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_every_isa_level_on_the_same_inputs(level):
    pytest.importorskip("ml_dtypes", reason="the subprocess makes bfloat16 and fp8 NumPy arrays")
    if level not in machine_levels():
        pytest.skip(f"this CPU has no {level}")
    env = dict(os.environ, AITER_CPU_ISA=level)
    done = subprocess.run([sys.executable, "-c", ISA_SCRIPT, os.path.dirname(__file__), level], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    expected = [v for v in CPU_VARIANTS if ISA_LEVELS.index(level) >= ISA_LEVELS.index(VARIANT_ISA.get(v, "portable"))]
    assert done.stdout.split() == expected


def test_variants_agree_on_a_larger_product(rng):
    # Several tiles and K blocks of each variant; the variants sum in different
    # orders, so they agree to fp32 accuracy, not bit for bit.
    m, n, k = 200, 300, 1100
    a, w = rand(rng, (m, k), "bfloat16"), rand(rng, (n, k), "bfloat16")
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    for variant in filter(runnable, FLOAT_OP_VARIANTS):  # those this machine can run
        with forced("gemm_a16w16", variant):
            got = aiter.gemm_a16w16(a, w, out_dtype="float32")
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-5 * np.sqrt(k), err_msg=variant)
