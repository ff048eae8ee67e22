"""Prefill attention on the GPU at lengths where the tensor-core kernels walk
many key tiles (the Hopper kernel, kernels/attention/prefill_wgmma.cu, takes 128
query tokens and 128-key tiles): masked tiles at the diagonal and at the
window's edge with unmasked tiles between, blocks of rows straddling sequences,
a cached prefix, rows that see no key, and the two consumer warpgroups taking
turns over tens of tiles.  Against the float64 NumPy references of
test_attention.py, with outputs poisoned (NaN) so unwritten rows fail.

GPU only: the CPU backend is covered at smaller sizes by test_attention.py and
test_attention_split.py.  Whichever kernel the dispatch picks runs;
AITER_PREFILL_KERNEL=wgmma puts the Hopper kernel first on sm_90a."""
import numpy as np
import pytest

import aiter
from harness import assert_close, f64, poisoned_on, rand, to_device
from test_attention import cu_seqlens, prefill_ref

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return "cuda"


def dev(*arrays):
    return [to_device(a, "cuda") for a in arrays]


# (dtype, (q/k head dim, v head dim), causal, Hq/Hkv): every combination at D64/D128, GQA 1 only at
# D256 and 192/128 (their float64 references are the slow ones).
MANY_TILE_CASES = [(dt, dims, causal, ratio) for dt in ("bfloat16", "float16") for dims in ((64, 64), (128, 128))
                   for causal in (True, False) for ratio in (1, 4)]
MANY_TILE_CASES += [(dt, dims, causal, 1) for dt in ("bfloat16", "float16") for dims in ((256, 256), (192, 128))
                    for causal in (True, False)]


@pytest.mark.parametrize("dtype,dims,causal,ratio", MANY_TILE_CASES)
def test_prefill_many_key_tiles(rng, cuda, dtype, dims, causal, ratio):
    d, dv = dims
    hkv = 2
    lens = [1, 300, 0, 1000, 129, 7]  # 1000 keys: 8 or 16 tiles; blocks of 128 rows straddle sequences
    cu = cu_seqlens(lens)
    q = rand(rng, (cu[-1], hkv * ratio, d), dtype, scale=2.0)
    k, v = rand(rng, (cu[-1], hkv, d), dtype), rand(rng, (cu[-1], hkv, dv), dtype)
    out = poisoned_on((cu[-1], hkv * ratio, dv), dtype, cuda)
    aiter.prefill_attention(*dev(q, k, v, cu), causal=causal, out=out)
    assert_close(out, prefill_ref(q, k, v, cu, cu, d ** -0.5, causal), dtype)


@pytest.mark.parametrize("dtype,d", [("bfloat16", 128), ("float16", 64), ("bfloat16", 256)])
@pytest.mark.parametrize("softcap", [0.0, 30.0])
def test_prefill_prefix_window_softcap_lse(rng, cuda, dtype, d, softcap):
    """Queries that are the last of longer key sequences (a cached prefix), a
    window of 600 (masked tiles at both ends of a row block's range, unmasked
    between), one sequence whose first queries see no key, and the LSE output."""
    hq, hkv = 4, 1
    lens_q, lens_k = [700, 5, 300, 40], [1500, 5, 300, 20]
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q = rand(rng, (cu_q[-1], hq, d), dtype, scale=3.0)
    k, v = rand(rng, (cu_k[-1], hkv, d), dtype), rand(rng, (cu_k[-1], hkv, d), dtype)
    out = poisoned_on(q.shape, dtype, cuda)
    lse = poisoned_on((cu_q[-1], hq), "float32", cuda)
    aiter.prefill_attention(*dev(q, k, v, cu_q, cu_k), softcap=softcap, window_left=600, out=out, lse=lse)
    ref, ref_lse = prefill_ref(q, k, v, cu_q, cu_k, d ** -0.5, True, 600, softcap, with_lse=True)
    assert_close(out, ref, dtype)
    got_lse = f64(lse)
    assert (np.isinf(got_lse) == np.isinf(ref_lse)).all(), "rows that see no key get -inf"
    finite = np.isfinite(ref_lse)
    np.testing.assert_allclose(got_lse[finite], ref_lse[finite], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("lens", [[2100], [1500, 17, 129]])
def test_prefill_one_long_sequence(rng, cuda, lens):
    """Causal bf16 D128, Hq/Hkv 2, a long sequence: 2100 tokens alone (17 row
    tiles, the last walking 17 key tiles, one partial; a mean length past 1024:
    a tile a block), or 1500 with two short ones (two tiles a block, a pair
    straddling sequences).  (Longer ones make the float64 reference slow.)"""
    hq, hkv, d = 2, 1, 128
    cu = cu_seqlens(lens)
    n = cu[-1]
    q = rand(rng, (n, hq, d), "bfloat16", scale=2.0)
    k, v = rand(rng, (n, hkv, d), "bfloat16"), rand(rng, (n, hkv, d), "bfloat16")
    out = poisoned_on(q.shape, "bfloat16", cuda)
    aiter.prefill_attention(*dev(q, k, v, cu), out=out)
    assert_close(out, prefill_ref(q, k, v, cu, cu, d ** -0.5), "bfloat16")


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("d", [64, 128])
def test_prefill_many_heads_many_waves(rng, cuda, causal, d):
    """96 query heads over 4-5 row tiles of 128 or 192 tokens: 192-480 blocks,
    more than one wave on an H100 (at D128 a block takes two tiles), GQA 12,
    tiles straddling sequences, and the LSE output of every row."""
    hq, hkv = 96, 8
    cu = cu_seqlens([1, 250, 0, 300, 47])  # 598 tokens; blocks of rows straddle sequences
    q = rand(rng, (cu[-1], hq, d), "bfloat16", scale=2.0)
    k, v = rand(rng, (cu[-1], hkv, d), "bfloat16"), rand(rng, (cu[-1], hkv, d), "bfloat16")
    out = poisoned_on(q.shape, "bfloat16", cuda)
    lse = poisoned_on((cu[-1], hq), "float32", cuda)
    aiter.prefill_attention(*dev(q, k, v, cu), causal=causal, out=out, lse=lse)
    ref, ref_lse = prefill_ref(q, k, v, cu, cu, d ** -0.5, causal, with_lse=True)
    assert_close(out, ref, "bfloat16")
    np.testing.assert_allclose(f64(lse), ref_lse, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dims", [(128, 128), (192, 128), (64, 64)])
@pytest.mark.parametrize("pad", [8, 2])
def test_prefill_strided_out(rng, cuda, dims, pad):
    """out as a view of a wider buffer (head stride v's dim + pad): with strides
    of whole 16 bytes (pad 8) the Hopper kernel stores it by TMA, else (pad 2)
    in 4-byte pairs.  The padding between heads and the rows past the last
    token must keep their poison."""
    d, dv = dims
    hq, hkv = 3, 1
    cu = cu_seqlens([200, 1, 333])  # the last block's rows run past the tensor
    n = cu[-1]
    q = rand(rng, (n, hq, d), "bfloat16", scale=2.0)
    k, v = rand(rng, (n, hkv, d), "bfloat16"), rand(rng, (n, hkv, dv), "bfloat16")
    wide = poisoned_on((n + 64, hq, dv + pad), "bfloat16", cuda)
    aiter.prefill_attention(*dev(q, k, v, cu), causal=True, out=wide[:n, :, :dv])
    assert_close(wide[:n, :, :dv], prefill_ref(q, k, v, cu, cu, d ** -0.5, True), "bfloat16")
    assert np.isnan(f64(wide[:n, :, dv:])).all(), "the padding between heads was written"
    assert np.isnan(f64(wide[n:])).all(), "rows past the last token were written"
