"""Every GPU GEMM kernel variant, forced one at a time, against float64 NumPy:
out = (a @ w.T) * scales + bias, on shapes each variant is meant to handle
(ragged N, K with a tail, M at and around the variant's tile edges)."""
import numpy as np
import pytest

import aiter
from harness import TOLERANCE, assert_close, f64, on_host, poisoned_on, rand, to_device

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

NAME = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "i8": "int8", "e4m3fn": "float8_e4m3fn",
        "e4m3fnuz": "float8_e4m3fnuz", "e5m2": "float8_e5m2"}
CUDA = "cuda"


def variants(op):
    # The Triton kernels assume K and strides in multiples of 16: test_gemm_triton.py;
    # the vendor BLAS variants are tested in test_gemm_vendor.py
    return [v for v in aiter.tuning.variants(op, device=CUDA)
            if not v.startswith(("triton_", "cublaslt.", "hipblaslt."))]


@pytest.fixture
def own_kernels_only(monkeypatch):
    """The heuristic among libaiter's own kernels: the vendor BLAS switched off."""
    monkeypatch.setenv("AITER_VENDOR_BLAS", "0")
    aiter.tuning.reload()
    yield
    monkeypatch.delenv("AITER_VENDOR_BLAS")
    aiter.tuning.reload()


def forced(op, variant):
    return aiter.tuning.force_variant(op, variant)


def dtype_of(variant):
    return NAME[variant.split(".")[1]]


def sizes_for(variant, itemsize):
    """(M values, N, K) that exercise a variant: its token or row tile edges,
    N not a multiple of 16, K a multiple of 16 bytes with a tail."""
    family = variant.split(".")[0]
    k = 528 if itemsize == 1 else 520
    if family == "skinny":
        tokens = 8 * int(variant.split(".t")[1].split(".")[0])
        return [1, tokens - 3, tokens], 200, k
    if family in ("tiled", "wgmma"):
        bm = int(variant.split(".")[2].split("x")[0])
        return [bm - 5, bm + 3, 2 * bm + 17], 200, k
    if family == "wgmma_ws":  # persistent blocks: 1500 x 3000 has more tiles than an H100 has blocks
        return [7, 123, 273, 1500], 3000, k
    return [1, 7, 70], 33, 13  # any shape, any alignment


def quantized(rng, shape, dtype):
    if dtype == "int8":
        return rng.integers(-128, 128, size=shape, dtype=np.int8)
    return rand(rng, shape, dtype, scale=2.0)


# Hopper's fp8 wgmma sums its products with fewer mantissa bits than fp32 (the
# reason DeepSeek-V3 promotes partial sums every 128 K; measured here: ~1e-4
# relative), so an fp32 output of those kernels is held to 1e-3.
FP8_TENSOR_SUMS = (1e-3, 1e-3)


def check(out, ref, out_dtype, k, magnitude, tolerance=None):
    rtol, atol = tolerance or TOLERANCE[out_dtype]
    assert_close(out, ref, out_dtype, rtol=rtol, atol=atol * np.sqrt(k) * magnitude)


def ran(variant):
    op, name, how = aiter.tuning.last_variant()
    assert (name, how) == (variant, 2), f"expected the forced {variant}, ran {name} (how {how})"


@pytest.mark.parametrize("variant", variants("gemm_a16w16"))
@pytest.mark.parametrize("out_dtype", ["bfloat16", "float32"])
def test_a16w16_variant(rng, variant, out_dtype):
    dtype = dtype_of(variant)
    ms, n, k = sizes_for(variant, 2 if dtype != "float32" else 4)
    for m in ms:
        a, w, bias = rand(rng, (m, k), dtype), rand(rng, (n, k), dtype), rand(rng, (n,), "float32")
        out = poisoned_on((m, n), out_dtype, CUDA)
        with forced("gemm_a16w16", variant):
            aiter.gemm_a16w16(to_device(a, CUDA), to_device(w, CUDA), to_device(bias, CUDA), out=out)
            ran(variant)
        check(on_host(out), f64(a) @ f64(w).T + f64(bias), out_dtype, k, 1.0)


@pytest.mark.parametrize("variant", variants("gemm_a8w8"))
@pytest.mark.parametrize("per_token", [True, False])
def test_a8w8_variant(rng, variant, per_token):
    dtype = dtype_of(variant)
    ms, n, k = sizes_for(variant, 1)
    for m in ms:
        a, w = quantized(rng, (m, k), dtype), quantized(rng, (n, k), dtype)
        a_scale = (rng.random((m, 1) if per_token else (1,)) + 0.5).astype(np.float32) / 64
        w_scale = (rng.random((1, n) if per_token else (1,)) + 0.5).astype(np.float32) / 64
        out = poisoned_on((m, n), "bfloat16", CUDA)
        with forced("gemm_a8w8", variant):
            aiter.gemm_a8w8(*(to_device(x, CUDA) for x in (a, w, a_scale, w_scale)), out=out)
            ran(variant)
        ref = (f64(a) @ f64(w).T) * f64(a_scale).reshape(-1, 1) * f64(w_scale).reshape(1, -1)
        magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) / 64 / 64 * 4
        check(on_host(out), ref, "bfloat16", k, magnitude)


@pytest.mark.parametrize("variant", [v for v in variants("gemm_a8w8") if v.endswith(".fp32sum")])
def test_fp32_sums_keep_long_k_precise(rng, variant):
    """fp8 sums added into fp32 every 512 K: at K = 16384 the error stays near the
    bf16 output's rounding (plain wgmma sums reach ~1e-2 of max |out| at K =
    14336-28672, docs/tune_logs/a8w8_tuning_*.log)."""
    m, n, k = 64, 256, 16384
    a, w = quantized(rng, (m, k), "float8_e4m3fn"), quantized(rng, (n, k), "float8_e4m3fn")
    one = np.ones((1,), np.float32)
    out = poisoned_on((m, n), "bfloat16", CUDA)
    with forced("gemm_a8w8", variant):
        aiter.gemm_a8w8(*(to_device(x, CUDA) for x in (a, w, one, one)), out=out)
        ran(variant)
    ref = f64(a) @ f64(w).T
    error = np.abs(f64(on_host(out)) - ref).max() / np.abs(ref).max()
    assert error < 4e-3, f"max error {error:.3g} of max |out|"


def blockscale_reference(a, w, a_scale, w_scale):
    m, k = a.shape
    n = w.shape[0]
    out = np.zeros((m, n))
    for g in range(a_scale.shape[1]):
        part = f64(a)[:, g * 128:(g + 1) * 128] @ f64(w)[:, g * 128:(g + 1) * 128].T
        out += part * f64(a_scale)[:, g:g + 1] * np.repeat(f64(w_scale)[:, g], 128)[:n][None, :]
    return out


@pytest.mark.parametrize("variant", variants("gemm_a8w8_blockscale"))
def test_blockscale_variant(rng, variant):
    dtype = dtype_of(variant)
    # K groups: 5, 9, 4, 7, 3, 19 and 12 (the wgmma_ws kernels take runs of 4, then
    # a pair, then one: every remainder, fewer groups than a run, several runs)
    shapes = [(1, 200, 528), (70, 300, 1040), (130, 129, 400), (70, 260, 896), (70, 260, 384), (130, 260, 2432),
              (130, 260, 1536)]
    if variant.startswith("skinny"):
        tokens = 8 * int(variant.split(".t")[1].split(".")[0])
        shapes = [(1, 200, 528), (tokens - 3, 300, 1040), (tokens, 129, 400)]
    if variant.startswith("wgmma_ws"):
        shapes.append((1500, 3000, 1040))  # more tiles than blocks
    # a_scale column-major (strides (1, M), F.scaled_mm's layout) on the first
    # three shapes: read through its strides, or declined by the wgmma kernels.
    layouts = [(shape, by_column) for i, shape in enumerate(shapes) for by_column in [False, True][:1 + (i < 3)]]
    for (m, n, k), by_column in layouts:
        if not variant.startswith("generic") and (k % 16):
            continue
        groups = -(-k // 128)
        a, w = quantized(rng, (m, k), dtype), quantized(rng, (n, k), dtype)
        a_scale = (rng.random((m, groups)) + 0.5).astype(np.float32) / 32
        w_scale = (rng.random((-(-n // 128), groups)) + 0.5).astype(np.float32) / 32
        scale = to_device(np.ascontiguousarray(a_scale.T), CUDA).T if by_column else to_device(a_scale, CUDA)
        out = poisoned_on((m, n), "float32", CUDA)
        with forced("gemm_a8w8_blockscale", variant):
            call = lambda: aiter.gemm_a8w8_blockscale(*(to_device(x, CUDA) for x in (a, w)), scale,
                                                      to_device(w_scale, CUDA), out=out)
            if by_column and m > 1 and variant.startswith("wgmma"):
                with pytest.raises(ValueError, match="cannot run this call"):  # a plain one through aiter.torch
                    call()
                continue
            call()
            ran(variant)
        ref = blockscale_reference(a, w, a_scale, w_scale)
        if variant.startswith("wgmma"):
            # fp8 tensor sums lose bits relative to the sum of |products| (~14
            # mantissa bits kept, per DeepSeek-V3), not to the often cancelling
            # result: each element within 2^-11 of that sum (3-5 of 4.5M elements
            # of a 1500 x 3000 output missed a 1e-3-relative bound).
            bound = 2.0**-11 * blockscale_reference(np.abs(f64(a)), np.abs(f64(w)), a_scale, w_scale)
            err = np.abs(f64(on_host(out)) - ref)
            assert not np.isnan(err).any(), "elements unwritten or NaN"
            assert (err <= bound).all(), f"{(err > bound).sum()} elements off; worst error / bound {(err / bound).max():.3g}"
        else:
            check(on_host(out), ref, "float32", k, 4 / 32 / 32)


@pytest.mark.parametrize("variant", [v for v in variants("batched_gemm_a16w16") if ".bf16" in v or "f32" in v])
def test_batched_a16w16_variant(rng, variant):
    dtype = dtype_of(variant)
    ms, n, k = sizes_for(variant, 2 if dtype != "float32" else 4)
    b, m = 3, ms[1]
    a, w = rand(rng, (b, m, k), dtype), rand(rng, (b, n, k), dtype)
    out = poisoned_on((b, m, n), "bfloat16", CUDA)
    with forced("batched_gemm_a16w16", variant):
        aiter.batched_gemm_a16w16(to_device(a, CUDA), to_device(w, CUDA), out=out)
        ran(variant)
    check(on_host(out), np.einsum("bmk,bnk->bmn", f64(a), f64(w)), "bfloat16", k, 1.0)


@pytest.mark.parametrize("variant", [v for v in variants("batched_gemm_a16w16")
                                     if v.startswith(("wgmma", "tiled")) and ".bf16." in v])
def test_batched_shared_weight(rng, variant):
    """One W for every batch (a zero batch stride, as torch's expand makes)."""
    b, m, n, k = 3, 140, 300, 520
    a, w = rand(rng, (b, m, k), "bfloat16"), rand(rng, (n, k), "bfloat16")
    w_shared = to_device(w, CUDA).expand(b, n, k)
    assert w_shared.stride(0) == 0
    out = poisoned_on((b, m, n), "bfloat16", CUDA)
    with forced("batched_gemm_a16w16", variant):
        aiter.batched_gemm_a16w16(to_device(a, CUDA), w_shared, out=out)
        ran(variant)
    check(on_host(out), np.einsum("bmk,nk->bmn", f64(a), f64(w)), "bfloat16", k, 1.0)


def test_heuristic_choices(rng, own_kernels_only):
    """Without a tuned row: the skinny kernels for a few tokens, tensor-core tiles
    (warp-specialized wgmma on Hopper) for more."""
    n, k = 256, 520  # no shipped table has this shape
    w = to_device(rand(rng, (n, k), "bfloat16"), CUDA)
    hopper = torch.cuda.get_device_capability() == (9, 0)
    warp_specialized = ("wgmma_ws",) if hopper else ("tiled",)  # 64-row tiles to 64 rows, then 128-row
    tiles = ("wgmma_ws", "wgmma", "tiled") if hopper else ("tiled",)
    for m, families in [(1, ("skinny",)), (16, ("skinny",)), (40, warp_specialized), (100, warp_specialized),
                        (1000, tiles)]:
        aiter.gemm_a16w16(to_device(rand(rng, (m, k), "bfloat16"), CUDA), w)
        _, name, how = aiter.tuning.last_variant()
        assert name.split(".")[0] in families and how == 0, (m, name, how)


@pytest.mark.skipif(torch.cuda.get_device_capability() != (9, 0), reason="Hopper's warp-specialized tiles")
def test_heuristic_fits_tile_width_to_waves(rng, own_kernels_only):
    """512 x 6144 (untuned K): 128 x 192 tiles make 128 blocks, one wave on 132
    SMs, where 128 x 256 would leave a quarter of them idle."""
    a, w = rand(rng, (512, 520), "bfloat16"), rand(rng, (6144, 520), "bfloat16")
    out = aiter.gemm_a16w16(to_device(a, CUDA), to_device(w, CUDA))
    assert aiter.tuning.last_variant()[1:] == ("wgmma_ws.bf16.128x192.s5", 0)
    check(on_host(out), f64(a) @ f64(w).T, "bfloat16", 520, 1.0)


@pytest.mark.skipif(torch.cuda.get_device_capability() != (9, 0), reason="Hopper's warp-specialized tiles")
@pytest.mark.parametrize("m, n, expected", [(100, 4096, "wgmma_ws.bf16.128x64.s8"),
                                            (32, 8192, "wgmma_ws.bf16.64x64.s12"),
                                            (32, 4096, "wgmma_ws.bf16.64x32.s16"),
                                            (1024, 10240, "wgmma_ws.bf16.128x256.s4")])
def test_heuristic_tiles_for_untuned_shapes(rng, own_kernels_only, m, n, expected):
    """Untuned K: 65-128 rows take a 128-row warp-specialized tile as wide as
    fills the GPU (not an mma.sync tile); 64 x 32 only where 64 x 64 tiles fill
    half the SMs or less; no 224- or 160-wide tiles (no staged epilogue)."""
    a, w = rand(rng, (m, 520), "bfloat16"), rand(rng, (n, 520), "bfloat16")
    out = aiter.gemm_a16w16(to_device(a, CUDA), to_device(w, CUDA))
    assert aiter.tuning.last_variant()[1:] == (expected, 0)
    check(on_host(out), f64(a) @ f64(w).T, "bfloat16", 520, 1.0)


def test_blockscale_heuristic_for_few_tokens(rng):
    """Untuned block-scaled calls of up to 8 tokens take the skinny tile with two
    16-row W tiles and 4 warps; 9-64 tokens the 64 x 128 wgmma tile on Hopper."""
    n, k = 640, 1024
    w = quantized(rng, (n, k), "float8_e4m3fn")
    w_scale = (rng.random((n // 128, k // 128)) + 0.5).astype(np.float32)
    for m, expected in [(4, "skinny.e4m3fn.t1.r2.w4.bs"), (8, "skinny.e4m3fn.t1.r2.w4.bs")]:
        a = quantized(rng, (m, k), "float8_e4m3fn")
        a_scale = (rng.random((m, k // 128)) + 0.5).astype(np.float32)
        aiter.gemm_a8w8_blockscale(*(to_device(x, CUDA) for x in (a, w, a_scale, w_scale)))
        assert aiter.tuning.last_variant()[1:] == (expected, 0)
    if torch.cuda.get_device_capability() == (9, 0):
        a = quantized(rng, (16, k), "float8_e4m3fn")
        a_scale = (rng.random((16, k // 128)) + 0.5).astype(np.float32)
        aiter.gemm_a8w8_blockscale(*(to_device(x, CUDA) for x in (a, w, a_scale, w_scale)))
        assert aiter.tuning.last_variant()[1:] == ("wgmma_ws.e4m3fn.64x128.s8.bs", 0)


def test_misaligned_rows_use_generic(rng):
    """K * 2 bytes not a multiple of 16: only the portable kernel can run it."""
    m, n, k = 4, 40, 13
    a, w = rand(rng, (m, k), "bfloat16"), rand(rng, (n, k), "bfloat16")
    out = aiter.gemm_a16w16(to_device(a, CUDA), to_device(w, CUDA))
    assert aiter.tuning.last_variant()[1] == "generic.bf16"
    check(on_host(out), f64(a) @ f64(w).T, "bfloat16", k, 1.0)
    with pytest.raises(aiter.AiterError, match="cannot run this call"):
        with forced("gemm_a16w16", "skinny.bf16.t1.r1.w8"):
            aiter.gemm_a16w16(to_device(a, CUDA), to_device(w, CUDA))



SPLIT_K = [v for v in variants("gemm_a16w16") + variants("gemm_a8w8") if v.split(".")[-1] in ("k2", "k4")]


def run_unscaled(variant, a, w, out=None):
    """a @ w.T by the forced variant (fp8: unit scales)."""
    op = "gemm_a8w8" if "e4m3fn" in variant else "gemm_a16w16"
    args = [to_device(a, CUDA), to_device(w, CUDA)]
    if op == "gemm_a8w8":
        args += [to_device(np.ones((len(a), 1), np.float32), CUDA), to_device(np.ones((1, len(w)), np.float32), CUDA)]
    with forced(op, variant):
        getattr(aiter, op)(*args, out=out)
        ran(variant)


@pytest.mark.parametrize("variant", SPLIT_K)
def test_split_k_shares(rng, variant):
    """K split over a cluster: K of exactly `split` stages (one each), and a
    long K with a ragged last stage; K shorter than `split` stages is refused."""
    dtype = dtype_of(variant)
    split, per_stage = int(variant.split(".k")[-1]), 128 // (1 if "e4m3fn" in variant else 2)
    n = 1000
    for m, k in [(33, split * per_stage), (130, 37 * per_stage + 16)]:
        a, w = quantized(rng, (m, k), dtype), quantized(rng, (n, k), dtype)
        out = poisoned_on((m, n), "bfloat16", CUDA)
        run_unscaled(variant, a, w, out)
        magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) * 4
        check(on_host(out), f64(a) @ f64(w).T, "bfloat16", k, magnitude)
    short = quantized(rng, (8, (split - 1) * per_stage), dtype)
    with pytest.raises(aiter.AiterError, match="cannot run this call"):
        run_unscaled(variant, short, short)
