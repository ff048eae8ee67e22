"""MLA decode at every instruction-set level of the CPU kernels.

The CPU MLA decode runs on the CPU attention core, whose arithmetic
AITER_CPU_ISA picks (portable loops, AVX-512 fp32 FMA, vdpbf16ps for bf16 /
fp8 caches); AITER_CPU_ISA is read once per process, so each level runs in a
process of its own: 16-bit and fp8 caches, several new tokens, and 40 heads x
3 tokens, whose 120 rows make two work items split inside a token.
"""
import pytest

from gemm_helpers import ISA_LEVELS, run_at_isa_level
from harness import ml_dtypes

ISA_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import aiter
import test_mla as t
assert aiter.library_info()["cpu_isa"].split()[0] == sys.argv[2]
rng = np.random.default_rng(int(sys.argv[4]))
for dtype in sys.argv[3].split(","):
    q, cache, table, lens = t.make_case(rng, [70, 0, 2, 129], 16, 40, 3, dtype)
    got, lse = t.run("cpu", q, cache, table, lens, 0.05)
    t.check(got, lse, *t.mla_ref(q, cache, table, lens, 0.05), dtype)
    if dtype == "bfloat16":  # fp8 arrays need ml_dtypes too
        for cache_dtype in ("float8_e4m3fn", "float8_e4m3fnuz"):
            t.test_decode_dtypes_and_fp8(rng, "cpu", "bfloat16", cache_dtype)
t.test_decode_split_counts_fp16(rng, "cpu")
print("ok")
"""


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_every_isa_level(level):
    # bfloat16 and fp8 arrays need ml_dtypes, which some distributions (Debian) lack.
    run_at_isa_level(level, ISA_SCRIPT, ["bfloat16", "float16"] if ml_dtypes is not None else ["float16"])
