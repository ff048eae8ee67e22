"""What the GEMM test files share: float64 NumPy references and tolerances
(independent of libaiter), and forcing a kernel variant through the raw C API
(aiter/tuning.h) to run every variant of an op."""
from contextlib import contextmanager

import numpy as np
import pytest

import aiter

from aiter._lib import check as check_status, ffi, lib
from harness import TOLERANCE, assert_close, f64

# The CPU variants of every GEMM op; test_gemm_variants.py checks that the
# library lists exactly these, so that a new variant cannot go untested.
CPU_VARIANTS = ["cpu.avx512", "cpu.skinny", "cpu.packed", "cpu.tiled"]
# gemm_a16w16 and batched_gemm_a16w16 also have the vendor libraries' variants,
# which run where the library found the vendor's library (aiter.library_info()).
FLOAT_OP_VARIANTS = CPU_VARIANTS + ["cpu.openblas", "cpu.onednn"]
VENDOR_LIBRARY = {"cpu.openblas": "openblas", "cpu.onednn": "onednn"}
# The instruction-set levels of the CPU kernels, lowest first (cpu/isa.hpp), and
# the level a variant needs to run at all (the others run everywhere).
ISA_LEVELS = ["portable", "avx2", "avx512", "avx512_bf16", "amx"]
VARIANT_ISA = {"cpu.avx512": "avx512"}


def cpu_isa():
    """The level the CPU kernels use here (the CPU's, capped by AITER_CPU_ISA)."""
    return aiter.library_info()["cpu_isa"].split()[0]


def cpu_has(feature):
    """Whether the CPU itself has `feature` (avx2, avx512, avx512_bf16, ...),
    whatever AITER_CPU_ISA caps."""
    return feature in aiter.library_info()["cpu_isa"].split("cpu has ")[1].rstrip(")").split()


def has_bf16_dot():
    """Whether the CPU kernels here use AVX512_BF16 (level avx512_bf16 or above)."""
    return ISA_LEVELS.index(cpu_isa()) >= ISA_LEVELS.index("avx512_bf16")


def runnable(variant):
    if variant in VENDOR_LIBRARY:
        found = [entry.split("=")[0] for entry in aiter.library_info()["cpu_libraries"]]
        return VENDOR_LIBRARY[variant] in found
    need = VARIANT_ISA.get(variant)
    return need is None or ISA_LEVELS.index(cpu_isa()) >= ISA_LEVELS.index(need)
GEMM_OPS = ["gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale", "batched_gemm_a16w16", "batched_gemm_a8w8"]


def reference(a, w, bias=None, a_scale=None, w_scale=None):
    """(a @ w.T) * a_scale * w_scale + bias in float64; a_scale broadcasts over
    columns ([M, 1] or one value), w_scale over rows ([1, N] or one value)."""
    out = f64(a) @ f64(w).T
    if a_scale is not None:
        out = out * f64(a_scale).reshape(-1, 1) * f64(w_scale).reshape(1, -1)
    return out if bias is None else out + f64(bias)


def check(out, ref, out_dtype, k, magnitude=1.0):
    """Rounding to the out dtype (rtol) plus fp32 accumulation over K (atol,
    growing like the sum of K products of the given typical magnitude)."""
    rtol, atol = TOLERANCE[out_dtype]
    assert_close(out, ref, out_dtype, rtol=rtol, atol=atol * np.sqrt(max(k, 1)) * magnitude)


def rand_int8(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def scaled_magnitude(a, w, a_scale, w_scale):
    """Typical size of one scaled product a[m, k] w[n, k] a_scale[m] w_scale[n]."""
    return np.std(f64(a)) * np.std(f64(w)) * np.mean(a_scale) * np.mean(w_scale)


def last_variant():
    """(op, variant, how) of the last tuned call on this thread; how: 0 heuristic,
    1 tuned table row, 2 forced."""
    op, variant, how = ffi.new("const char **"), ffi.new("const char **"), ffi.new("int *")
    check_status(lib.aiter_last_kernel_variant(op, variant, how))
    return ffi.string(op[0]).decode(), ffi.string(variant[0]).decode(), how[0]


@contextmanager
def forced(op, variant):
    """Runs the calls of `op` inside the block with `variant`, and checks on the
    way out that the last call ran it (so a test cannot pass on another one).
    Skips the test where this CPU cannot run the variant."""
    if not runnable(variant):
        need = VENDOR_LIBRARY.get(variant) or VARIANT_ISA[variant]
        pytest.skip(f"{variant} needs {need}, which this machine lacks (aiter.library_info())")
    check_status(lib.aiter_force_kernel_variant(op.encode(), variant.encode()))
    try:
        yield
        assert last_variant() == (op, variant, 2)
    finally:
        check_status(lib.aiter_force_kernel_variant(op.encode(), ffi.NULL))


def kernel_variants(op, device_type=1):
    """The library's variant names of `op` for kDLCPU (1) or kDLCUDA (2)."""
    device = ffi.new("DLDevice *", {"device_type": device_type, "device_id": 0})
    count = ffi.new("int *")
    names = ffi.new("const char *[16]")
    check_status(lib.aiter_kernel_variants(op.encode(), device[0], names, 16, count))
    return [ffi.string(names[i]).decode() for i in range(count[0])]


def run_at_isa_level(level, script, dtypes):
    """Runs `script` (python -c) in a child whose CPU kernels are capped at
    `level` (AITER_CPU_ISA is read once a process), with argv: this folder, the
    level, the comma-joined dtypes, a fresh seed.  The script prints "ok" when
    its checks pass.  Skips a level above what this CPU's kernels reach."""
    import os
    import subprocess
    import sys
    if ISA_LEVELS.index(level) > ISA_LEVELS.index(cpu_isa()):
        pytest.skip(f"the CPU kernels here stop at {cpu_isa()}")
    seed = int.from_bytes(os.urandom(4), "little")
    done = subprocess.run([sys.executable, "-c", script, os.path.dirname(os.path.abspath(__file__)), level,
                           ",".join(dtypes), str(seed)], env=dict(os.environ, AITER_CPU_ISA=level),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", f"seed {seed}: {done.stderr[-4000:]}"
