"""Fused MoE at every instruction-set level of the CPU kernels.

The CPU fused MoE runs each expert's stages as GEMMs on the library's CPU GEMM
variants, which AITER_CPU_ISA picks among (portable, AVX2, AVX-512,
AVX-512-BF16); AITER_CPU_ISA is read once per process, so each level runs the
16-bit, fp8 per-channel and fp8 block-scaled cases in a process of its own.
"""
import pytest

from gemm_helpers import ISA_LEVELS, run_at_isa_level
from harness import ml_dtypes

ISA_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import aiter
import test_moe_fused as t
assert aiter.library_info()["cpu_isa"].split()[0] == sys.argv[2]
rng = np.random.default_rng(int(sys.argv[4]))
dtypes = sys.argv[3].split(",")
for dtype in dtypes:
    for case in [(3, 7, 3, 40, 24), (17, 8, 2, 128, 64)]:
        t.test_fused_moe(rng, "cpu", dtype, case)
if "bfloat16" in dtypes:  # these cases and fp8 arrays need ml_dtypes
    t.test_fused_moe_activations_and_blocks(rng, "cpu", "gelu", 32)
    t.test_fused_moe_weights_on_input_and_skew(rng, "cpu")
    t.test_fused_moe_expert_mask(rng, "cpu")
    import test_moe_fp8 as f
    f.test_fused_moe_fp8(rng, "cpu", "float8_e4m3fn", "bfloat16", (17, 8, 2, 128, 64))
    f.test_fused_moe_fp8(rng, "cpu", "float8_e4m3fnuz", "float16", (3, 7, 3, 48, 32))
    f.test_fused_moe_fp8_options(rng, "cpu", True)
    f.test_fused_moe_blockscale(rng, "cpu", "float8_e4m3fn", (3, 4, 2, 256, 128))
print("ok")
"""


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_every_isa_level(level):
    # bfloat16 and fp8 arrays need ml_dtypes, which some distributions (Debian) lack.
    run_at_isa_level(level, ISA_SCRIPT, ["bfloat16", "float16"] if ml_dtypes is not None else ["float16"])
