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
from gemm_helpers import CPU_VARIANTS, GEMM_OPS, forced, kernel_variants, last_variant
from harness import rand


@pytest.mark.parametrize("op", GEMM_OPS)
def test_every_op_has_the_tested_cpu_variants(op):
    assert kernel_variants(op) == CPU_VARIANTS


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


# (M, K) and the expected choice (blockscale's where it differs): decode-sized
# M, and medium M with A small enough to stay in L2, go to skinny; prefill-sized
# M to packed (to tiled for blockscale); medium M with long K to tiled.
HEURISTIC = [((1, 45), "cpu.skinny", None), ((16, 3001), "cpu.skinny", None), ((30, 1000), "cpu.skinny", None),
             ((64, 45), "cpu.packed", "cpu.tiled"), ((300, 700), "cpu.packed", "cpu.tiled"),
             ((40, 2001), "cpu.tiled", None)]


@pytest.mark.parametrize("op", GEMM_OPS)
@pytest.mark.parametrize("shape, expected, blockscale_expected", HEURISTIC)
def test_heuristic_choice(rng, op, shape, expected, blockscale_expected):
    calls(rng, *shape)[op]()
    if op == "gemm_a8w8_blockscale" and blockscale_expected:
        expected = blockscale_expected
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


def test_portable_kernels_in_a_subprocess():
    pytest.importorskip("ml_dtypes", reason="the subprocess makes bfloat16 and fp8 NumPy arrays")
    # AITER_CPU_ISA=baseline selects the kernels built for the baseline ISA,
    # which an AVX2 machine would otherwise never run: every variant, every
    # dtype path (fp32 in place, bf16 and int8 converted in registers by the
    # skinny kernel, fp8 converted first).
    script = (
        "import numpy as np, ml_dtypes, aiter, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from gemm_helpers import CPU_VARIANTS, forced\n"
        "rng = np.random.default_rng(5)\n"
        "for variant in CPU_VARIANTS:\n"
        "    for m, n, k in [(1, 5, 3), (3, 9, 130), (40, 129, 517)]:\n"
        "        for dt in [np.float32, ml_dtypes.bfloat16]:\n"
        "            a = rng.standard_normal((m, k)).astype(dt)\n"
        "            w = rng.standard_normal((n, k)).astype(dt)\n"
        "            with forced('gemm_a16w16', variant):\n"
        "                got = aiter.gemm_a16w16(a, w, out_dtype='float32')\n"
        "            ref = a.astype(float) @ w.astype(float).T\n"
        "            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.sqrt(k))\n"
        "        ai = rng.integers(-128, 128, (m, k), dtype=np.int8)\n"
        "        wi = rng.integers(-128, 128, (n, k), dtype=np.int8)\n"
        "        one = np.ones((1,), np.float32)\n"
        "        exact = ai.astype(np.int64) @ wi.astype(np.int64).T\n"
        "        with forced('gemm_a8w8', variant):\n"
        "            got = aiter.gemm_a8w8(ai, wi, one, one, out_dtype='float32')\n"
        "        np.testing.assert_array_equal(got, exact)\n"
        "        a8 = (ai / 16).astype(ml_dtypes.float8_e4m3fn)\n"
        "        w8 = (wi / 16).astype(ml_dtypes.float8_e4m3fn)\n"
        "        g = (k + 127) // 128\n"
        "        with forced('gemm_a8w8_blockscale', variant):\n"
        "            got = aiter.gemm_a8w8_blockscale(a8, w8, np.ones((m, g), np.float32),\n"
        "                                             np.ones(((n + 127) // 128, g), np.float32), out_dtype='float32')\n"
        "        ref = a8.astype(float) @ w8.astype(float).T\n"
        "        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.sqrt(k))\n"
        "print('ok')\n")
    env = dict(os.environ, AITER_CPU_ISA="baseline")
    done = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_variants_agree_on_a_larger_product(rng):
    # Several tiles and K blocks of each variant; the variants sum in different
    # orders, so they agree to fp32 accuracy, not bit for bit.
    m, n, k = 200, 300, 1100
    a, w = rand(rng, (m, k), "bfloat16"), rand(rng, (n, k), "bfloat16")
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    for variant in CPU_VARIANTS:
        with forced("gemm_a16w16", variant):
            got = aiter.gemm_a16w16(a, w, out_dtype="float32")
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-5 * np.sqrt(k), err_msg=variant)
