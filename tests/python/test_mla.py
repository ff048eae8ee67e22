"""MLA decode and concat_and_cache_mla on every backend present, against float64
NumPy references: context and s_q edge cases, shuffled block tables, page sizes
1/16/64, fp8 caches, log-sum-exp outputs, several split counts over poisoned
outputs and workspaces, CUDA-graph capture and replay with changed contents,
and bad input.  Large shapes run on the GPU only."""
import numpy as np
import pytest

import aiter
from harness import assert_close, f64, np_dtype, on_host, poisoned, poisoned_on, rand, to_device
from test_attention import FP8_MAX, fp8_quantize, paged_layout

D, DV = 576, 512


# ---- reference -----------------------------------------------------------------------

def mla_ref(q, cache, table, lens, scale, kv_scale=1.0):
    """q [B, s_q, Hq, 576], cache [blocks, page, 576] -> out [B, s_q, Hq, 512] and
    lse [B, s_q, Hq] in float64: new token i of sequence b sees positions
    [0, lens[b] - s_q + i]."""
    q, cache = f64(q), f64(cache) * kv_scale
    batch, s_q, hq, _ = q.shape
    page = cache.shape[1]
    out, lse = np.zeros((batch, s_q, hq, DV)), np.full((batch, s_q, hq), -np.inf)
    for b in range(batch):
        pos = np.arange(lens[b])
        latents = cache[table[b, pos // page], pos % page] if lens[b] else np.zeros((0, D))
        for i in range(s_q):
            seen = max(int(lens[b]) - s_q + i + 1, 0)
            if seen == 0:
                continue
            logits = q[b, i] @ latents[:seen].T * scale  # [Hq, seen]
            top = logits.max(axis=1, keepdims=True)
            p = np.exp(logits - top)
            out[b, i] = p @ latents[:seen, :DV] / p.sum(axis=1, keepdims=True)
            lse[b, i] = top[:, 0] + np.log(p.sum(axis=1))
    return out, lse


# ---- inputs ---------------------------------------------------------------------------

def make_case(rng, lens, page_size, hq, s_q, dtype="bfloat16", cache_dtype=None, kv_scale=1.0):
    lens = np.array(lens, np.int32)
    table, num_blocks = paged_layout(rng, lens, page_size)
    cache_dtype = cache_dtype or dtype
    latents = rand(rng, (num_blocks, page_size, D), "float32")
    if cache_dtype == dtype:
        cache = latents.astype(np_dtype(dtype))
    else:
        cache = fp8_quantize(latents, kv_scale, cache_dtype)
    q = rand(rng, (len(lens), s_q, hq, D), dtype)
    return q, cache, table, lens


def run(device, q, cache, table, lens, scale, poison=True, **kw):
    """mla_decode on `device` with poisoned out, lse and workspace; returns host arrays."""
    qd, cd, td, ld = (to_device(a, device) for a in (q, cache, table, lens))
    splits = kw.get("num_splits", 0)
    size = aiter.mla_decode_workspace_size(qd, cd, td, splits)
    ws = to_device(np.full(max(size // 4, 1), np.nan if poison else 0.0, np.float32), device) if size else None
    out = poisoned_on(q.shape[:3] + (DV,), q.dtype.name, device)
    lse = poisoned_on(q.shape[:3], "float32", device)
    got, got_lse = aiter.mla_decode(qd, cd, td, ld, scale, workspace=ws, out=out, lse=lse, **kw)
    assert got is out and got_lse is lse
    return on_host(out), on_host(lse)


def check(got, got_lse, ref, ref_lse, dtype, atol=None):
    assert_close(got, ref, dtype, atol=atol)
    got_lse = f64(got_lse)
    assert (np.isneginf(got_lse) == np.isneginf(ref_lse)).all(), "rows that see nothing get -inf"
    seen = np.isfinite(ref_lse)
    np.testing.assert_allclose(got_lse[seen], ref_lse[seen], rtol=1e-3, atol=1e-3)


# ---- decode ---------------------------------------------------------------------------

@pytest.mark.parametrize("page_size", [1, 16, 64])
@pytest.mark.parametrize("s_q", [1, 2, 3, 4])
def test_decode_pages_and_new_tokens(rng, device, page_size, s_q):
    """Empty, one-position and short contexts (some shorter than s_q), lengths off
    the page; 5 heads (rows of a tile left over)."""
    q, cache, table, lens = make_case(rng, [0, 1, 3, 37, 130], page_size, 5, s_q)
    got, lse = run(device, q, cache, table, lens, 0.05)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.05), "bfloat16")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("cache_dtype", ["same", "float8_e4m3fn", "float8_e4m3fnuz"])
def test_decode_dtypes_and_fp8(rng, device, dtype, cache_dtype):
    cache_dtype = dtype if cache_dtype == "same" else cache_dtype
    kv_scale = 0.02 if cache_dtype != dtype else 1.0
    q, cache, table, lens = make_case(rng, [70, 5, 129], 16, 16, 2, dtype, cache_dtype, kv_scale)
    got, lse = run(device, q, cache, table, lens, 0.06, kv_scale=kv_scale)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.06, kv_scale), dtype)


@pytest.mark.parametrize("num_splits", [1, 2, 3, 7])
def test_decode_split_counts(rng, device, num_splits):
    """Splits over poisoned workspaces: splits past a context's end see nothing."""
    q, cache, table, lens = make_case(rng, [600, 0, 257, 1], 64, 8, 1)
    got, lse = run(device, q, cache, table, lens, 0.04, num_splits=num_splits)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.04), "bfloat16")


@pytest.mark.parametrize("magnitude", [1e-6, 1e5])
@pytest.mark.parametrize("cache_dtype", ["float8_e4m3fn", "float8_e4m3fnuz"])
def test_decode_fp8_query_range(rng, device, magnitude, cache_dtype):
    """Queries far outside fp16's comfortable range (1e5 overflows it, 1e-6 is
    subnormal there): the GPU's fp8 kernels run their products in fp16 on a
    power-of-two-scaled query.  16 rows (one row tile), then 3 splits."""
    q, cache, table, lens = make_case(rng, [200, 77], 16, 16, 1, "bfloat16", cache_dtype, 0.03)
    q = (q.astype(np.float32) * magnitude).astype(q.dtype)
    scale = 0.05 / magnitude
    ref = mla_ref(q, cache, table, lens, scale, 0.03)
    for splits in (0, 3):
        got, lse = run(device, q, cache, table, lens, scale, kv_scale=0.03, num_splits=splits)
        check(got, lse, *ref, "bfloat16")


def test_decode_split_counts_fp16(rng, device):
    """fp16 outputs over 5 splits (the GPU keeps partial rows in out's type)."""
    q, cache, table, lens = make_case(rng, [700, 3], 64, 4, 2, "float16")
    got, lse = run(device, q, cache, table, lens, 0.04, num_splits=5)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.04), "float16")


def test_decode_without_lse(rng, device):
    q, cache, table, lens = make_case(rng, [9, 33], 16, 4, 1)
    got = aiter.mla_decode(*(to_device(a, device) for a in (q, cache, table, lens)), 0.05)
    assert_close(on_host(got), mla_ref(q, cache, table, lens, 0.05)[0], "bfloat16")


# ---- large shapes (GPU only) ----------------------------------------------------------------

gpu_only = pytest.mark.parametrize("device", [pytest.param("cuda", marks=pytest.mark.gpu)], indirect=True)


@gpu_only
@pytest.mark.parametrize("hq,s_q", [(16, 1), (16, 2), (128, 1), (128, 2), (40, 3)])
@pytest.mark.parametrize("cache_dtype", ["bfloat16", "float8_e4m3fn"])
def test_decode_deepseek_shapes(rng, device, hq, s_q, cache_dtype):
    """DeepSeek-V3 heads (16 a rank at TP 8, 128 at TP 1), long contexts, automatic splits."""
    kv_scale = 0.02 if cache_dtype != "bfloat16" else 1.0
    q, cache, table, lens = make_case(rng, [4097, 1000, 64, 3], 64, hq, s_q, "bfloat16", cache_dtype, kv_scale)
    got, lse = run(device, q, cache, table, lens, 0.0417, kv_scale=kv_scale)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.0417, kv_scale), "bfloat16")


def poison_unused_rows(cache, table, lens):
    """NaN in every cache row no context position uses (the tails of last pages
    and spare blocks): a kernel that lets them into P V returns NaN."""
    page = cache.shape[1]
    used = np.zeros(cache.shape[0] * page, bool)
    for b, n in enumerate(lens):
        pos = np.arange(n)
        used[table[b, pos // page] * page + pos % page] = True
    flat = cache.reshape(-1, D)
    flat[~used] = np.nan
    return cache


@gpu_only
@pytest.mark.parametrize("hq,s_q,page_size,num_splits", [(64, 1, 64, 0), (128, 1, 16, 0), (128, 2, 64, 3),
                                                         (64, 3, 48, 0), (96, 1, 16, 2), (64, 1, 1, 0)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_decode_many_rows(rng, device, hq, s_q, page_size, num_splits, dtype):
    """64 rows or more a sequence (on sm_90a whole 64-row tiles of the wgmma kernel,
    which pads smaller sequences; its page sizes are multiples of 16, page 1 takes
    the mma.sync kernel): lengths
    0, 1, odd and whole tiles, unused cache rows poisoned with NaN, forced splits."""
    q, cache, table, lens = make_case(rng, [1000, 0, 1, 131, 64, 2 * s_q], page_size, hq, s_q, dtype)
    cache = poison_unused_rows(cache, table, lens)
    got, lse = run(device, q, cache, table, lens, 0.0417, num_splits=num_splits)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.0417), dtype)


@gpu_only
def test_decode_many_rows_without_lse(rng, device):
    q, cache, table, lens = make_case(rng, [77, 300], 64, 128, 1)
    got = aiter.mla_decode(*(to_device(a, device) for a in (q, cache, table, lens)), 0.05)
    assert_close(on_host(got), mla_ref(q, cache, table, lens, 0.05)[0], "bfloat16")


@gpu_only
def test_decode_one_long_sequence(rng, device):
    """B 1 over 20000 positions: split-KV spreads it over the device."""
    q, cache, table, lens = make_case(rng, [20000], 64, 16, 1)
    got, lse = run(device, q, cache, table, lens, 0.0417)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.0417), "bfloat16")


@gpu_only
@pytest.mark.parametrize("hq,s_q,num_splits", [(16, 1, 1), (16, 2, 3), (40, 1, 2), (16, 1, 0)])
def test_decode_long_splits(rng, device, hq, s_q, num_splits):
    """Splits of 8 tiles or more over pages of 64 (the Hopper kernel then copies a
    third of a tile at a time), lengths that end inside a page."""
    q, cache, table, lens = make_case(rng, [1500, 4100, 777], 64, hq, s_q)
    got, lse = run(device, q, cache, table, lens, 0.05, num_splits=num_splits)
    check(got, lse, *mla_ref(q, cache, table, lens, 0.05), "bfloat16")


@gpu_only
@pytest.mark.parametrize("page_size", [1, 16, 64])
@pytest.mark.parametrize("hq,s_q", [(16, 1), (5, 3), (4, 4)])
@pytest.mark.parametrize("cache_dtype", ["float8_e4m3fn", "float8_e4m3fnuz"])
def test_decode_fp8_few_rows(rng, device, page_size, hq, s_q, cache_dtype):
    """fp8 caches with up to 16 rows a sequence (the memory-bound case; on NVIDIA
    the mma.sync kernel's 16-row tiles at two blocks an SM): lengths 0, 1, odd,
    one and several 64-key tiles, unused cache rows poisoned with NaN, automatic
    and forced splits, bf16 and fp16 queries."""
    for dtype, num_splits in (("bfloat16", 0), ("float16", 3)):
        q, cache, table, lens = make_case(rng, [700, 0, 1, 64, 131, s_q], page_size, hq, s_q, dtype, cache_dtype,
                                          0.02)
        cache = poison_unused_rows(cache, table, lens)
        got, lse = run(device, q, cache, table, lens, 0.05, kv_scale=0.02, num_splits=num_splits)
        check(got, lse, *mla_ref(q, cache, table, lens, 0.05, 0.02), dtype)


@gpu_only
@pytest.mark.parametrize("hq,cache_dtype", [(16, "bfloat16"), (64, "bfloat16"), (16, "float8_e4m3fn")])
def test_decode_bad_block_ids_on_device(rng, device, hq, cache_dtype):
    """Block ids the host cannot check: positions with an id out of range are skipped."""
    kv_scale = 0.02 if cache_dtype != "bfloat16" else 1.0
    q, cache, table, lens = make_case(rng, [100, 40], 16, hq, 1, "bfloat16", cache_dtype, kv_scale)
    bad = table.copy()
    bad[0, 2], bad[1, 0] = 10 ** 6, -5
    got, lse = run(device, q, cache, bad, lens, 0.05, num_splits=2, kv_scale=kv_scale)
    keep = np.ones((2, 100), bool)
    keep[0, 32:48], keep[1, :16] = False, False
    for b in range(2):  # the reference over the positions that remain
        sel = np.nonzero(keep[b, :lens[b]])[0]
        rows = cache[table[b, sel // 16], sel % 16]
        one, one_lse = mla_ref(q[b:b + 1], rows[:, None, :], np.arange(len(sel))[None].astype(np.int32),
                               np.array([len(sel)], np.int32), 0.05, kv_scale)
        check(got[b:b + 1], lse[b:b + 1], one, one_lse, "bfloat16")


@gpu_only
@pytest.mark.parametrize("hq,cache_dtype", [(16, "bfloat16"), (64, "bfloat16"), (8, "float8_e4m3fn")])
def test_graph_capture_and_replay(rng, device, hq, cache_dtype):
    """Captured once, replayed with new block tables, lengths and queries."""
    import torch
    kv_scale = 0.02 if cache_dtype != "bfloat16" else 1.0
    q, cache, table, lens = make_case(rng, [300, 5, 1000, 0], 16, hq, 2, "bfloat16", cache_dtype, kv_scale)
    qd, cd, td, ld = (to_device(a, device) for a in (q, cache, table, lens))
    size = aiter.mla_decode_workspace_size(qd, cd, td)
    ws = torch.full((max(size // 4, 1),), float("nan"), device="cuda")
    out = torch.empty(q.shape[:3] + (DV,), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device="cuda")
    aiter.mla_decode(qd, cd, td, ld, 0.05, workspace=ws, out=out, lse=lse, kv_scale=kv_scale)  # warm-up: loads the kernels
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        aiter.mla_decode(qd, cd, td, ld, 0.05, workspace=ws, out=out, lse=lse, kv_scale=kv_scale)
    for _ in range(2):
        new_lens = rng.integers(0, table.shape[1] * 16 + 1, size=4).astype(np.int32)
        new_table = np.ascontiguousarray(np.roll(table, 1, axis=0))
        new_lens = np.minimum(new_lens, [(new_table[b] >= 0).sum() * 16 for b in range(4)]).astype(np.int32)
        new_q = rand(rng, q.shape, "bfloat16")
        td.copy_(to_device(new_table, device)), ld.copy_(to_device(new_lens, device))
        qd.copy_(to_device(new_q, device))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check(on_host(out), on_host(lse), *mla_ref(new_q, cache, new_table, new_lens, 0.05, kv_scale), "bfloat16")


# ---- concat_and_cache_mla -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("cache_dtype", ["same", "float8_e4m3fn", "float8_e4m3fnuz"])
@pytest.mark.parametrize("slot_dtype", [np.int32, np.int64])
def test_concat_and_cache(rng, device, dtype, cache_dtype, slot_dtype):
    """kv_c and k_pe as views into one fused projection output; padding slots."""
    cache_dtype = dtype if cache_dtype == "same" else cache_dtype
    scale = 0.05 if cache_dtype != dtype else 1.0
    tokens, blocks, page = 11, 3, 16
    fused = rand(rng, (tokens, D + 7), dtype, scale=2.0)
    kv_c, k_pe = fused[:, 3:3 + DV], fused[:, 3 + DV:3 + D]
    slots = rng.permutation(blocks * page)[:tokens].astype(slot_dtype)
    slots[[2, 7]] = -1
    start = poisoned((blocks, page, D), "float32").astype(np_dtype(cache_dtype)) if cache_dtype == dtype else \
        np.full((blocks, page, D), 0x7f if "fnuz" not in cache_dtype else 0x80, np.uint8).view(np_dtype(cache_dtype))
    if device == "cpu":
        kv_c_d, k_pe_d, cache_d = kv_c, k_pe, start.copy()
    else:
        import torch
        fused_d = to_device(fused, device)
        kv_c_d, k_pe_d = fused_d[:, 3:3 + DV], fused_d[:, 3 + DV:3 + D]
        cache_d = to_device(start, device)
        assert isinstance(kv_c_d, torch.Tensor)
    got = aiter.concat_and_cache_mla(kv_c_d, k_pe_d, cache_d, to_device(slots, device), scale=scale)
    got = on_host(got)
    want = start.copy().reshape(blocks * page, D)
    rows = np.concatenate([kv_c, k_pe], axis=1)
    keep = slots >= 0
    want[slots[keep]] = rows[keep] if cache_dtype == dtype else fp8_quantize(rows[keep], scale, cache_dtype)
    assert (got.reshape(blocks * page, D).view(np.uint8) == want.view(np.uint8)).all()


def test_concat_and_cache_bad_input(rng):
    kv_c, k_pe = rand(rng, (3, DV), "bfloat16"), rand(rng, (3, 64), "bfloat16")
    cache = np.zeros((2, 4, D), np_dtype("bfloat16"))
    with pytest.raises(aiter.InvalidArgumentError, match=r"slot_mapping\[1\] = 8 is out of range"):
        aiter.concat_and_cache_mla(kv_c, k_pe, cache, np.array([0, 8, -1], np.int32))
    assert not cache.view(np.uint16).any(), "nothing is written"
    with pytest.raises(aiter.UnsupportedShapeError, match="k_pe: dim 32 is not supported"):
        aiter.concat_and_cache_mla(kv_c, k_pe[:, :32], cache, np.array([0, 1, 2], np.int32))
    with pytest.raises(aiter.UnsupportedDtypeError, match="kv_cache"):
        aiter.concat_and_cache_mla(kv_c, k_pe, cache.astype(np.float32), np.array([0, 1, 2], np.int32))
    with pytest.raises(aiter.InvalidArgumentError, match="scale: expected a finite value > 0"):
        aiter.concat_and_cache_mla(kv_c, k_pe, cache.astype(np_dtype("float8_e4m3fn")),
                                   np.array([0, 1, 2], np.int32), scale=0.0)


# ---- bad input ------------------------------------------------------------------------------

def test_decode_bad_input(rng):
    q, cache, table, lens = make_case(rng, [20, 7], 16, 4, 2)
    with pytest.raises(aiter.UnsupportedShapeError, match="q: head dim 512 is not supported"):
        aiter.mla_decode(q[..., :DV].copy(), cache, table, lens, 0.1)
    with pytest.raises(aiter.UnsupportedShapeError, match="kv_cache: latent dim 512"):
        aiter.mla_decode(q, cache[..., :DV].copy(), table, lens, 0.1)
    with pytest.raises(aiter.UnsupportedShapeError, match="q: expected 1 to 4 new tokens"):
        aiter.mla_decode(np.concatenate([q, q, q], axis=1), cache, table, lens, 0.1)
    with pytest.raises(aiter.InvalidArgumentError, match="params.softmax_scale"):
        aiter.mla_decode(q, cache, table, lens, 0.0)
    bad = table.copy()
    bad[1, 0] = cache.shape[0]
    with pytest.raises(aiter.InvalidArgumentError, match=r"block_table\[1, 0\] = .* is out of range"):
        aiter.mla_decode(q, cache, bad, lens, 0.1)
    with pytest.raises(aiter.InvalidArgumentError, match=r"context_lens\[0\] = 9999 is out of range"):
        aiter.mla_decode(q, cache, table, np.array([9999, 7], np.int32), 0.1)
    with pytest.raises(aiter.InvalidArgumentError, match="workspace: 4 bytes are too few"):
        aiter.mla_decode(q, cache, table, lens, 0.1, num_splits=2, workspace=np.zeros(1, np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="num_splits"):
        aiter.mla_decode(q, cache, table, lens, 0.1, num_splits=129)
    with pytest.raises(aiter.UnsupportedDtypeError, match="kv_cache"):
        aiter.mla_decode(q, cache.astype(np.float16), table, lens, 0.1)
    with pytest.raises(aiter.InvalidArgumentError, match="params.kv_scale"):
        aiter.mla_decode(q, cache.astype(np_dtype("float8_e4m3fn")), table, lens, 0.1, kv_scale=-1.0)
    with pytest.raises(aiter.InvalidArgumentError, match="params.lse: expected shape"):
        aiter.mla_decode(q, cache, table, lens, 0.1, lse=np.zeros((2, 2, 5), np.float32))
    buffer = np.zeros(64, np.int32)  # block table and lse in one buffer
    with pytest.raises(aiter.InvalidArgumentError, match="block_table: overlaps the memory of params.lse"):
        aiter.mla_decode(q, cache, buffer[:2 * table.shape[1]].reshape(table.shape), lens, 0.1,
                         lse=buffer[:16].view(np.float32).reshape(2, 2, 4))


# ---- AITER-compatible names ---------------------------------------------------------------

def torch_on(a, device):
    """A NumPy array as a torch tensor on `device` ("cpu" too: the compat names take torch only)."""
    import torch
    a = np.ascontiguousarray(a)
    name = a.dtype.name
    if name == "bfloat16" or name.startswith("float8"):
        raw = torch.from_numpy(a.view(np.uint16 if name == "bfloat16" else np.uint8))
        return raw.view(getattr(torch, name)).to(device)
    return torch.from_numpy(a).to(device)


@pytest.mark.parametrize("s_q", [1, 2])
def test_compat_mla_decode_fwd(rng, device, s_q):
    """AITER's CSR page lists (kv_indptr, kv_indices, kv_last_page_lens) over a
    4-dim kv_buffer; o written in place, the lse returned."""
    torch = pytest.importorskip("torch")
    import aiter.compat as compat
    q, cache, table, lens = make_case(rng, [40, 1, 0, 70], 16, 8, s_q)
    pages = [-(-int(n) // 16) for n in lens]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = np.concatenate([table[b, :n] for b, n in enumerate(pages)] + [[0, 0]]).astype(np.int32)  # spare tail
    last = np.array([(int(n) - 1) % 16 + 1 if n else 0 for n in lens], np.int32)
    qo_indptr = np.arange(0, 5 * s_q, s_q, dtype=np.int32)
    o = torch.full((4 * s_q, 8, DV), float("nan"), dtype=torch.bfloat16, device=device)
    args = [torch_on(a, device) for a in (q.reshape(4 * s_q, 8, D), cache[:, :, None, :])]
    index = [torch_on(a, device) for a in (qo_indptr, indptr, indices, last)]
    got, lse = compat.mla_decode_fwd(args[0], args[1], o, *index, s_q, sm_scale=0.05, return_lse=True)
    assert got is o
    ref, ref_lse = mla_ref(q, cache, table, lens, 0.05)
    check(on_host(o).reshape(ref.shape), on_host(lse).reshape(ref_lse.shape), ref, ref_lse, "bfloat16")
    with pytest.raises(aiter.InvalidArgumentError, match="logit_cap"):
        compat.mla_decode_fwd(args[0], args[1], o, *index, s_q, logit_cap=30.0)


def test_compat_concat_and_cache_mla(rng, device):
    torch = pytest.importorskip("torch")
    import aiter.compat as compat
    kv_c, k_pe = rand(rng, (5, DV), "bfloat16"), rand(rng, (5, 1, 64), "bfloat16")
    cache = torch_on(np.zeros((2, 4, D), np_dtype("bfloat16")), device)
    slots = np.array([7, -1, 0, 3, 5], np.int64)
    assert compat.concat_and_cache_mla(torch_on(kv_c, device), torch_on(k_pe, device), cache,
                                       torch_on(slots, device), "auto", torch.tensor(1.0)) is None
    want = np.zeros((8, D), np_dtype("bfloat16"))
    rows = np.concatenate([kv_c, k_pe[:, 0]], axis=1)
    want[slots[slots >= 0]] = rows[slots >= 0]
    assert (on_host(cache).reshape(8, D).view(np.uint16) == want.view(np.uint16)).all()
