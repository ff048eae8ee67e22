"""Attention beyond the basics, on every backend present, against the float64
NumPy references of test_attention.py: prefill with odd lengths, every head-dim
pair (192/128 too), soft-cap and log-sum-exp outputs; split-KV decode with its
workspace, several new tokens a sequence, page sizes 1/16/64 and fp8 caches;
CUDA-graph capture and replay; what the GPU does with bad indices it cannot
report."""
import numpy as np
import pytest

import aiter
from harness import FP8_DTYPES, assert_close, f64, np_dtype, on_host, poisoned_on, rand, to_device
from test_attention import (FP8_MAX, attend, cu_seqlens, decode_ref, fp8_quantize, gather_context, paged_layout,
                            prefill_ref, visibility)


def dev(device, *arrays):
    return [to_device(a, device) for a in arrays]


# ---- prefill ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("dims", [(64, 64), (128, 128), (256, 256), (192, 128)])
@pytest.mark.parametrize("ratio", [1, 4])
def test_prefill_head_dims_odd_lengths(rng, device, dtype, dims, ratio):
    d, dv = dims
    hkv = 2
    hq = hkv * ratio
    lens = [1, 7, 0, 17, 130]
    cu = cu_seqlens(lens)
    q, k = rand(rng, (cu[-1], hq, d), dtype), rand(rng, (cu[-1], hkv, d), dtype)
    v = rand(rng, (cu[-1], hkv, dv), dtype)
    out = poisoned_on((cu[-1], hq, dv), dtype, device)
    aiter.prefill_attention(*dev(device, q, k, v, cu), out=out)
    assert_close(out, prefill_ref(q, k, v, cu, cu, d ** -0.5), dtype)


@pytest.mark.parametrize("ratio", [1, 8, 32])
def test_prefill_long_and_gqa_ratios(rng, device, ratio):
    """Lengths 1000 and 4097 (a partial last tile), Hq/Hkv 1, 8 and 32."""
    hkv, d = 1, 64
    lens_q, lens_k = [1000, 3], [4097, 3]
    if device == "cpu" and ratio == 32:
        lens_q, lens_k = [300, 3], [1100, 3]  # the CPU reference backend is slow
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q = rand(rng, (cu_q[-1], hkv * ratio, d), "bfloat16")
    k, v = rand(rng, (cu_k[-1], hkv, d), "bfloat16"), rand(rng, (cu_k[-1], hkv, d), "bfloat16")
    got = aiter.prefill_attention(*dev(device, q, k, v, cu_q, cu_k), window_left=2000)
    assert_close(got, prefill_ref(q, k, v, cu_q, cu_k, d ** -0.5, True, 2000), "bfloat16")


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("softcap", [0.0, 5.0])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])  # bf16: the tensor-core kernel on NVIDIA
def test_prefill_lse_and_softcap(rng, device, causal, softcap, dtype):
    hq, hkv, d = 4, 2, 128
    lens_q, lens_k = [3, 0, 9, 1, 40, 70], [10, 4, 9, 0, 70, 150]  # a sequence with queries but no keys
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q = rand(rng, (cu_q[-1], hq, d), dtype, scale=3.0)
    k, v = rand(rng, (cu_k[-1], hkv, d), dtype), rand(rng, (cu_k[-1], hkv, d), dtype)
    lse = poisoned_on((cu_q[-1], hq), "float32", device)
    out, got_lse = aiter.prefill_attention(*dev(device, q, k, v, cu_q, cu_k), causal=causal, softcap=softcap,
                                           lse=lse, window_left=30)
    assert got_lse is lse
    ref, ref_lse = prefill_ref(q, k, v, cu_q, cu_k, d ** -0.5, causal, 30, softcap, with_lse=True)
    if dtype == "float32":
        assert_close(out, ref, "float32", rtol=1e-4, atol=1e-4)
    else:
        assert_close(out, ref, dtype)
    got_lse = f64(lse)
    assert (np.isinf(got_lse) == np.isinf(ref_lse)).all(), "rows that see no key get -inf"
    finite = np.isfinite(ref_lse)
    np.testing.assert_allclose(got_lse[finite], ref_lse[finite], rtol=1e-4, atol=1e-4)


def test_prefill_rejects_bad_extensions(rng):
    cu = cu_seqlens([3])
    q, k = rand(rng, (3, 2, 128), "float32"), rand(rng, (3, 1, 128), "float32")
    with pytest.raises(aiter.UnsupportedShapeError, match="v: head dim 64 beside q's 128"):
        aiter.prefill_attention(q, k, rand(rng, (3, 1, 64), "float32"), cu)
    with pytest.raises(aiter.InvalidArgumentError, match="params.softcap"):
        aiter.prefill_attention(q, k, k, cu, softcap=-1.0)
    with pytest.raises(aiter.InvalidArgumentError, match=r"params.lse: expected shape\[1\] == 2"):
        aiter.prefill_attention(q, k, k, cu, lse=np.zeros((3, 3), np.float32))
    with pytest.raises(aiter.UnsupportedDtypeError, match="params.lse: expected dtype float32"):
        aiter.prefill_attention(q, k, k, cu, lse=np.zeros((3, 2), np.float64))


# ---- split-KV decode ------------------------------------------------------------------

def decode_case(rng, lens, page_size, hq, hkv, d, dtype, cache_dtype, q_tokens=1, spare_columns=2):
    lens = np.array(lens, np.int32)
    table, num_blocks = paged_layout(rng, lens, page_size, spare_columns=spare_columns)
    if cache_dtype == dtype:
        k_cache = rand(rng, (num_blocks, page_size, hkv, d), dtype)
        v_cache = rand(rng, (num_blocks, page_size, hkv, d), dtype)
    else:
        k_cache = fp8_quantize(rand(rng, (num_blocks, page_size, hkv, d), "float32") * 0.5, 0.01, cache_dtype)
        v_cache = fp8_quantize(rand(rng, (num_blocks, page_size, hkv, d), "float32"), 0.02, cache_dtype)
    shape = (len(lens), hq, d) if q_tokens == 1 else (len(lens), q_tokens, hq, d)
    return rand(rng, shape, dtype), k_cache, v_cache, table, lens


def run_split(device, q, k_cache, v_cache, table, lens, poison=True, **kw):
    qd, kd, vd, td, ld = dev(device, q, k_cache, v_cache, table, lens)
    size = aiter.paged_decode_workspace_size(qd, kd, td)
    workspace = to_device(np.full(max(size // 4, 1), np.nan if poison else 0, np.float32), device)
    out = poisoned_on(q.shape, q.dtype.name, device)
    aiter.paged_decode_attention(qd, kd, vd, td, ld, workspace=workspace, out=out, **kw)
    return out, size


@pytest.mark.parametrize("page_size", [1, 16, 64])
@pytest.mark.parametrize("ratio", [1, 4, 8, 32])
def test_split_decode_pages_and_ratios(rng, device, page_size, ratio):
    """Long and short contexts, an empty one, shuffled blocks; the block table is
    wide enough for several splits."""
    hkv, d = 2 if ratio < 32 else 1, 128
    q, k_cache, v_cache, table, lens = decode_case(rng, [4097, 0, 1, 17, 1000], page_size, hkv * ratio, hkv, d,
                                                   "bfloat16", "bfloat16")
    out, size = run_split(device, q, k_cache, v_cache, table, lens)
    assert size > 0, "a context of thousands of positions has splits"
    assert_close(out, decode_ref(q, k_cache, v_cache, table, lens, d ** -0.5), "bfloat16")
    assert (f64(out[1]) == 0).all(), "a context of 0 gives zeros"


@pytest.mark.parametrize("spare_columns", [0, 40, 300])
@pytest.mark.parametrize("batch", [1, 3, 64])
def test_split_decode_split_counts(rng, device, spare_columns, batch):
    """Split counts follow the table's width (capacity) and the batch: from 1 to the
    most the workspace holds."""
    page_size, d = 16, 64
    lens = rng.integers(0, 700, batch)
    lens[0] = 700
    q, k_cache, v_cache, table, lens = decode_case(rng, lens, page_size, 8, 2, d, "float16", "float16",
                                                   spare_columns=spare_columns)
    out, _ = run_split(device, q, k_cache, v_cache, table, lens, window_left=500 if batch == 3 else -1)
    assert_close(out, decode_ref(q, k_cache, v_cache, table, lens, d ** -0.5, 500 if batch == 3 else -1), "float16")


@pytest.mark.parametrize("cache_dtype", FP8_DTYPES)
@pytest.mark.parametrize("d", [64, 128])
def test_split_decode_fp8(rng, device, cache_dtype, d):
    q, k_cache, v_cache, table, lens = decode_case(rng, [300, 5, 2000], 16, 8, 1, d, "bfloat16", cache_dtype)
    out, _ = run_split(device, q, k_cache, v_cache, table, lens, k_scale=0.01, v_scale=0.02)
    ref = decode_ref(q, f64(k_cache) * 0.01, f64(v_cache) * 0.02, table, lens, d ** -0.5)
    assert_close(out, ref, "bfloat16")


@pytest.mark.parametrize("q_tokens", [1, 3, 8])
@pytest.mark.parametrize("softcap", [0.0, 20.0])
def test_multi_token_decode(rng, device, q_tokens, softcap):
    """Several new tokens a sequence (speculative decoding), the last positions of
    the context, causal among themselves; a context shorter than the new tokens."""
    q, k_cache, v_cache, table, lens = decode_case(rng, [100, 2, 600, 9], 16, 8, 2, 64, "float32", "float32",
                                                   q_tokens=q_tokens)
    if q_tokens > 1:
        q = q[:, :, ::-1].copy()  # fresh layout, still [B, Nq, Hq, D]
    out, _ = run_split(device, q, k_cache, v_cache, table, lens, softcap=softcap, window_left=50)
    assert_close(out, decode_ref(q, k_cache, v_cache, table, lens, 64 ** -0.5, 50, softcap), "float32",
                 rtol=1e-4, atol=1e-4)


def test_split_decode_workspace_reused(rng, device):
    """One workspace, NaN-filled once, through calls of different batches, head
    groups and split counts, never cleaned between them: each call's result is its
    own reference's (a call must not depend on what the previous one left there)."""
    cases = [([700, 3], 16, 2, "bfloat16", 1, 300), ([250, 0, 1000, 9], 4, 4, "float16", 2, 40),
             ([1], 32, 1, "bfloat16", 1, 0), ([999], 8, 2, "bfloat16", 3, 200)]
    built = [decode_case(rng, lens, 16, hq, hkv, 64, dtype, dtype, q_tokens=nq, spare_columns=spare)
             for lens, hq, hkv, dtype, nq, spare in cases]
    on_dev = [dev(device, *case) for case in built]
    size = max(aiter.paged_decode_workspace_size(qd, kd, td) for qd, kd, _, td, _ in on_dev)
    workspace = to_device(np.full(size // 4, np.nan, np.float32), device)
    for rounds in range(2):
        for (q, k_cache, v_cache, table, lens), (qd, kd, vd, td, ld), case in zip(built, on_dev, cases):
            out = poisoned_on(q.shape, q.dtype.name, device)
            aiter.paged_decode_attention(qd, kd, vd, td, ld, workspace=workspace, out=out)
            assert_close(out, decode_ref(q, k_cache, v_cache, table, lens, 64 ** -0.5), q.dtype.name,
                         what=f"round {rounds} case {case}")


def test_split_decode_rejects_bad_workspace(rng, device):
    q, k_cache, v_cache, table, lens = decode_case(rng, [700, 3], 16, 4, 2, 64, "float32", "float32",
                                                   spare_columns=100)
    qd, kd, vd, td, ld = dev(device, q, k_cache, v_cache, table, lens)
    size = aiter.paged_decode_workspace_size(qd, kd, td)
    out = poisoned_on(q.shape, "float32", device)
    small = to_device(np.zeros(size // 4 - 1, np.float32), device)
    with pytest.raises(aiter.InvalidArgumentError, match=rf"workspace: {size - 4} bytes are too few \(expected at "
                                                         rf"least {size}"):
        aiter.paged_decode_attention(qd, kd, vd, td, ld, workspace=small, out=out)
    with pytest.raises(aiter.UnsupportedShapeError, match="9 new tokens"):
        aiter.paged_decode_attention(to_device(np.zeros((2, 9, 4, 64), np.float32), device), kd, vd, td, ld,
                                     split_kv=True)
    assert np.isnan(f64(out)).all(), "a rejected call wrote to out"


def test_split_decode_error_classes_with_torch_cpu_tensors(rng):
    """torch tensors take the registered op, whose C++ boundary reduces aiter's
    errors to ValueError; the functional API must still raise aiter's classes
    (on a GPU the same path runs with CUDA tensors in the test above)."""
    torch = pytest.importorskip("torch")
    q, k_cache, v_cache, table, lens = decode_case(rng, [700, 3], 16, 4, 2, 64, "float32", "float32",
                                                   spare_columns=100)
    qt, kt, vt, tt, lt = (torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k_cache, v_cache, table, lens))
    size = aiter.paged_decode_workspace_size(qt, kt, tt)
    with pytest.raises(aiter.InvalidArgumentError, match="workspace"):
        aiter.paged_decode_attention(qt, kt, vt, tt, lt, workspace=torch.zeros(size // 4 - 1))


# ---- prefill over the paged cache ------------------------------------------------------

def paged_prefill_ref(q, k_cache, v_cache, table, lens, cu_q, scale, causal=True, window_left=-1, softcap=0.0):
    """Sequence b's new tokens (q rows cu_q[b]:cu_q[b+1]) are the last positions of
    its context of lens[b] positions, gathered from the paged cache."""
    q, k_cache, v_cache = f64(q), f64(k_cache), f64(v_cache)
    out, lse = np.zeros(q.shape), np.full(q.shape[:2], -np.inf)
    for b, length in enumerate(lens):
        rows = slice(cu_q[b], cu_q[b + 1])
        k, v = gather_context(k_cache, table[b], length), gather_context(v_cache, table[b], length)
        visible = visibility(rows.stop - rows.start, length, causal, window_left)
        out[rows], lse[rows] = attend(q[rows], k, v, visible, scale, softcap, with_lse=True)
    return out, lse


# The tests of paged prefill are in test_attention_paged_prefill.py.


# ---- GPU only ----------------------------------------------------------------------------

def cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch


@pytest.mark.gpu
@pytest.mark.parametrize("split", [False, True])
def test_decode_graph_replay_with_new_contents(rng, split):
    """Captured once, replayed with new block tables, lengths, queries and cache
    contents: each replay matches the reference for its contents."""
    torch = cuda_torch()
    lens0 = [900, 5, 0, 333]
    q, k_cache, v_cache, table, lens = decode_case(rng, lens0, 16, 8, 2, 128, "bfloat16", "bfloat16",
                                                   spare_columns=30)
    qd, kd, vd, td, ld = dev("cuda", q, k_cache, v_cache, table, lens)
    size = aiter.paged_decode_workspace_size(qd, kd, td)
    workspace = torch.full((max(size // 4, 1),), float("nan"), device="cuda")
    out = torch.full(q.shape, float("nan"), dtype=torch.bfloat16, device="cuda")
    kw = {"workspace": workspace} if split else {}
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        aiter.paged_decode_attention(qd, kd, vd, td, ld, out=out, **kw)  # warm-up: loads the code object
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            aiter.paged_decode_attention(qd, kd, vd, td, ld, out=out, **kw)
    for replay in range(3):
        lens_new = rng.integers(0, 16 * table.shape[1] + 1, len(lens0)).astype(np.int32)
        table_new = rng.integers(0, k_cache.shape[0], table.shape).astype(np.int32)  # repeats are allowed
        q_new = rand(rng, q.shape, "bfloat16")
        k_new = rand(rng, k_cache.shape, "bfloat16")
        for dst, src in ((td, table_new), (ld, lens_new), (qd, q_new), (kd, k_new)):
            dst.copy_(to_device(src, "cuda"))
        out.fill_(float("nan"))
        workspace.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, decode_ref(q_new, k_new, v_cache, table_new, lens_new, 128 ** -0.5), "bfloat16",
                     what=f"replay {replay}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])  # the portable and the tensor-core kernel
def test_decode_gpu_skips_bad_indices(rng, dtype):
    """On the GPU the host cannot read the block table or the lengths: a block id
    out of range is skipped like a masked key, a length past the table is cut to
    the table; the other sequences are unaffected and nothing is read outside
    the cache (compute-sanitizer would say)."""
    cuda_torch()
    q, k_cache, v_cache, table, lens = decode_case(rng, [40, 40, 40], 16, 4, 1, 64, dtype, dtype,
                                                   spare_columns=0)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == "float32" else {}
    bad_table, bad_lens = table.copy(), lens.copy()
    bad_table[1, 1] = 10 ** 6       # positions 16..31 of sequence 1 are skipped
    bad_table[2, 0] = -7            # positions 0..15 of sequence 2 are skipped
    bad_lens[0] = 10 ** 6           # cut to the table's 3 blocks: 48 positions
    for split in (False, True):
        qd, kd, vd, td, ld = dev("cuda", q, k_cache, v_cache, bad_table, bad_lens)
        out = poisoned_on(q.shape, dtype, "cuda")
        aiter.paged_decode_attention(qd, kd, vd, td, ld, out=out, split_kv=split)
        got = f64(out)
        # Sequence 0 sees 48 positions; its third block holds rows past the 40
        # written... the cache is random everywhere, so the reference reads them too.
        ref0 = decode_ref(q[:1], k_cache, v_cache, table[:1], np.array([48]), 64 ** -0.5)
        assert_close(got[0], ref0[0], dtype, **tol)
        keep1 = np.r_[0:16, 32:40]
        k1 = np.stack([k_cache[table[1, t // 16], t % 16] for t in keep1])
        v1 = np.stack([v_cache[table[1, t // 16], t % 16] for t in keep1])
        ref1 = decode_ref(q[1:2], k1[:, None], v1[:, None], np.arange(len(keep1))[None], [len(keep1)], 64 ** -0.5)
        assert_close(got[1], ref1[0], dtype, **tol)
        keep2 = np.arange(16, 40)
        k2 = np.stack([k_cache[table[2, t // 16], t % 16] for t in keep2])
        v2 = np.stack([v_cache[table[2, t // 16], t % 16] for t in keep2])
        ref2 = decode_ref(q[2:3], k2[:, None], v2[:, None], np.arange(len(keep2))[None], [len(keep2)], 64 ** -0.5)
        assert_close(got[2], ref2[0], dtype, **tol)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("cache", ["same"] + FP8_DTYPES)
@pytest.mark.parametrize("page_size,d,q_tokens,heads", [(1, 64, 1, (4, 4)), (3, 128, 2, (32, 2)),
                                                        (16, 128, 3, (8, 1)), (64, 64, 1, (16, 2))])
def test_decode_tensor_cores(rng, dtype, cache, page_size, d, q_tokens, heads):
    """The tensor-core kernel (16-bit q on NVIDIA) against float64: caches of q's
    dtype and of each fp8 kind, pages of 1/3/16/64 positions, 1-3 new tokens,
    GQA groups of 1-16 query heads (1-4 blocks of 16 rows a kv head), window and
    soft-cap, with and without split-KV; contexts of 0, 1 and fewer positions
    than new tokens."""
    cuda_torch()
    hq, hkv = heads
    cache_dtype = dtype if cache == "same" else cache
    q, k_cache, v_cache, table, lens = decode_case(rng, [1500, 0, 1, 37, 260], page_size, hq, hkv, d, dtype,
                                                   cache_dtype, q_tokens=q_tokens, spare_columns=20)
    ks, vs = (1.0, 1.0) if cache == "same" else (0.01, 0.02)
    qd, kd, vd, td, ld = dev("cuda", q, k_cache, v_cache, table, lens)
    for window, softcap in ((-1, 0.0), (300, 15.0)):
        ref = decode_ref(q, f64(k_cache) * ks, f64(v_cache) * vs, table, lens, d ** -0.5, window, softcap)
        for split in (False, True):
            out = poisoned_on(q.shape, dtype, "cuda")
            aiter.paged_decode_attention(qd, kd, vd, td, ld, out=out, split_kv=split, k_scale=ks, v_scale=vs,
                                         window_left=window, softcap=softcap)
            assert_close(out, ref, dtype, what=f"split={split} window={window} softcap={softcap}")


@pytest.mark.gpu
@pytest.mark.parametrize("cache", FP8_DTYPES)
@pytest.mark.parametrize("magnitude", [1e-7, 1e30])
def test_decode_fp8_query_range(rng, cache, magnitude):
    """A bf16 query over an fp8 cache: the tensor-core kernel runs both products
    in fp16, each query row scaled by a power of two first.  Rows of magnitude
    1e-7 (fp16 subnormals, unscaled) and 1e30 (past fp16's range), the softmax
    scale making their logits O(1), still match float64; the rows of a block
    differ in magnitude (x 0.25 to 40), so each row's factor must come back in
    its own logits."""
    cuda_torch()
    q, k_cache, v_cache, table, lens = decode_case(rng, [700, 33, 1], 16, 8, 2, 128, "bfloat16", cache)
    row_mags = np.array([1.0, 0.25, 40.0, 3.0, 0.5, 7.0, 1.0, 0.3])[None, :, None] * magnitude
    q = (f64(q) * row_mags).astype(q.dtype)
    for split in (False, True):
        out = poisoned_on(q.shape, "bfloat16", "cuda")
        scale = 128 ** -0.5 / magnitude
        aiter.paged_decode_attention(*dev("cuda", q, k_cache, v_cache, table, lens), out=out, split_kv=split,
                                     softmax_scale=scale, k_scale=0.01, v_scale=0.02)
        ref = decode_ref(q, f64(k_cache) * 0.01, f64(v_cache) * 0.02, table, lens, scale)
        assert_close(out, ref, "bfloat16", what=f"split={split}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])  # the portable and the tensor-core kernel
def test_prefill_gpu_inconsistent_cu_seqlens(rng, dtype):
    """cu_seqlens the host cannot check: rows of a sequence whose bounds are out
    of range get zeros, the others are right, nothing is read out of bounds."""
    cuda_torch()
    cu_good = cu_seqlens([5, 6, 7])
    cu_bad = cu_good.copy()
    cu_bad[2] = 10 ** 6  # sequences 1 and 2 now have impossible bounds
    q, k, v = (rand(rng, (18, 2, 64), dtype) for _ in range(3))
    out = aiter.prefill_attention(*dev("cuda", q, k, v, cu_bad, cu_good))
    got = f64(out)
    ref = prefill_ref(q, k, v, cu_good, cu_good, 64 ** -0.5)
    assert_close(got[:5], ref[:5], dtype, rtol=1e-4 if dtype == "float32" else None,
                 atol=1e-4 if dtype == "float32" else None)
    assert (got[5:] == 0).all()
