"""The CPU attention kernels at every instruction-set level this machine has,
on the same inputs, against the float64 references of test_attention.py.

AITER_CPU_ISA is read once per process, so each level runs in a subprocess:
portable and avx2 run the portable loops; avx512 the fp32-FMA blocks (every
dtype); avx512_bf16 also the vdpbf16ps scores where q is bf16 and the keys
bf16 or fp8.
The cases cross the kernels' block edges: key counts past a 64-key tile and
within its 16-key vectors (1, 37, 70, 90), query blocks of 32 tokens with
tails, row blocks of 4 with tails (3 and 5 query heads a kv head, 1 token of
decode), a 192/128 head-dim pair (3 x 64 value dims a pass), rows that see no
key, a window, a soft-cap and the log-sum-exp; paged decode from bf16, fp16,
fp32 and fp8 caches (and every fp8 code through the vector decoder).  Outputs
start as NaN so that a row left unwritten fails.
"""
import pytest

import harness
from gemm_helpers import ISA_LEVELS, run_at_isa_level

ISA_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import aiter
from harness import assert_close, f64, np_dtype, poisoned, rand
from test_attention import FP8_MAX, cu_seqlens, decode_ref, fp8_quantize, paged_layout, prefill_ref
assert aiter.library_info()["cpu_isa"].split()[0] == sys.argv[2], aiter.library_info()["cpu_isa"]
dtypes = sys.argv[3].split(",")
rng = np.random.default_rng(37)


def check_prefill(dtype, hq, hkv, d, dv, lens_q, lens_k, causal, window_left=-1, softcap=0.0):
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q = rand(rng, (cu_q[-1], hq, d), dtype, scale=2.0)
    k, v = rand(rng, (cu_k[-1], hkv, d), dtype), rand(rng, (cu_k[-1], hkv, dv), dtype)
    out, lse = poisoned((cu_q[-1], hq, dv), dtype), poisoned((cu_q[-1], hq), "float32")
    aiter.prefill_attention(q, k, v, cu_q, cu_k, causal=causal, window_left=window_left, softcap=softcap, out=out,
                            lse=lse)
    ref, ref_lse = prefill_ref(q, k, v, cu_q, cu_k, d ** -0.5, causal, window_left, softcap, with_lse=True)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    assert_close(out, ref, dtype, **tol)
    assert (np.isinf(f64(lse)) == np.isinf(ref_lse)).all(), "rows that see no key get -inf"
    finite = np.isfinite(ref_lse)
    np.testing.assert_allclose(f64(lse)[finite], ref_lse[finite], rtol=1e-4, atol=1e-4)


def check_decode(dtype, cache_dtype, hq, hkv, d, page_size, window_left):
    lens = np.array([0, 1, 37, 80, 16], np.int32)
    table, num_blocks = paged_layout(rng, lens, page_size)
    q = rand(rng, (len(lens), hq, d), dtype)
    if cache_dtype.startswith("float8"):
        k_scale, v_scale = 0.01, 0.02
        k_cache = fp8_quantize(rand(rng, (num_blocks, page_size, hkv, d), "float32", scale=2.0), k_scale, cache_dtype)
        v_cache = fp8_quantize(rand(rng, (num_blocks, page_size, hkv, d), "float32"), v_scale, cache_dtype)
    else:
        k_scale = v_scale = 1.0
        k_cache = rand(rng, (num_blocks, page_size, hkv, d), cache_dtype)
        v_cache = rand(rng, (num_blocks, page_size, hkv, d), cache_dtype)
    out = poisoned(q.shape, dtype)
    aiter.paged_decode_attention(q, k_cache, v_cache, table, lens, window_left=window_left, k_scale=k_scale,
                                 v_scale=v_scale, out=out)
    ref = decode_ref(q, f64(k_cache) * k_scale, f64(v_cache) * v_scale, table, lens, d ** -0.5, window_left)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    assert_close(out, ref, dtype, **tol)


for dtype in dtypes:
    for hq, hkv, d in [(10, 2, 64), (3, 3, 128)]:
        for causal in (True, False):
            check_prefill(dtype, hq, hkv, d, d, [1, 0, 37, 70], [1, 0, 37, 70], causal)
    check_prefill(dtype, 4, 1, 192, 128, [3, 9, 2, 20], [10, 9, 0, 90], True, window_left=40, softcap=5.0)
    check_prefill(dtype, 2, 2, 64, 64, [33, 4], [33, 100], False, window_left=5)
    check_decode(dtype, dtype, 8, 2, 128, 5, -1)
    check_decode(dtype, dtype, 3, 1, 64, 16, 7)


# Every code of the format as a value (one key a sequence, so out = its value row
# times v_scale): codes 0-127 and 128-255 decode exactly, NaN codes to NaN.
def check_fp8_codes(cache_dtype, dtype):
    codes = np.arange(256, dtype=np.uint8).reshape(2, 1, 1, 128)
    v_cache = codes.view(np_dtype(cache_dtype))
    k_cache = np.zeros_like(v_cache)
    table, lens = np.array([[0], [1]], np.int32), np.array([1, 1], np.int32)
    q = rand(rng, (2, 1, 128), dtype)
    out = aiter.paged_decode_attention(q, k_cache, v_cache, table, lens, v_scale=0.5)
    np.testing.assert_array_equal(f64(out), f64(v_cache[:, 0]) * 0.5)


if "bfloat16" in dtypes:  # ml_dtypes is there
    check_decode("bfloat16", "float8_e4m3fn", 8, 2, 128, 5, -1)
    check_decode("float32", "float8_e5m2", 4, 4, 64, 3, -1)
    check_decode("bfloat16", "float8_e5m2", 3, 1, 64, 16, 7)
    check_decode("bfloat16", "float8_e4m3fnuz", 5, 1, 128, 3, -1)
    for cache_dtype in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"):
        check_fp8_codes(cache_dtype, "float32")  # the fp32 tile
        check_fp8_codes(cache_dtype, "bfloat16")  # bf16 pairs where the CPU has AVX512_BF16
print("ok")
"""


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_attention_every_isa_level(level):
    # bfloat16 and fp8 arrays need ml_dtypes, which some distributions (Debian) lack.
    run_at_isa_level(level, ISA_SCRIPT,
                     ["float32", "float16", "bfloat16"] if harness.ml_dtypes is not None else ["float32", "float16"])
