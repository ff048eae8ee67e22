"""The Triton GEMM kernels (kernels/triton/gemm.py), forced one at a time on the
GPU, against float64 NumPy.  On AMD they are the matrix-core path; this suite
runs their sm_90a build (the same sources) on the H100; the AMD builds are
compile-verified only (tools/check_amd_isa.py).  Ragged M and N around the
tiles, K a multiple of 16 (what the kernels assume) with a tail past BK."""
import os
import re

import numpy as np
import pytest

import aiter
from harness import TOLERANCE, assert_close, f64, on_host, poisoned_on, rand, to_device

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

CUDA = "cuda"
NAME = {"bf16": "bfloat16", "f16": "float16", "i8": "int8", "e4m3fn": "float8_e4m3fn", "e4m3fnuz": "float8_e4m3fnuz"}


def built_triton_variants():
    """The Triton GEMM variants in the manifest for this GPU's target (sm_90a on an H100)."""
    major, minor = torch.cuda.get_device_capability()
    target = "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"
    path = os.path.join(aiter.library_info()["kernel_dir"], "manifest.tsv")
    if not os.path.exists(path):
        return []
    rows = [line.split("\t") for line in open(path, encoding="utf-8") if not line.startswith("#")]
    return sorted(r[2] for r in rows if r[0] == target and r[1] == "gemm" and r[2].startswith("triton_"))


VARIANTS = built_triton_variants()
if not VARIANTS:
    pytest.skip("built without Triton kernels for this GPU (-Dtriton, -Dgpu_targets)", allow_module_level=True)


def of(kind):
    """Variants of one kind: sixteen (bf16/f16), eight (int8/fp8, per-token or tensor scaled), blockscale."""
    if kind == "blockscale":
        return [v for v in VARIANTS if v.endswith(".bs")]
    sixteen = [v for v in VARIANTS if v.split(".")[0] in ("triton_bf16", "triton_f16")]
    return sixteen if kind == "sixteen" else [v for v in VARIANTS if v not in sixteen and not v.endswith(".bs")]


def dtype_of(variant):
    return NAME[variant.split(".")[0][len("triton_"):]]


def tile_rows(variant):
    return int(variant.split(".")[1].split("x")[0])


def ran(variant):
    _, name, how = aiter.tuning.last_variant()
    assert (name, how) == (variant, 2), f"expected the forced {variant}, ran {name} (how {how})"


def quantized(rng, shape, dtype):
    if dtype == "int8":
        return rng.integers(-128, 128, size=shape, dtype=np.int8)
    return rand(rng, shape, dtype, scale=2.0)


def check(out, ref, out_dtype, k, magnitude):
    rtol, atol = TOLERANCE[out_dtype]
    assert_close(out, ref, out_dtype, rtol=rtol, atol=atol * np.sqrt(k) * magnitude)


@pytest.mark.parametrize("variant", of("sixteen"))
@pytest.mark.parametrize("out_dtype, bias_dtype", [("bfloat16", "float32"), ("float32", None), ("float16", "float16")])
def test_a16w16(rng, variant, out_dtype, bias_dtype):
    dtype, bm = dtype_of(variant), tile_rows(variant)
    if bias_dtype == "float16" and dtype != "float16":
        out_dtype, bias_dtype = "bfloat16", "bfloat16"  # a bias of the output's dtype
    n, k = 200, 528  # K: 8 x 64 and a 16-wide tail
    for m in (1, bm - 5, 2 * bm + 17):
        a, w = rand(rng, (m, k), dtype), rand(rng, (n, k), dtype)
        bias = rand(rng, (n,), bias_dtype) if bias_dtype else None
        out = poisoned_on((m, n), out_dtype, CUDA)
        with aiter.tuning.force_variant("gemm_a16w16", variant):
            aiter.gemm_a16w16(to_device(a, CUDA), to_device(w, CUDA), None if bias is None else to_device(bias, CUDA),
                              out=out)
            ran(variant)
        ref = f64(a) @ f64(w).T + (0 if bias is None else f64(bias))
        check(on_host(out), ref, out_dtype, k, 1.0)


@pytest.mark.parametrize("variant", of("eight"))
@pytest.mark.parametrize("per_token", [True, False])
def test_a8w8(rng, variant, per_token):
    dtype, bm = dtype_of(variant), tile_rows(variant)
    n, k = 300, 400  # K: 3 x 128 and a 16-wide tail
    for m in (3, bm + 3):
        a, w = quantized(rng, (m, k), dtype), quantized(rng, (n, k), dtype)
        a_scale = (rng.random((m, 1) if per_token else (1,)) + 0.5).astype(np.float32) / 64
        w_scale = (rng.random((1, n) if per_token else (1,)) + 0.5).astype(np.float32) / 64
        bias = rand(rng, (n,), "bfloat16")
        out = poisoned_on((m, n), "bfloat16", CUDA)
        with aiter.tuning.force_variant("gemm_a8w8", variant):
            aiter.gemm_a8w8(*(to_device(x, CUDA) for x in (a, w, a_scale, w_scale)), to_device(bias, CUDA), out=out)
            ran(variant)
        ref = (f64(a) @ f64(w).T) * f64(a_scale).reshape(-1, 1) * f64(w_scale).reshape(1, -1) + f64(bias)
        magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) / 64 / 64 * 4
        check(on_host(out), ref, "bfloat16", k, magnitude)


def blockscale_reference(a, w, a_scale, w_scale):
    n = w.shape[0]
    out = np.zeros((a.shape[0], n))
    for g in range(a_scale.shape[1]):
        part = f64(a)[:, g * 128:(g + 1) * 128] @ f64(w)[:, g * 128:(g + 1) * 128].T
        out += part * f64(a_scale)[:, g:g + 1] * np.repeat(f64(w_scale)[:, g], 128)[:n][None, :]
    return out


@pytest.mark.parametrize("variant", of("blockscale"))
def test_blockscale(rng, variant):
    dtype = dtype_of(variant)
    for m, n, k in [(1, 200, 528), (70, 300, 1040), (130, 129, 400), (131, 260, 2432)]:
        groups = -(-k // 128)
        a, w = quantized(rng, (m, k), dtype), quantized(rng, (n, k), dtype)
        a_scale = (rng.random((m, groups)) + 0.5).astype(np.float32) / 32
        w_scale = (rng.random((-(-n // 128), groups)) + 0.5).astype(np.float32) / 32
        out = poisoned_on((m, n), "float32", CUDA)
        with aiter.tuning.force_variant("gemm_a8w8_blockscale", variant):
            aiter.gemm_a8w8_blockscale(*(to_device(x, CUDA) for x in (a, w, a_scale, w_scale)), out=out)
            ran(variant)
        # fp8 tensor-core sums keep ~14 mantissa bits of the sum of |products|
        # (Hopper's wgmma, as for the hand-written kernels in test_gemm_gpu.py):
        # each element within 2^-11 of that sum.
        ref = blockscale_reference(a, w, a_scale, w_scale)
        bound = 2.0**-11 * blockscale_reference(np.abs(f64(a)), np.abs(f64(w)), a_scale, w_scale)
        err = np.abs(f64(on_host(out)) - ref)
        assert not np.isnan(err).any(), "elements unwritten or NaN"
        assert (err <= bound).all(), f"{(err > bound).sum()} elements off; worst error / bound {(err / bound).max():.3g}"
    # a_scale column-major (strides (1, M)): these kernels index it row-major, so they decline it
    by_column = to_device(np.ascontiguousarray(a_scale.T), CUDA).T
    with aiter.tuning.force_variant("gemm_a8w8_blockscale", variant):
        with pytest.raises(ValueError, match="cannot run this call"):  # a plain one through aiter.torch
            aiter.gemm_a8w8_blockscale(*(to_device(x, CUDA) for x in (a, w)), by_column, to_device(w_scale, CUDA))


@pytest.mark.parametrize("variant", of("sixteen"))
@pytest.mark.parametrize("shared_weight", [False, True])
def test_batched_a16w16(rng, variant, shared_weight):
    """Batches of their own W, and one W for every batch (a zero batch stride)."""
    dtype = dtype_of(variant)
    b, m, n, k = 3, tile_rows(variant) + 7, 150, 272
    a = rand(rng, (b, m, k), dtype)
    w = rand(rng, (n, k) if shared_weight else (b, n, k), dtype)
    w_dev = to_device(w, CUDA).expand(b, n, k) if shared_weight else to_device(w, CUDA)
    out = poisoned_on((b, m, n), "bfloat16", CUDA)
    with aiter.tuning.force_variant("batched_gemm_a16w16", variant):
        aiter.batched_gemm_a16w16(to_device(a, CUDA), w_dev, out=out)
        ran(variant)
    ref = np.einsum("bmk,nk->bmn" if shared_weight else "bmk,bnk->bmn", f64(a), f64(w))
    check(on_host(out), ref, "bfloat16", k, 1.0)


@pytest.mark.parametrize("variant", of("eight"))
def test_batched_a8w8(rng, variant):
    dtype = dtype_of(variant)
    b, m, n, k = 2, 37, 130, 256
    a, w = quantized(rng, (b, m, k), dtype), quantized(rng, (b, n, k), dtype)
    a_scale = (rng.random((b, m, 1)) + 0.5).astype(np.float32) / 64
    w_scale = (rng.random((b, 1, n)) + 0.5).astype(np.float32) / 64
    out = poisoned_on((b, m, n), "bfloat16", CUDA)
    with aiter.tuning.force_variant("batched_gemm_a8w8", variant):
        aiter.batched_gemm_a8w8(*(to_device(x, CUDA) for x in (a, w, a_scale, w_scale)), out=out)
        ran(variant)
    ref = np.einsum("bmk,bnk->bmn", f64(a), f64(w)) * f64(a_scale) * f64(w_scale)
    magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) / 64 / 64 * 4
    check(on_host(out), ref, "bfloat16", k, magnitude)


def test_refuses_what_the_kernels_do_not_assume(rng):
    """K not a multiple of 16: the forced Triton variant is refused with a
    message, the output untouched (the heuristic would pick another kernel)."""
    variant = of("sixteen")[0]
    a, w = rand(rng, (8, 40), dtype_of(variant)), rand(rng, (16, 40), dtype_of(variant))
    a = to_device(a, CUDA)[:, :37]
    w = to_device(w, CUDA)[:, :37]
    out = poisoned_on((8, 16), "bfloat16", CUDA)
    with pytest.raises(aiter.AiterError, match=re.escape(f"forced variant {variant} cannot run")):
        with aiter.tuning.force_variant("gemm_a16w16", variant):
            aiter.gemm_a16w16(a, w, out=out)
    assert np.isnan(f64(on_host(out))).all()
