"""Prefill attention, paged decode attention and reshape_and_cache against float64 NumPy.

The references mask keys by the rules of include/aiter/attention.h, written out
directly: query i of a sequence (Lq queries, Lk keys) sits at key position
i + Lk - Lq; causal hides keys after it; window_left >= 0 hides keys more than
window_left positions before it; a query with no visible key gives zeros.
"""
import numpy as np
import pytest

import aiter
from harness import (FLOAT_DTYPES, FP8_DTYPES, assert_close, f64, np_dtype, on_host, poisoned, poisoned_on, rand,
                     to_device)

FP8_MAX = {"float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0, "float8_e5m2": 57344.0}


# ---- references ------------------------------------------------------------------

def attend(q, k, v, visible, scale, softcap=0.0, with_lse=False):
    """q [Lq, Hq, D], k [Lk, Hkv, D], v [Lk, Hkv, Dv], visible [Lq, Lk] bool -> out
    [Lq, Hq, Dv] (and the log-sum-exp [Lq, Hq], -inf for a row with no key)."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) * scale
    if softcap > 0:
        scores = softcap * np.tanh(scores / softcap)
    scores = np.where(visible[None], scores, -np.inf)
    top = scores.max(-1, keepdims=True, initial=-np.inf)
    finite_top = np.where(np.isfinite(top), top, 0.0)
    weights = np.where(visible[None], np.exp(scores - finite_top), 0.0)
    total = weights.sum(-1, keepdims=True)
    out = np.einsum("hqk,khd->qhd", weights / np.where(total > 0, total, 1.0), v)
    if not with_lse:
        return out
    with np.errstate(divide="ignore"):
        lse = np.where(total > 0, finite_top + np.log(total), -np.inf)[..., 0].T
    return out, lse


def visibility(lq, lk, causal, window_left):
    position = np.arange(lq)[:, None] + (lk - lq)
    key = np.arange(lk)[None, :]
    visible = np.ones((lq, lk), bool)
    if causal:
        visible &= key <= position
    if window_left >= 0:
        visible &= position - key <= window_left
    return visible


def prefill_ref(q, k, v, cu_q, cu_k, scale, causal=True, window_left=-1, softcap=0.0, with_lse=False):
    q, k, v = f64(q), f64(k), f64(v)
    out = np.zeros(q.shape[:2] + v.shape[2:])
    lse = np.full(q.shape[:2], -np.inf)
    for b in range(len(cu_q) - 1):
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        visible = visibility(qs.stop - qs.start, ks.stop - ks.start, causal, window_left)
        out[qs], lse[qs] = attend(q[qs], k[ks], v[ks], visible, scale, softcap, with_lse=True)
    return (out, lse) if with_lse else out


def gather_context(cache, table_row, length):
    """The first `length` positions of one sequence from a paged cache (float64)."""
    page = cache.shape[1]
    return np.stack([cache[table_row[t // page], t % page] for t in range(length)]) if length else \
        np.zeros((0,) + cache.shape[2:])


def decode_ref(q, k_cache, v_cache, table, lens, scale, window_left=-1, softcap=0.0):
    """q [B, Hq, D] (one new token a sequence) or [B, Nq, Hq, D] (the last Nq
    positions of each context, causal among themselves)."""
    q, k_cache, v_cache = f64(q), f64(k_cache), f64(v_cache)
    tokens = q if q.ndim == 4 else q[:, None]
    out = np.zeros(tokens.shape)
    for b, length in enumerate(lens):
        k, v = gather_context(k_cache, table[b], length), gather_context(v_cache, table[b], length)
        visible = visibility(tokens.shape[1], length, True, window_left)
        out[b] = attend(tokens[b], k, v, visible, scale, softcap)
    return out if q.ndim == 4 else out[:, 0]


def fp8_quantize(x, scale, dtype):
    """x / scale in float32, saturated, rounded to nearest even (as the cache stores it)."""
    y = np.asarray(x, np.float32) / np.float32(scale)
    return np.clip(y, -FP8_MAX[dtype], FP8_MAX[dtype]).astype(np_dtype(dtype))


# ---- inputs ------------------------------------------------------------------------

def cu_seqlens(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def paged_layout(rng, lens, page_size, spare_blocks=3, spare_columns=2):
    """A block table giving each sequence shuffled blocks; unused entries are -1
    (never read).  Returns (table [B, max_blocks] int32, num_blocks)."""
    pages = [-(-n // page_size) for n in lens]
    num_blocks = sum(pages) + spare_blocks
    ids = rng.permutation(num_blocks).astype(np.int32)
    table = np.full((len(lens), max(pages) + spare_columns), -1, np.int32)
    start = 0
    for b, n in enumerate(pages):
        table[b, :n] = ids[start:start + n]
        start += n
    return table, num_blocks


def slots_of(table, lens, page_size):
    """Slot of every context position of every sequence, in order."""
    return np.array([table[b, t // page_size] * page_size + t % page_size
                     for b, n in enumerate(lens) for t in range(n)], np.int64)


HEADS = [(8, 2, 64), (4, 1, 128), (3, 3, 64)]  # (Hq, Hkv, D): GQA, MQA, MHA


# ---- prefill -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("causal", [True, False])
def test_prefill_varlen(rng, device, dtype, heads, causal):
    hq, hkv, d = heads
    lens = [5, 1, 0, 23, 70]  # 70 keys span two key tiles (three of the GPU's)
    cu = cu_seqlens(lens)
    q, k, v = rand(rng, (cu[-1], hq, d), dtype), rand(rng, (cu[-1], hkv, d), dtype), rand(rng, (cu[-1], hkv, d), dtype)
    out = poisoned_on(q.shape, dtype, device)
    got = aiter.prefill_attention(*(to_device(a, device) for a in (q, k, v, cu)), causal=causal, out=out)
    assert got is out
    assert_close(out, prefill_ref(q, k, v, cu, cu, d ** -0.5, causal), dtype)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("window_left", [0, 3, 40])
def test_prefill_window_and_prefix(rng, device, causal, window_left):
    """Key sequences longer than the queries (a cached prefix), one shorter (its
    first queries see no key when causal), and one with no queries."""
    hq, hkv, d = 4, 2, 64
    lens_q, lens_k = [3, 1, 0, 9, 6, 20], [10, 1, 4, 100, 2, 20]
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q = rand(rng, (cu_q[-1], hq, d), "float32")
    k, v = rand(rng, (cu_k[-1], hkv, d), "float32"), rand(rng, (cu_k[-1], hkv, d), "float32")
    got = aiter.prefill_attention(*(to_device(a, device) for a in (q, k, v, cu_q, cu_k)), causal=causal,
                                  window_left=window_left)
    assert_close(got, prefill_ref(q, k, v, cu_q, cu_k, d ** -0.5, causal, window_left), "float32")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_prefill_views_of_fused_qkv(rng, device, dtype):
    hq, hkv, d = 8, 2, 128
    cu = cu_seqlens([7, 1, 12])
    qkv = rand(rng, (cu[-1], hq + 2 * hkv, d), dtype)
    q, k, v = qkv[:, :hq], qkv[:, hq:hq + hkv], qkv[:, hq + hkv:]
    qkv_dev = to_device(qkv, device)
    out_big = poisoned_on((cu[-1], hq + 1, d), dtype, device)
    out = out_big[:, 1:]  # token stride (hq + 1) * d, head stride d
    aiter.prefill_attention(qkv_dev[:, :hq], qkv_dev[:, hq:hq + hkv], qkv_dev[:, hq + hkv:], to_device(cu, device),
                            out=out, window_left=4)
    assert_close(out, prefill_ref(q, k, v, cu, cu, d ** -0.5, True, 4), dtype)
    assert np.isnan(f64(out_big[:, 0])).all(), "wrote outside the out view"


def test_prefill_scale_and_peaked_scores(rng, device):
    """Logits in the hundreds (exp overflows fp32 without the running max) across
    three key tiles, and an explicit scale in place of 1/sqrt(D).  fp32 logits that
    large carry ~1e-4 absolute error, hence the looser tolerance; a wrong rescale
    between tiles would be off by O(1)."""
    cu = cu_seqlens([150, 2])
    q = rand(rng, (152, 2, 64), "float32", scale=4.0)
    k, v = rand(rng, (152, 1, 64), "float32", scale=4.0), rand(rng, (152, 1, 64), "float32")
    for scale in (0.3, 1.0):
        got = aiter.prefill_attention(*(to_device(a, device) for a in (q, k, v, cu)), softmax_scale=scale)
        assert_close(got, prefill_ref(q, k, v, cu, cu, scale), "float32", rtol=1e-3, atol=1e-3)


# ---- paged decode -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("page_size", [1, 5, 16])
@pytest.mark.parametrize("window_left,heads", [(-1, (8, 2, 128)), (7, (4, 1, 64))])
def test_decode(rng, device, dtype, page_size, window_left, heads):
    hq, hkv, d = heads
    lens = np.array([0, 1, 37, 16, 80], np.int32)
    table, num_blocks = paged_layout(rng, lens, page_size)
    wide = np.full((len(lens), table.shape[1] + 3), 12345, np.int32)
    wide[:, :table.shape[1]] = table
    table = wide[:, :table.shape[1]]  # a row stride larger than max_blocks
    k_cache = rand(rng, (num_blocks, page_size, hkv, d), dtype)
    v_cache = rand(rng, (num_blocks, page_size, hkv, d), dtype)
    q_wide = rand(rng, (len(lens), hq + 1, d), dtype)
    q = q_wide[:, 1:]
    out = poisoned_on((len(lens), hq, d), dtype, device)
    table_dev = to_device(wide, device)[:, :table.shape[1]]
    aiter.paged_decode_attention(to_device(q_wide, device)[:, 1:], to_device(k_cache, device),
                                 to_device(v_cache, device), table_dev, to_device(lens, device),
                                 window_left=window_left, out=out)
    assert_close(out, decode_ref(q, k_cache, v_cache, table, lens, d ** -0.5, window_left), dtype)
    assert (f64(out[0]) == 0).all(), "a context of 0 gives zeros"


@pytest.mark.parametrize("cache_dtype", FP8_DTYPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fp8_cache_write_then_decode(rng, device, cache_dtype, dtype):
    """The cache written on `device`, then read by decode (on `device` too)."""
    hq, hkv, d, page_size = 8, 2, 64, 5
    lens = np.array([12, 0, 3, 21], np.int32)
    table, num_blocks = paged_layout(rng, lens, page_size)
    slots = slots_of(table, lens, page_size)
    k_scale, v_scale = 0.01, 0.02
    # Some keys beyond the format's range: they saturate.
    key = rand(rng, (len(slots), hkv, d), dtype, scale=FP8_MAX[cache_dtype] * k_scale / 2)
    value = rand(rng, (len(slots), hkv, d), dtype)
    k_dev = to_device(np.zeros((num_blocks, page_size, hkv, d), np_dtype(cache_dtype)), device)
    v_dev = to_device(np.zeros((num_blocks, page_size, hkv, d), np_dtype(cache_dtype)), device)
    got = aiter.reshape_and_cache(to_device(key, device), to_device(value, device), k_dev, v_dev,
                                  to_device(slots, device), k_scale=k_scale, v_scale=v_scale)
    assert got[0] is k_dev and got[1] is v_dev
    k_cache, v_cache = on_host(k_dev), on_host(v_dev)
    flat_k = k_cache.reshape(-1, hkv, d)
    flat_v = v_cache.reshape(-1, hkv, d)
    np.testing.assert_array_equal(f64(flat_k[slots]), f64(fp8_quantize(key, k_scale, cache_dtype)))
    np.testing.assert_array_equal(f64(flat_v[slots]), f64(fp8_quantize(value, v_scale, cache_dtype)))
    assert np.abs(f64(flat_k[slots])).max() == FP8_MAX[cache_dtype]

    q = rand(rng, (len(lens), hq, d), dtype)
    out = aiter.paged_decode_attention(to_device(q, device), k_dev, v_dev, to_device(table, device),
                                       to_device(lens, device), k_scale=k_scale, v_scale=v_scale, softmax_scale=0.05)
    ref = decode_ref(q, f64(k_cache) * k_scale, f64(v_cache) * v_scale, table, lens, 0.05)
    assert_close(out, ref, dtype, rtol=1e-4 if dtype == "float32" else None, atol=1e-4 if dtype == "float32" else None)


# ---- reshape_and_cache ------------------------------------------------------------

# (Hkv, D, skew): key and value are views of one fused [T, 2 * Hkv * D + skew]
# buffer starting `skew` elements in.  skew 0: 16-byte aligned rows (the GPU's
# vector path); skew 1: odd strides and an odd start (its scalar path).  The
# last two have more (head, chunk) items per token than one GPU block holds.
LAYOUTS = [(2, 128, 0), (5, 64, 1), (33, 128, 0)]


def fused_key_value(buffer, hkv, d, skew):
    """key, value [T, Hkv, D] as views into buffer [T, 2 * Hkv * D + skew]."""
    kv = buffer[:, skew:].reshape(buffer.shape[0], 2 * hkv, d)
    return kv[:, :hkv], kv[:, hkv:]


def cache_write_case(rng, device, dtype, cache_dtype, slots, layout, num_blocks=3, page_size=5, scale=1.0):
    """Writes T = len(slots) fresh tokens on `device` into poisoned caches; returns
    (host key, host value, host k_cache, host v_cache) with the caches flattened
    to [num_slots, Hkv, D]."""
    hkv, d, skew = layout
    buffer = rand(rng, (len(slots), 2 * hkv * d + skew), dtype, scale=scale)
    key, value = fused_key_value(to_device(buffer, device), hkv, d, skew)  # views made on the device
    shape = (num_blocks, page_size, hkv, d)
    k_cache, v_cache = poisoned_on(shape, cache_dtype, device), poisoned_on(shape, cache_dtype, device)
    aiter.reshape_and_cache(key, value, k_cache, v_cache, to_device(slots, device), k_scale=0.5, v_scale=0.25)
    flat = (num_blocks * page_size, hkv, d)
    return (*fused_key_value(buffer, hkv, d, skew), on_host(k_cache).reshape(flat), on_host(v_cache).reshape(flat))


def check_cache_rows(cache, src, slots, stored_as):
    """Rows slots[t] >= 0 hold stored_as(src[t]) bit for bit; all other rows stay poisoned (NaN)."""
    written = (slots >= 0) & (slots < cache.shape[0])
    np.testing.assert_array_equal(f64(cache[slots[written]]), f64(stored_as(src[written])))
    untouched = np.setdiff1d(np.arange(cache.shape[0]), slots[written])
    assert np.isnan(f64(cache[untouched])).all(), "a slot nobody maps to was written"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("slot_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_reshape_and_cache_skips_negative_slots(rng, device, dtype, slot_dtype, layout):
    slots = np.array([7, -1, 0, 13, -5, 2, 14], slot_dtype)
    key, value, k_cache, v_cache = cache_write_case(rng, device, dtype, dtype, slots, layout)
    check_cache_rows(k_cache, key, slots, lambda x: x)
    check_cache_rows(v_cache, value, slots, lambda x: x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", [(8, 128, 0), (33, 128, 0), (8, 128, 1)])
def test_reshape_and_cache_many_tokens(rng, device, dtype, layout):
    """Many tokens, many blocks: a permutation of most of the cache's slots."""
    num_blocks, page_size = 200, 16
    slots = rng.permutation(num_blocks * page_size)[:1500].astype(np.int64)
    slots[::7] = -1
    key, value, k_cache, v_cache = cache_write_case(rng, device, dtype, dtype, slots, layout, num_blocks, page_size)
    check_cache_rows(k_cache, key, slots, lambda x: x)
    check_cache_rows(v_cache, value, slots, lambda x: x)


@pytest.mark.parametrize("cache_dtype", FP8_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_reshape_and_cache_fp8(rng, device, cache_dtype, dtype, layout):
    """x / scale rounded to nearest even and saturated, bit for bit (k_scale 0.5,
    v_scale 0.25); some keys beyond the format's range."""
    slots = np.array([3, 11, -1, 0, 14], np.int64)
    key, value, k_cache, v_cache = cache_write_case(rng, device, dtype, cache_dtype, slots, layout,
                                                    scale=FP8_MAX[cache_dtype] / 4)
    check_cache_rows(k_cache, key, slots, lambda x: fp8_quantize(x, 0.5, cache_dtype))
    check_cache_rows(v_cache, value, slots, lambda x: fp8_quantize(x, 0.25, cache_dtype))
    assert np.abs(f64(v_cache[slots[slots >= 0]])).max() == FP8_MAX[cache_dtype], "nothing saturated"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,cache_dtype", [("bfloat16", "bfloat16"), ("float32", "float8_e4m3fn")])
@pytest.mark.parametrize("slot_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_reshape_and_cache_gpu_skips_out_of_range_slots(rng, dtype, cache_dtype, slot_dtype, layout):
    """On the GPU the host cannot read the slots: a token whose slot is past the
    cache is skipped like a padding token, the others are written."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    info = np.iinfo(slot_dtype)
    slots = np.array([4, 15, -1, info.max, 0, info.min, 14, 16], slot_dtype)  # 15 = num_slots
    key, value, k_cache, v_cache = cache_write_case(rng, "cuda", dtype, cache_dtype, slots, layout)
    stored_as = (lambda x: x) if cache_dtype == dtype else (lambda x: fp8_quantize(x, 0.5, cache_dtype))
    check_cache_rows(k_cache, key, slots, stored_as)
    stored_as = (lambda x: x) if cache_dtype == dtype else (lambda x: fp8_quantize(x, 0.25, cache_dtype))
    check_cache_rows(v_cache, value, slots, stored_as)


# ---- bad arguments --------------------------------------------------------------------

def prefill_inputs(rng, hq=4, hkv=2, d=64, lens=(3, 4)):
    cu = cu_seqlens(lens)
    return (rand(rng, (cu[-1], hq, d), "float32"), rand(rng, (cu[-1], hkv, d), "float32"),
            rand(rng, (cu[-1], hkv, d), "float32"), cu)


def test_prefill_rejects_bad_arguments(rng):
    q, k, v, cu = prefill_inputs(rng)
    out = poisoned(q.shape, "float32")
    with pytest.raises(aiter.InvalidArgumentError, match="multiple of the 3 kv heads"):
        aiter.prefill_attention(q, *prefill_inputs(rng, hkv=3)[1:3], cu, out=out)
    with pytest.raises(aiter.UnsupportedShapeError, match="head dim 96"):
        aiter.prefill_attention(*prefill_inputs(rng, d=96))
    for bad, message in (([1, 3, 7], r"cu_seqlens_q\[0\] == 0, got 1"),
                         ([0, 5, 4], "non-decreasing"),
                         ([0, 3, 6], r"last value == 7 \(q.shape\[0\]\), got 6")):
        with pytest.raises(aiter.InvalidArgumentError, match=message):
            aiter.prefill_attention(q, k, v, np.array(bad, np.int32), cu, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match=r"last value == 7 \(k.shape\[0\]\), got 9"):
        aiter.prefill_attention(q, k, v, cu, np.array([0, 3, 9], np.int32), out=out)
    with pytest.raises(aiter.UnsupportedDtypeError, match="cu_seqlens_q: expected dtype int32"):
        aiter.prefill_attention(q, k, v, cu.astype(np.int64), out=out)
    with pytest.raises(aiter.UnsupportedDtypeError, match="v: expected the dtype of q"):
        aiter.prefill_attention(q, k, v.astype(np.float16), cu, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match="softmax_scale"):
        aiter.prefill_attention(q, k, v, cu, softmax_scale=-0.1, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match="softmax_scale"):
        aiter.prefill_attention(q, k, v, cu, softmax_scale=float("nan"), out=out)
    with pytest.raises(aiter.InvalidArgumentError, match="q: expected unit stride"):
        aiter.prefill_attention(rand(rng, (7, 4, 128), "float32")[:, :, ::2], k, v, cu, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match="window_left"):
        aiter.prefill_attention(q, k, v, cu, window_left=2 ** 31, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match=r"out: expected shape\[2\] == 64 \(the head dim of v\)"):
        aiter.prefill_attention(q, k, v, cu, out=poisoned((7, 4, 128), "float32"))
    assert np.isnan(out).all(), "a rejected call wrote to out"


def decode_inputs(rng, lens=(4, 9), page_size=4, cache_dtype="float32"):
    lens = np.array(lens, np.int32)
    table, num_blocks = paged_layout(rng, lens, page_size, spare_columns=0)
    k_cache = rand(rng, (num_blocks, page_size, 2, 64), "float32").astype(np_dtype(cache_dtype))
    v_cache = rand(rng, (num_blocks, page_size, 2, 64), "float32").astype(np_dtype(cache_dtype))
    return rand(rng, (len(lens), 4, 64), "float32"), k_cache, v_cache, table, lens


def test_decode_rejects_bad_arguments(rng):
    q, k_cache, v_cache, table, lens = decode_inputs(rng)  # table [2, 3], 6 blocks of 4
    out = poisoned(q.shape, "float32")
    with pytest.raises(aiter.InvalidArgumentError, match=r"context_lens\[1\] = 13 is out of range"):
        aiter.paged_decode_attention(q, k_cache, v_cache, table, np.array([4, 13], np.int32), out=out)
    with pytest.raises(aiter.InvalidArgumentError, match=r"context_lens\[0\] = -1 is out of range"):
        aiter.paged_decode_attention(q, k_cache, v_cache, table, np.array([-1, 9], np.int32), out=out)
    for bad_id in (k_cache.shape[0], -1):
        bad_table = table.copy()
        bad_table[1, 2] = bad_id
        with pytest.raises(aiter.InvalidArgumentError, match=rf"block_table\[1, 2\] = {bad_id} is out of range"):
            aiter.paged_decode_attention(q, k_cache, v_cache, bad_table, lens, out=out)
    with pytest.raises(aiter.UnsupportedDtypeError, match="k_cache: expected dtype float32, float8"):
        aiter.paged_decode_attention(q, k_cache.astype(np.float16), v_cache.astype(np.float16), table, lens, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match="k_cache: expected a compact"):
        aiter.paged_decode_attention(q, k_cache[:, ::2], v_cache[:, ::2], table, lens, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match="multiple of the 3 kv heads"):
        aiter.paged_decode_attention(q, k_cache[:, :, :1].repeat(3, 2), v_cache[:, :, :1].repeat(3, 2),
                                     table, lens, out=out)
    _, k8, v8, _, _ = decode_inputs(rng, cache_dtype="float8_e4m3fn")
    with pytest.raises(aiter.InvalidArgumentError, match="params.k_scale"):
        aiter.paged_decode_attention(q, k8, v8, table, lens, k_scale=0.0, out=out)
    with pytest.raises(aiter.InvalidArgumentError, match="params.v_scale"):
        aiter.paged_decode_attention(q, k8, v8, table, lens, v_scale=float("inf"), out=out)
    assert np.isnan(out).all(), "a rejected call wrote to out"


def test_reshape_and_cache_rejects_bad_arguments(rng):
    key, value = rand(rng, (3, 2, 64), "float32"), rand(rng, (3, 2, 64), "float32")
    k_cache, v_cache = poisoned((2, 4, 2, 64), "float32"), poisoned((2, 4, 2, 64), "float32")
    with pytest.raises(aiter.InvalidArgumentError, match=r"slot_mapping\[2\] = 8 is out of range"):
        aiter.reshape_and_cache(key, value, k_cache, v_cache, np.array([0, 1, 8], np.int32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"slot_mapping\[0\] = 4294967296 is out of range"):
        aiter.reshape_and_cache(key, value, k_cache, v_cache, np.array([2 ** 32, 1, 2], np.int64))
    with pytest.raises(aiter.InvalidArgumentError, match="slot_mapping: expected shape"):
        aiter.reshape_and_cache(key, value, k_cache, v_cache, np.array([0, 1], np.int32))
    with pytest.raises(aiter.InvalidArgumentError, match="k_cache: expected shape"):
        aiter.reshape_and_cache(key[:, :1], value[:, :1], k_cache, v_cache, np.array([0, 1, 2], np.int32))
    k8, v8 = (np.zeros((2, 4, 2, 64), np_dtype("float8_e5m2")) for _ in range(2))
    with pytest.raises(aiter.InvalidArgumentError, match="k_scale"):
        aiter.reshape_and_cache(key, value, k8, v8, np.array([0, 1, 2], np.int32), k_scale=-1.0)
    assert np.isnan(k_cache).all() and np.isnan(v_cache).all(), "a rejected call wrote to the cache"
    assert not f64(k8).any() and not f64(v8).any(), "a rejected call wrote to the fp8 cache"
