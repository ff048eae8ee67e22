"""Prefill over a paged cache (aiter_paged_prefill_attention: chunked prefill,
prefix caching) on every backend present, against a float64 NumPy reference:
new tokens that are the last positions of their contexts, read through shuffled
block tables (pages of 1, 16 and 64 positions), odd lengths, empty sequences and
contexts, GQA ratios 1/4/8, head dims 64 and 128, caches of q's dtype and fp8,
causal or not, window, soft-cap, LSE; on the GPU also long sequences (many
tiles), the portable kernel forced on NVIDIA, what the kernels do with indices
the host cannot read, and CUDA-graph replay with new contents."""
import numpy as np
import pytest

import aiter
from harness import assert_close, f64, poisoned_on, rand, to_device
from test_attention import cu_seqlens
from test_attention_split import cuda_torch, decode_case, dev, paged_prefill_ref


def run_case(rng, device, lens_q, lens, page_size, hq, hkv, d, dtype, cache_dtype, causal=True, window_left=-1,
             softcap=0.0, spare_columns=2):
    """One call with poisoned out and lse, checked against the reference."""
    _, k_cache, v_cache, table, lens = decode_case(rng, lens, page_size, hq, hkv, d, dtype, cache_dtype,
                                                   spare_columns=spare_columns)
    cu_q = cu_seqlens(lens_q)
    q = rand(rng, (cu_q[-1], hq, d), dtype)
    scales = (0.01, 0.02) if cache_dtype != dtype else (1.0, 1.0)
    out = poisoned_on(q.shape, dtype, device)
    lse = poisoned_on(q.shape[:2], "float32", device)
    aiter.paged_prefill_attention(*dev(device, q, k_cache, v_cache, table, lens, cu_q), causal=causal,
                                  window_left=window_left, softcap=softcap, k_scale=scales[0], v_scale=scales[1],
                                  out=out, lse=lse)
    ref, ref_lse = paged_prefill_ref(q, f64(k_cache) * scales[0], f64(v_cache) * scales[1], table, lens, cu_q,
                                     d ** -0.5, causal, window_left, softcap)
    tol = 1e-4 if dtype == "float32" else None
    assert_close(out, ref, dtype, rtol=tol, atol=tol)
    np.testing.assert_allclose(f64(lse), ref_lse, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("page_size", [1, 16, 64])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype,cache_dtype", [("bfloat16", "bfloat16"), ("float16", "float16"),
                                               ("float32", "float32"), ("bfloat16", "float8_e4m3fn"),
                                               ("float16", "float8_e5m2"), ("float32", "float8_e4m3fnuz")])
def test_paged_prefill(rng, device, page_size, causal, dtype, cache_dtype):
    """Chunks of new tokens after cached prefixes: odd lengths, a sequence with no
    new token, one that is all new, one of 1, an empty context; window and
    soft-cap; 16-bit q runs the tensor-core kernel on NVIDIA, the rest the portable one."""
    run_case(rng, device, [7, 0, 40, 1, 17, 0], [20, 5, 40, 300, 17, 0], page_size, 8, 2, 64, dtype, cache_dtype,
             causal, window_left=25, softcap=8.0)


@pytest.mark.parametrize("cache_dtype", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_paged_prefill_fp8_caches(rng, device, cache_dtype, d, dtype):
    """Every fp8 cache kind under 16-bit q at both head dims (on NVIDIA the
    tensor-core kernel, widening each tile in shared memory): sequences of
    several 64-key tiles, a partial last one, pages of 16, GQA 4, window and
    soft-cap on the longest."""
    run_case(rng, device, [3, 70, 1, 130], [3, 133, 64, 200], 16, 8, 2, d, dtype, cache_dtype,
             window_left=150, softcap=6.0)


@pytest.mark.parametrize("magnitude", [1e-7, 1e30])
@pytest.mark.parametrize("cache_dtype", ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"])
def test_paged_prefill_fp8_query_range(rng, device, magnitude, cache_dtype):
    """A bf16 query over an fp8 cache: on NVIDIA the products run in fp16, a
    block's query rows scaled by a power of two first.  Queries of magnitude
    1e-7 (fp16 subnormals, unscaled) and 1e30 (past fp16's range), the softmax
    scale making the logits O(1), still match float64."""
    d = 128
    _, k_cache, v_cache, table, lens = decode_case(rng, [133, 40], 16, 8, 2, d, "bfloat16", cache_dtype)
    cu_q = cu_seqlens([70, 40])
    q = rand(rng, (cu_q[-1], 8, d), "bfloat16")
    q = (f64(q) * magnitude).astype(q.dtype)
    scale = d ** -0.5 / magnitude
    out = poisoned_on(q.shape, "bfloat16", device)
    aiter.paged_prefill_attention(*dev(device, q, k_cache, v_cache, table, lens, cu_q), softmax_scale=scale,
                                  k_scale=0.01, v_scale=0.02, out=out)
    ref, _ = paged_prefill_ref(q, f64(k_cache) * 0.01, f64(v_cache) * 0.02, table, lens, cu_q, scale, True)
    assert_close(out, ref, "bfloat16")


@pytest.mark.parametrize("ratio", [1, 4, 8])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_paged_prefill_ratios_and_dims(rng, device, ratio, d, dtype):
    """GQA groups of 1, 4 and 8 query heads, head dims 64 and 128; a sequence of
    more than one 64-token tile (a partial last one), no window."""
    hkv = 2 if ratio < 8 else 1
    run_case(rng, device, [3, 70, 1, 9], [3, 133, 64, 10], 16, hkv * ratio, hkv, d, dtype, dtype)


def test_paged_prefill_strided_rows(rng, device):
    """q and out as views into wider buffers (rows of a fused QKV projection)."""
    hq, hkv, d = 4, 2, 64
    lens_q, lens = [5, 12], [30, 12]
    _, k_cache, v_cache, table, lens = decode_case(rng, lens, 16, hq, hkv, d, "bfloat16", "bfloat16")
    cu_q = cu_seqlens(lens_q)
    qkv = rand(rng, (cu_q[-1], hq + 2 * hkv, d), "bfloat16")
    ref, _ = paged_prefill_ref(qkv[:, :hq], k_cache, v_cache, table, lens, cu_q, d ** -0.5)
    qkv_d = to_device(qkv, device)
    wide = poisoned_on((cu_q[-1], 2 * hq, d), "bfloat16", device)
    out = wide[:, hq:]
    aiter.paged_prefill_attention(qkv_d[:, :hq], *dev(device, k_cache, v_cache, table, lens, cu_q), out=out)
    assert_close(out, ref, "bfloat16")
    assert np.isnan(f64(wide[:, :hq])).all(), "wrote outside out"


def test_paged_prefill_rejects_bad_arguments(rng):
    _, k_cache, v_cache, table, lens = decode_case(rng, [5, 9], 4, 4, 2, 64, "float32", "float32")
    q = rand(rng, (7, 4, 64), "float32")
    with pytest.raises(aiter.InvalidArgumentError, match=r"sequence 0 has 6 new tokens, more than its "
                                                         r"context_lens\[0\] = 5"):
        aiter.paged_prefill_attention(q, k_cache, v_cache, table, lens, np.array([0, 6, 7], np.int32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"block_table: expected shape\[0\] == 1"):
        aiter.paged_prefill_attention(q, k_cache, v_cache, table, lens, np.array([0, 7], np.int32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"cu_seqlens_q: expected the last value == 7"):
        aiter.paged_prefill_attention(q, k_cache, v_cache, table, lens, np.array([0, 3, 6], np.int32))


# ---- GPU only ----------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])  # the tensor-core and the portable kernel
@pytest.mark.parametrize("page_size", [1, 16, 64])
def test_paged_prefill_long_sequences(rng, dtype, page_size):
    """1000 and 2100 new tokens (many tiles, a partial last one) after prefixes,
    beside short sequences; GQA 8; a window shorter than the longest context."""
    cuda_torch()
    run_case(rng, "cuda", [1000, 1, 2100, 63], [1500, 1, 2100, 200], page_size, 8, 1, 128, dtype, dtype,
             window_left=1700)


@pytest.mark.gpu
@pytest.mark.parametrize("cache", ["same", "float8_e4m3fn"])
def test_paged_prefill_portable_kernel_on_nvidia(rng, monkeypatch, cache):
    """AITER_PAGED_PREFILL_KERNEL=portable: the AMD targets' kernel, run on NVIDIA
    for 16-bit q (which otherwise takes the tensor-core kernel)."""
    cuda_torch()
    monkeypatch.setenv("AITER_PAGED_PREFILL_KERNEL", "portable")
    cache_dtype = "bfloat16" if cache == "same" else cache
    run_case(rng, "cuda", [7, 0, 90, 1, 17], [20, 5, 90, 300, 17], 16, 32, 2, 128, "bfloat16", cache_dtype,
             window_left=50, softcap=5.0)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,cache_dtype", [("bfloat16", "bfloat16"), ("float16", "float8_e4m3fn"),
                                               ("float32", "float32")])  # tensor cores (16-bit, fp8), portable
def test_paged_prefill_gpu_bad_indices(rng, dtype, cache_dtype):
    """Indices the host cannot read: a block id out of range masks its keys, a
    length past the table is cut to the table, a sequence with more new tokens
    than positions gives zeros for the tokens before its context; the other
    sequences are unaffected and nothing is read outside the cache
    (compute-sanitizer would say)."""
    cuda_torch()
    hq, hkv, d, page = 4, 1, 64, 16
    lens_q = [10, 10, 10, 6]
    _, k_cache, v_cache, table, lens = decode_case(rng, [40, 40, 40, 4], page, hq, hkv, d, dtype, cache_dtype,
                                                   spare_columns=0)
    cu_q = cu_seqlens(lens_q)
    q = rand(rng, (cu_q[-1], hq, d), dtype)
    bad_table, bad_lens = table.copy(), lens.copy()
    bad_table[1, 1] = 10 ** 6  # positions 16..31 of sequence 1 are masked
    bad_table[2, 0] = -7       # positions 0..15 of sequence 2 are masked
    bad_lens[0] = 10 ** 6      # cut to the table's 3 blocks: 48 positions
    # fp8 codes dequantized to values near 1, as a real cache's are: unscaled
    # codes (|v| up to ~200) would put fp16's rounding of the probabilities far
    # past the tolerance, which is relative to each output, not to max |v|.
    k_scale, v_scale = (0.01, 0.02) if cache_dtype != dtype else (1.0, 1.0)
    out = poisoned_on(q.shape, dtype, "cuda")
    aiter.paged_prefill_attention(*dev("cuda", q, k_cache, v_cache, bad_table, bad_lens, cu_q),
                                  k_scale=k_scale, v_scale=v_scale, out=out)
    got = f64(out)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    scale = d ** -0.5
    k64, v64 = f64(k_cache) * k_scale, f64(v_cache) * v_scale
    ref0, _ = paged_prefill_ref(q[:10], k64, v64, table[:1], [48], cu_seqlens([10]), scale)
    assert_close(got[:10], ref0, dtype, what="length past the table", **tol)
    for b, masked in ((1, np.r_[16:32]), (2, np.r_[0:16])):
        rows = slice(cu_q[b], cu_q[b + 1])
        visible = np.ones(40, bool)
        visible[masked] = False
        pos = np.arange(30, 40)
        qf, kf = f64(q[rows]), np.stack([k64[table[b, t // page], t % page] for t in range(40)])
        vf = np.stack([v64[table[b, t // page], t % page] for t in range(40)])
        s = np.einsum("qhd,kd->hqk", qf, kf[:, 0]) * scale
        s = np.where(visible[None, None] & (np.arange(40)[None, None] <= pos[None, :, None]), s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        ref = np.einsum("hqk,kd->qhd", w / w.sum(-1, keepdims=True), vf[:, 0])
        assert_close(got[rows], ref, dtype, what=f"sequence {b}", **tol)
    assert (got[cu_q[3]:cu_q[3] + 2] == 0).all(), "tokens before the context: zeros"
    ref3, _ = paged_prefill_ref(q[cu_q[3] + 2:], k64, v64, table[3:], [4], cu_seqlens([4]), scale)
    assert_close(got[cu_q[3] + 2:], ref3, dtype, what="tokens inside the context", **tol)


@pytest.mark.gpu
def test_paged_prefill_graph_replay_with_new_contents(rng):
    """Captured once, replayed with new block tables, lengths, query splits
    (cu_seqlens_q of the same Tq), queries and cache contents."""
    torch = cuda_torch()
    hq, hkv, d, page = 8, 2, 128, 16
    lens_q0, lens0 = [100, 1, 0, 99], [900, 5, 0, 333]
    _, k_cache, v_cache, table, lens = decode_case(rng, lens0, page, hq, hkv, d, "bfloat16", "bfloat16",
                                                   spare_columns=30)
    cu_q = cu_seqlens(lens_q0)
    q = rand(rng, (cu_q[-1], hq, d), "bfloat16")
    qd, kd, vd, td, ld, cd = dev("cuda", q, k_cache, v_cache, table, lens, cu_q)
    out = torch.full(q.shape, float("nan"), dtype=torch.bfloat16, device="cuda")
    lse = torch.full(q.shape[:2], float("nan"), device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        aiter.paged_prefill_attention(qd, kd, vd, td, ld, cd, out=out, lse=lse)  # warm-up: loads the code object
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            aiter.paged_prefill_attention(qd, kd, vd, td, ld, cd, out=out, lse=lse)
    capacity = page * table.shape[1]
    for replay in range(3):
        cuts = np.sort(rng.integers(0, cu_q[-1] + 1, len(lens0) - 1))
        cu_new = np.concatenate([[0], cuts, [cu_q[-1]]]).astype(np.int32)
        lens_new = np.array([rng.integers(n, capacity + 1) for n in np.diff(cu_new)], np.int32)
        table_new = rng.integers(0, k_cache.shape[0], table.shape).astype(np.int32)  # repeats are allowed
        q_new, k_new = rand(rng, q.shape, "bfloat16"), rand(rng, k_cache.shape, "bfloat16")
        for dst, src in ((td, table_new), (ld, lens_new), (cd, cu_new), (qd, q_new), (kd, k_new)):
            dst.copy_(to_device(src, "cuda"))
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref, ref_lse = paged_prefill_ref(q_new, k_new, v_cache, table_new, lens_new, cu_new, d ** -0.5)
        assert_close(out, ref, "bfloat16", what=f"replay {replay}")
        np.testing.assert_allclose(f64(lse), ref_lse, rtol=1e-4, atol=1e-4, err_msg=f"lse, replay {replay}")
