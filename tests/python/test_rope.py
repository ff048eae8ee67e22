"""Rotary position embedding (NeoX and GPT-J) against float64 NumPy, on the CPU
and (where one is present) on a CUDA GPU."""
import numpy as np
import pytest

import aiter
import harness
from gemm_helpers import ISA_LEVELS, run_at_isa_level
from harness import FLOAT_DTYPES, assert_close, f64, jax_cpu, np_dtype, on_host, rand, to_device

STYLES = ["neox", "gptj"]


def reference_cache(max_pos, rotary, base=10000.0):
    """cos then sin of p * base^(-2i/R), i < R/2, in float64."""
    freq = np.power(base, -2.0 * np.arange(rotary // 2) / rotary)
    angle = np.arange(max_pos, dtype=np.float64)[:, None] * freq[None, :]
    return np.hstack([np.cos(angle), np.sin(angle)])


def rope_ref(x, positions, cache, style):
    """x [T, H, D] float64 rotated by cache rows `positions` (a float64 copy)."""
    half = cache.shape[1] // 2
    cos = cache[positions, :half][:, None, :]
    sin = cache[positions, half:][:, None, :]
    first = np.arange(half) if style == "neox" else np.arange(0, 2 * half, 2)
    second = first + half if style == "neox" else first + 1
    out = x.copy()
    x1, x2 = x[..., first], x[..., second]
    out[..., first] = x1 * cos - x2 * sin
    out[..., second] = x2 * cos + x1 * sin
    return out


def make_cache(max_pos, rotary, dtype):
    return reference_cache(max_pos, rotary).astype(np_dtype(dtype))


def positions_for(rng, tokens, max_pos, dtype):
    return rng.integers(0, max_pos, size=tokens).astype(dtype)


def check_rotated(after, before, positions, cache, style, dtype, what):
    """Rotated first R elements, the rest bit-identical to the input (host arrays)."""
    rotary = cache.shape[1]
    ref = rope_ref(f64(before), np.asarray(positions), f64(cache), style)
    assert_close(after, ref, dtype, what=what)
    assert np.array_equal(np.asarray(after)[..., rotary:], np.asarray(before)[..., rotary:]), \
        f"{what}: elements past the rotary dim changed"


def require_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


# (T, Hq, Hk, D, R): single token, full rotary, partial rotary, odd sizes, and
# more (head, pair) items per token than one GPU block holds.  On the GPU the
# first two and the last take the 16-byte path, the third for fp32 only.
SHAPES = [(1, 1, 1, 64, 64), (7, 4, 2, 128, 128), (111, 3, 1, 40, 24), (20, 5, 5, 18, 2), (3, 64, 8, 128, 128)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("pos_dtype", ["int32", "int64"])
def test_rope(rng, device, dtype, style, shape, pos_dtype):
    tokens, hq, hk, dim, rotary = shape
    q0, k0 = rand(rng, (tokens, hq, dim), dtype), rand(rng, (tokens, hk, dim), dtype)
    # The cache in q's dtype for one position dtype, fp32 for the other.
    cache = make_cache(300, rotary, dtype if pos_dtype == "int32" else "float32")
    pos = positions_for(rng, tokens, 300, pos_dtype)
    q, k = to_device(q0.copy(), device), to_device(k0.copy(), device)
    q_out, k_out = aiter.rope(q, k, to_device(pos, device), to_device(cache, device), style=style)
    assert q_out is q and k_out is k
    check_rotated(on_host(q), q0, pos, cache, style, dtype, "q")
    check_rotated(on_host(k), k0, pos, cache, style, dtype, "k")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("skew", [0, 1])
def test_rope_fused_qkv_views(rng, device, dtype, style, skew):
    """q and k as strided views into one [T, (Hq + 2Hk) * D] buffer; v and the
    columns past the rotary dim stay bit-identical.  skew = 1 starts the heads
    one element into rows of odd length: no 16-byte alignment anywhere."""
    tokens, hq, hk, dim, rotary = 37, 4, 2, 64, 32
    width = (hq + 2 * hk) * dim
    before = rand(rng, (tokens, width + skew), dtype)
    buffer = to_device(before.copy(), device)  # the views are taken on the device
    heads = buffer[:, skew:].reshape(tokens, hq + 2 * hk, dim)
    q, k = heads[:, :hq], heads[:, hq:hq + hk]
    cache = make_cache(64, rotary, dtype)
    pos = positions_for(rng, tokens, 64, "int64")
    aiter.rope(q, k, to_device(pos, device), to_device(cache, device), style=style)
    after = on_host(buffer)  # read through the buffer: the views were written in place
    assert np.array_equal(after[:, :skew], before[:, :skew]), "the skew column changed"
    after, ref = after[:, skew:].reshape(tokens, hq + 2 * hk, dim), before[:, skew:].reshape(tokens, hq + 2 * hk, dim)
    check_rotated(after[:, :hq], ref[:, :hq], pos, cache, style, dtype, "q")
    check_rotated(after[:, hq:hq + hk], ref[:, hq:hq + hk], pos, cache, style, dtype, "k")
    assert np.array_equal(after[:, hq + hk:], ref[:, hq + hk:]), "v changed"


def test_rope_head_major_layout_and_strided_positions(rng, device):
    """q stored [H, T, D] and seen as [T, H, D] (token stride < head stride);
    positions every other element of an int64 buffer."""
    tokens, heads, dim = 9, 3, 16
    q_heads_first = rand(rng, (heads, tokens, dim), "float32")
    q0 = q_heads_first.swapaxes(0, 1).copy()
    q = to_device(q_heads_first.copy(), device).swapaxes(0, 1)
    cache = make_cache(10, dim, "float32")
    pos_buffer = np.full(2 * tokens, 10**9, dtype=np.int64)  # the odd elements are out of range
    pos_buffer[::2] = rng.integers(0, 10, size=tokens)
    q_out, k_out = aiter.rope(q, None, to_device(pos_buffer, device)[::2], to_device(cache, device))
    assert q_out is q and k_out is None
    check_rotated(on_host(q), q0, pos_buffer[::2], cache, "neox", "float32", "q")


@pytest.mark.parametrize("bad", [10, -1, 2**40])
def test_rope_rejects_out_of_range_positions_before_writing(rng, bad):
    tokens = 7
    q, k = rand(rng, (tokens, 2, 8), "float32"), rand(rng, (tokens, 1, 8), "float32")
    q0, k0 = q.copy(), k.copy()
    pos = rng.integers(0, 10, size=tokens).astype(np.int64)
    pos[tokens - 1] = bad  # the last token: earlier tokens would be rotated first
    with pytest.raises(aiter.InvalidArgumentError, match=f"positions: value {bad} at index {tokens - 1} "
                                                         r"is out of range \[0, 10\)"):
        aiter.rope(q, k, pos, make_cache(10, 8, "float32"))
    assert np.array_equal(q, q0) and np.array_equal(k, k0)
    if bad < 2**31:
        with pytest.raises(aiter.InvalidArgumentError, match=f"value {bad} at index {tokens - 1}"):
            aiter.rope(q, k, pos.astype(np.int32), make_cache(10, 8, "float32"), style="gptj")
        assert np.array_equal(q, q0) and np.array_equal(k, k0)


def test_rope_empty_tokens(rng, device):
    q, k = np.empty((0, 2, 8), np.float16), np.empty((0, 1, 8), np.float16)
    aiter.rope(to_device(q, device), to_device(k, device), to_device(np.empty(0, np.int32), device),
               to_device(make_cache(0, 8, "float16"), device))


def test_rope_torch_in_place(rng, device):
    torch = pytest.importorskip("torch")
    q = torch.from_numpy(rand(rng, (5, 2, 32), "float32")).to(torch.bfloat16).to(device)
    q0 = q.clone()
    cache = torch.from_numpy(make_cache(16, 32, "float32")).to(device)
    pos = torch.randint(0, 16, (5,), dtype=torch.int64).to(device)
    q_out, k_out = aiter.rope(q, None, pos, cache, style="gptj")
    assert q_out is q and k_out is None
    ref = rope_ref(f64(q0), pos.cpu().numpy(), f64(cache), "gptj")
    assert_close(q, ref, "bfloat16")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,dim", [("bfloat16", 128), ("float32", 18)])  # 16-byte path, scalar path
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("pos_dtype", ["int32", "int64"])
def test_rope_gpu_leaves_tokens_with_out_of_range_positions_untouched(rng, dtype, dim, style, pos_dtype):
    """On the GPU the host cannot read the positions: a token whose position is
    out of range keeps its q and k rows bit for bit, the others are rotated."""
    require_gpu()
    tokens, hq, hk, max_pos = 9, 4, 2, 50
    q0, k0 = rand(rng, (tokens, hq, dim), dtype), rand(rng, (tokens, hk, dim), dtype)
    cache = make_cache(max_pos, dim, "float32")
    pos = positions_for(rng, tokens, max_pos, pos_dtype)
    bad = [max_pos, -1, np.iinfo(pos_dtype).max, np.iinfo(pos_dtype).min]
    skipped = np.array([1, 4, 5, 8])
    pos[skipped] = bad
    q, k = to_device(q0.copy(), "cuda"), to_device(k0.copy(), "cuda")
    aiter.rope(q, k, to_device(pos, "cuda"), to_device(cache, "cuda"), style=style)
    ok = np.setdiff1d(np.arange(tokens), skipped)
    for after, before, what in ((on_host(q), q0, "q"), (on_host(k), k0, "k")):
        assert np.array_equal(after[skipped], before[skipped]), f"{what}: a token with a bad position changed"
        check_rotated(after[ok], before[ok], pos[ok], cache, style, dtype, what)


def test_rope_jax_returns_new_arrays(rng):
    pytest.importorskip("jax")
    q_np, k_np = rand(rng, (6, 2, 16), "float32"), rand(rng, (6, 1, 16), "float32")
    q, k = jax_cpu(q_np), jax_cpu(k_np)
    cache, pos = make_cache(8, 16, "float32"), rng.integers(0, 8, size=6).astype(np.int32)
    q_new, k_new = aiter.rope(q, k, jax_cpu(pos), jax_cpu(cache))
    assert np.array_equal(np.asarray(q), q_np), "the input JAX array changed"
    assert_close(q_new, rope_ref(f64(q_np), pos, f64(cache), "neox"), "float32", what="q")
    assert_close(k_new, rope_ref(f64(k_np), pos, f64(cache), "neox"), "float32", what="k")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rope_cos_sin_cache_helper(dtype):
    got = aiter.rope_cos_sin_cache(50, 24, base=5000.0, dtype=dtype)
    assert got.shape == (50, 24) and got.dtype == np_dtype(dtype)
    assert_close(got, reference_cache(50, 24, base=5000.0), dtype)
    with pytest.raises(aiter.InvalidArgumentError, match="rotary_dim"):
        aiter.rope_cos_sin_cache(50, 7)
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype"):
        aiter.rope_cos_sin_cache(50, 8, dtype="int32")


def test_rope_rejects_bad_arguments(rng):
    q, k = rand(rng, (4, 2, 16), "float32"), rand(rng, (4, 1, 16), "float32")
    pos, cache = np.zeros(4, np.int32), make_cache(8, 16, "float32")
    q0 = q.copy()
    cases = [
        (aiter.InvalidArgumentError, "style: expected 'neox' or 'gptj'", dict(style="rope")),
        (aiter.InvalidArgumentError, "even rotary dim", dict(cos_sin_cache=make_cache(8, 16, "float32")[:, :15].copy())),
        (aiter.InvalidArgumentError, "rotary dim 18 .* exceeds the head dim 16",
         dict(cos_sin_cache=np.zeros((8, 18), np.float32))),
        (aiter.InvalidArgumentError, "cos_sin_cache: expected a compact", dict(cos_sin_cache=np.zeros((8, 32), np.float32)[:, :16])),
        (aiter.UnsupportedDtypeError, "cos_sin_cache: expected dtype", dict(cos_sin_cache=cache.astype(np.float16))),
        (aiter.UnsupportedDtypeError, "k: expected the dtype of q", dict(k=k.astype(np.float16))),
        (aiter.UnsupportedDtypeError, "positions: expected dtype int32, int64", dict(positions=pos.astype(np.float32))),
        (aiter.InvalidArgumentError, "positions: expected shape\\[0\\] == 4", dict(positions=np.zeros(5, np.int32))),
        (aiter.InvalidArgumentError, "k: expected shape\\[0\\] == 4", dict(k=k[:3])),
        (aiter.InvalidArgumentError, "q: expected 3 dims", dict(q=q.reshape(4, 32))),
        (aiter.InvalidArgumentError, "q: expected unit stride", dict(q=rand(rng, (4, 2, 32), "float32")[..., ::2])),
        (aiter.InvalidArgumentError, "q: rows overlap",
         dict(q=np.lib.stride_tricks.as_strided(q, shape=(4, 2, 16), strides=(128, 0, 4)))),
    ]
    for error, message, change in cases:
        args = dict(q=q, k=k, positions=pos, cos_sin_cache=cache, style="neox")
        args.update(change)
        with pytest.raises(error, match=message):
            aiter.rope(**args)
    assert np.array_equal(q, q0)


# ---- every instruction-set level of the CPU kernels -----------------------------------
# AITER_CPU_ISA is read once per process, so each level runs in its own: the
# loops (portable, avx2) and the AVX-512 NeoX rows (avx512 and up; GPT-J stays
# on the loops) on the cases above: vector tails, partial rotary, strided views.
ISA_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import aiter
import test_rope as t
assert aiter.library_info()["cpu_isa"].split()[0] == sys.argv[2]
rng = np.random.default_rng(int(sys.argv[4]))
for dtype in sys.argv[3].split(","):
    for style in t.STYLES:
        for shape in t.SHAPES:
            t.test_rope(rng, "cpu", dtype, style, shape, "int64")
        t.test_rope_fused_qkv_views(rng, "cpu", dtype, style, 1)
print("ok")
"""


@pytest.mark.parametrize("level", ISA_LEVELS)
def test_every_isa_level(level):
    # bfloat16 arrays need ml_dtypes, which some distributions (Debian) lack.
    run_at_isa_level(level, ISA_SCRIPT, FLOAT_DTYPES if harness.ml_dtypes is not None else ["float32", "float16"])
