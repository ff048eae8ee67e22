"""The vendor BLAS variants (cuBLASLt on NVIDIA, hipBLASLt on AMD), forced one at
a time, against float64 NumPy on the GEMM tests' ragged shapes (GPU tests,
skipped without a CUDA GPU or without cuBLASLt); and, without a GPU, that every
function libaiter resolves exists in whichever of the two libraries is installed
(the hipBLASLt variants are checked only this way: no AMD GPU was at hand)."""
import ctypes
import glob
import os
import re
import sys

import numpy as np
import pytest

import aiter
from harness import TOLERANCE, assert_close, f64, on_host, poisoned_on, rand, to_device

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUNCTIONS = os.path.join(ROOT, "libaiter", "gpu", "vendor_blas", "blaslt_functions.def")
VENDOR_PREFIXES = ("cublaslt.", "hipblaslt.")
CUDA = "cuda"


# ---- without a GPU ----------------------------------------------------------------

def function_names(column):
    """The names of blaslt_functions.def's column 1 (cuBLASLt) or 2 (hipBLASLt)."""
    rows = re.findall(r'^BLASLT_FN\((\w+), "(\w+)", "(\w+)"\)', open(FUNCTIONS).read(), re.M)
    assert len(rows) >= 15, rows
    return [row[column] for row in rows]


def installed(patterns, env):
    """The first library file found: $env, then the sonames, then the patterns
    (the copies pip packages carry); None when none is installed."""
    candidates = [os.environ[env]] if os.environ.get(env) else []
    for pattern in patterns:
        candidates += sorted(glob.glob(pattern)) if "*" in pattern or "/" in pattern else [pattern]
    for path in candidates:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def site_paths(relative):
    return [os.path.join(p, relative) for p in sys.path if p.endswith("-packages")]


@pytest.mark.parametrize("column, patterns, env", [
    (1, ["libcublasLt.so.13", "libcublasLt.so.12"] + site_paths("nvidia/*/lib/libcublasLt.so.*"),
     "AITER_TEST_CUBLASLT"),
    (2, ["libhipblaslt.so.1", "libhipblaslt.so.0", "/opt/rocm/lib/libhipblaslt.so*"]
     + site_paths("*/lib/libhipblaslt.so*"), "AITER_TEST_HIPBLASLT"),
], ids=["cublaslt", "hipblaslt"])
def test_every_vendor_function_resolves(column, patterns, env):
    if not os.path.exists(FUNCTIONS):
        pytest.skip(f"{FUNCTIONS} is not here (tests run outside the source tree)")
    lib = installed(patterns, env)
    if lib is None:
        pytest.skip(f"no {'cuBLASLt' if column == 1 else 'hipBLASLt'} installed (set {env} to its path)")
    missing = [name for name in function_names(column) if not hasattr(lib, name)]
    assert not missing, f"{lib._name} lacks {missing}"


def test_vendor_variants_are_listed_for_gpus_only():
    for op, expected in [("gemm_a16w16", "cublaslt.bf16"), ("gemm_a8w8", "cublaslt.e4m3fn"),
                         ("gemm_a8w8", "cublaslt.e4m3fn.alg4"), ("gemm_a8w8_blockscale", "cublaslt.e4m3fn.bs"),
                         ("gemm_a8w8_blockscale", "cublaslt.e4m3fn.bs.alg2"), ("batched_gemm_a16w16", "cublaslt.bf16"),
                         ("batched_gemm_a8w8", "cublaslt.e4m3fn")]:
        gpu = aiter.tuning.variants(op, device=CUDA)
        assert expected in gpu and expected.replace("cublaslt", "hipblaslt") in gpu, gpu
        assert gpu.index(expected) < len([v for v in gpu if v.startswith(VENDOR_PREFIXES)])  # listed first
        assert not any(v.startswith(VENDOR_PREFIXES) for v in aiter.tuning.variants(op, device="cpu"))


def test_forcing_a_vendor_variant_on_cpu_tensors_fails_clearly(rng):
    a, w = rand(rng, (3, 16), "float32"), rand(rng, (5, 16), "float32")
    with aiter.tuning.force_variant("gemm_a16w16", "cublaslt.f32"):
        with pytest.raises(aiter.AiterError, match="cublaslt.f32 does not exist on this backend"):
            aiter.gemm_a16w16(a, w)


# ---- on the GPU ----------------------------------------------------------------------

def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


torch = _torch_cuda()


def on_gpu(test):
    """Marked gpu; skipped without torch and a CUDA GPU."""
    return pytest.mark.gpu(pytest.mark.skipif(torch is None, reason="no CUDA GPU (or no torch)")(test))


@pytest.fixture(scope="module")
def cublaslt():
    """Skips when cuBLASLt cannot run a plain bf16 product here."""
    a = to_device(np.ones((16, 64), np.float32), CUDA).bfloat16()
    try:
        with aiter.tuning.force_variant("gemm_a16w16", "cublaslt.bf16"):
            aiter.gemm_a16w16(a, a)
    except aiter.AiterError as e:
        pytest.skip(f"cuBLASLt does not run here: {e}")


def forced_run(op, variant, *args, **kwargs):
    with aiter.tuning.force_variant(op, variant):
        out = getattr(aiter, op)(*args, **kwargs)
        assert aiter.tuning.last_variant()[1:] == (variant, 2)
    return out


def check(out, ref, out_dtype, k, magnitude, tolerance=None):
    rtol, atol = tolerance or TOLERANCE[out_dtype]
    assert_close(out, ref, out_dtype, rtol=rtol, atol=atol * np.sqrt(k) * magnitude)


def dev(*arrays):
    return [None if x is None else to_device(x, CUDA) for x in arrays]


def quantized(rng, shape):
    return rand(rng, shape, "float8_e4m3fn", scale=2.0)


def refuses(call):
    """True when the forced variant declines the call with the documented error
    (aiter.UnsupportedShapeError, a ValueError; through aiter.torch's native
    ops, a plain ValueError with the same message)."""
    try:
        call()
    except ValueError as e:
        assert "cannot run this call" in str(e), e
        return True
    return False


# M at and around 64 / 128-row tiles, N not a multiple of 16, K a multiple of
# 16 bytes with a tail (the GEMM tests' ragged shapes), and one misaligned K.
A16_SHAPES = [(1, 200, 520), (7, 200, 520), (70, 200, 520), (273, 200, 520), (1500, 3000, 520), (7, 33, 13)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("out_dtype, bias_dtype", [("bfloat16", None), ("float32", "float32"),
                                                   ("bfloat16", "bfloat16")])
@on_gpu
def test_a16w16(rng, cublaslt, dtype, out_dtype, bias_dtype):
    tag = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[dtype]
    for m, n, k in A16_SHAPES:
        a, w = rand(rng, (m, k), dtype), rand(rng, (n, k), dtype)
        bias = rand(rng, (n,), bias_dtype) if bias_dtype else None
        out = poisoned_on((m, n), out_dtype, CUDA)
        if refuses(lambda: forced_run("gemm_a16w16", f"cublaslt.{tag}", *dev(a, w, bias), out=out)):
            # cuBLASLt writes a product in its input dtype or fp32 (H100: it declined fp16 -> bf16)
            assert out_dtype not in (dtype, "float32"), f"declined {(m, n, k)}"
            continue
        ref = f64(a) @ f64(w).T + (f64(bias) if bias is not None else 0)
        check(on_host(out), ref, out_dtype, k, 1.0)


@pytest.mark.parametrize("per_token, per_channel", [(True, True), (False, False), (True, False)])
@pytest.mark.parametrize("out_dtype, bias_dtype", [("bfloat16", None), ("float32", None), ("bfloat16", "bfloat16")])
@on_gpu
def test_a8w8(rng, cublaslt, per_token, per_channel, out_dtype, bias_dtype):
    """Where cuBLASLt has an algorithm the result matches, else the call is
    declined with the documented error: per-tensor scales, and per-token x
    per-channel ones (outer vectors on both sides), with a bf16 output must run
    on the aligned shapes (they did on the H100, cuBLASLt 13.1); mixed scalings
    (declined there), fp32 outputs and ragged N run where cuBLASLt offers them."""
    ran = []
    for m, n, k in [(1, 208, 528), (7, 200, 528), (70, 208, 528), (273, 256, 1040), (1500, 3008, 528)]:
        a, w = quantized(rng, (m, k)), quantized(rng, (n, k))
        a_scale = (rng.random((m, 1) if per_token else (1,)) + 0.5).astype(np.float32) / 64
        w_scale = (rng.random((1, n) if per_channel else (1,)) + 0.5).astype(np.float32) / 64
        bias = rand(rng, (n,), bias_dtype) if bias_dtype else None
        out = poisoned_on((m, n), out_dtype, CUDA)
        args = dev(a, w, a_scale, w_scale)
        if refuses(lambda: forced_run("gemm_a8w8", "cublaslt.e4m3fn", *args, bias=dev(bias)[0], out=out)):
            continue
        ran.append((m, n))
        ref = (f64(a) @ f64(w).T) * f64(a_scale).reshape(-1, 1) * f64(w_scale).reshape(1, -1)
        ref += f64(bias) if bias is not None else 0
        magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) / 64 / 64 * 4
        check(on_host(out), ref, out_dtype, k, magnitude, (1e-3, 1e-3) if out_dtype == "float32" else None)
    if per_token == per_channel and out_dtype == "bfloat16":  # per-tensor, or outer vectors on both sides
        assert {(70, 208), (273, 256)} <= set(ran), f"cuBLASLt ran only {ran}"


def blockscale_reference(a, w, a_scale, w_scale):
    n = w.shape[0]
    out = np.zeros((a.shape[0], n))
    for g in range(a_scale.shape[1]):
        part = f64(a)[:, g * 128:(g + 1) * 128] @ f64(w)[:, g * 128:(g + 1) * 128].T
        out += part * f64(a_scale)[:, g:g + 1] * np.repeat(f64(w_scale)[:, g], 128)[:n][None, :]
    return out


def blockscale_case(rng, m, n, k):
    a, w = quantized(rng, (m, k)), quantized(rng, (n, k))
    a_scale = (rng.random((m, k // 128)) + 0.5).astype(np.float32) / 64
    w_scale = (rng.random((-(-n // 128), k // 128)) + 0.5).astype(np.float32) / 64
    magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) / 64 / 64 * 4
    return (a, w, a_scale, w_scale), magnitude


# cuBLASLt's block scaling: rows of four K groups (K a multiple of 512).  On the
# H100 cuBLASLt 13.1's heuristic declined M = 1, 2, 3, 273 (M not a multiple of
# 4), M = 70 with N = 300 and N = 129 (2026-11-27); such shapes may be declined,
# the others must run.
BLOCKSCALE_SHAPES = [(1, 256, 512), (4, 256, 512), (70, 300, 1024), (130, 129, 512), (272, 384, 2048),
                     (273, 384, 2048), (1500, 1024, 1024), (1024, 2112, 7168)]


@pytest.mark.parametrize("m, n, k", BLOCKSCALE_SHAPES)
@pytest.mark.parametrize("by_column", [False, True], ids=["a_scale_rows", "a_scale_columns"])
@on_gpu
def test_blockscale(rng, cublaslt, m, n, k, by_column):
    """1 x 128 scales of A, 128 x 128 of W (cuBLASLt's VEC128 on its B, BLK128x128
    on its A after the row-major swap, as PyTorch's scaled_gemm), against float64;
    a_scale row-major (transposed into the workspace) or column-major (strides
    (1, M), F.scaled_mm's layout: passed straight through)."""
    args, magnitude = blockscale_case(rng, m, n, k)
    a, w, a_scale, w_scale = dev(*args)
    if by_column:
        a_scale = to_device(np.ascontiguousarray(args[2].T), CUDA).T
        assert a_scale.stride() == (1, m) or m == 1
    out = poisoned_on((m, n), "bfloat16", CUDA)
    if refuses(lambda: forced_run("gemm_a8w8_blockscale", "cublaslt.e4m3fn.bs", a, w, a_scale, w_scale, out=out)):
        assert m % 4 != 0 or n % 16 != 0, f"declined the aligned shape {(m, n, k)}"
        return
    check(on_host(out), blockscale_reference(*args), "bfloat16", k, magnitude)


@on_gpu
def test_blockscale_declines_partial_scale_rows(rng, cublaslt):
    a, w = quantized(rng, (8, 528)), quantized(rng, (256, 528))
    scales = dev(np.ones((8, 5), np.float32), np.ones((2, 5), np.float32))
    assert refuses(lambda: forced_run("gemm_a8w8_blockscale", "cublaslt.e4m3fn.bs", *dev(a, w), *scales))
    k = 640  # whole groups, but five to a row
    args = dev(quantized(rng, (8, k)), quantized(rng, (256, k)), np.ones((8, 5), np.float32),
               np.ones((2, 5), np.float32))
    assert refuses(lambda: forced_run("gemm_a8w8_blockscale", "cublaslt.e4m3fn.bs", *args))


@pytest.mark.parametrize("rank", [2, 3, 4])
@on_gpu
def test_other_heuristic_algorithms(rng, cublaslt, rank):
    """The heuristic's second to fourth algorithms, where it offered that many,
    compute the same product; with fewer they are declined cleanly."""
    args, magnitude = blockscale_case(rng, 256, 512, 1024)
    out = poisoned_on((256, 512), "bfloat16", CUDA)
    if not refuses(lambda: forced_run("gemm_a8w8_blockscale", f"cublaslt.e4m3fn.bs.alg{rank}", *dev(*args),
                                      out=out)):
        check(on_host(out), blockscale_reference(*args), "bfloat16", 1024, magnitude)
    a, w = quantized(rng, (256, 528)), quantized(rng, (208, 528))
    a_scale, w_scale = np.full((1,), 0.5, np.float32), np.full((1,), 0.25, np.float32)
    out = poisoned_on((256, 208), "bfloat16", CUDA)
    if not refuses(lambda: forced_run("gemm_a8w8", f"cublaslt.e4m3fn.alg{rank}", *dev(a, w, a_scale, w_scale),
                                      out=out)):
        magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) / 8 * 4
        check(on_host(out), f64(a) @ f64(w).T / 8, "bfloat16", 528, magnitude)


@on_gpu
def test_batched(rng, cublaslt):
    b, m, n, k = 3, 70, 200, 520
    a, w = rand(rng, (b, m, k), "bfloat16"), rand(rng, (b, n, k), "bfloat16")
    for bias_dtype in ("bfloat16", "float32"):  # an fp32 bias with a bf16 out: where cuBLASLt has it
        bias = rand(rng, (n,), bias_dtype)
        out = poisoned_on((b, m, n), "bfloat16", CUDA)
        if refuses(lambda: forced_run("batched_gemm_a16w16", "cublaslt.bf16", *dev(a, w, bias), out=out)):
            assert bias_dtype == "float32"
            continue
        check(on_host(out), np.einsum("bmk,bnk->bmn", f64(a), f64(w)) + f64(bias), "bfloat16", k, 1.0)
    shared = to_device(rand(rng, (1, n, k), "bfloat16"), CUDA).expand(b, n, k)  # batch stride 0
    out = forced_run("batched_gemm_a16w16", "cublaslt.bf16", to_device(a, CUDA), shared)
    check(on_host(out), np.einsum("bmk,nk->bmn", f64(a), f64(on_host(shared[0]))), "bfloat16", k, 1.0)
    qa, qw = quantized(rng, (b, m, 528)), quantized(rng, (b, 208, 528))
    one = np.full((1,), 0.25, np.float32)
    out = forced_run("batched_gemm_a8w8", "cublaslt.e4m3fn", *dev(qa, qw, one, one))
    check(on_host(out), np.einsum("bmk,bnk->bmn", f64(qa), f64(qw)) / 16, "bfloat16", 528, 4.0)
    per_token = np.ones((b, m, 1), np.float32)
    assert refuses(lambda: forced_run("batched_gemm_a8w8", "cublaslt.e4m3fn", *dev(qa, qw, per_token, one)))


@on_gpu
def test_captured_in_a_graph(rng, cublaslt):
    """Warmed up on the capturing stream, then replayed from a CUDA graph."""
    a, w = to_device(rand(rng, (300, 520), "bfloat16"), CUDA), to_device(rand(rng, (1000, 520), "bfloat16"), CUDA)
    out = torch.empty(300, 1000, dtype=torch.bfloat16, device=CUDA)
    stream, graph = torch.cuda.Stream(), torch.cuda.CUDAGraph()
    with aiter.tuning.force_variant("gemm_a16w16", "cublaslt.bf16"):
        with torch.cuda.stream(stream):
            aiter.gemm_a16w16(a, w, out=out)
        stream.synchronize()
        out.fill_(float("nan"))
        with torch.cuda.graph(graph, stream=stream):
            aiter.gemm_a16w16(a, w, out=out)
    graph.replay()
    torch.cuda.synchronize()
    check(on_host(out), f64(on_host(a)) @ f64(on_host(w)).T, "bfloat16", 520, 1.0)


@on_gpu
def test_block_scales_captured_on_a_fresh_stream(rng, cublaslt):
    """Row-major 1 x 128 scales need the per-stream workspace (their transpose);
    a graph captured on a stream no vendor GEMM has used (as torch.cuda.graph's
    own stream) gets the buffer made ahead, instead of refusing the variant.
    Two fresh streams in turn: the second capture takes the buffer made again
    at the eager call between them."""
    args, magnitude = blockscale_case(rng, 256, 384, 2048)
    a, w, a_scale, w_scale = dev(*args)
    for _ in range(2):
        out = poisoned_on((256, 384), "bfloat16", CUDA)
        with aiter.tuning.force_variant("gemm_a8w8_blockscale", "cublaslt.e4m3fn.bs"):
            aiter.gemm_a8w8_blockscale(a, w, a_scale, w_scale, out=out)  # eager, on the current stream
            torch.cuda.synchronize()
            out.fill_(float("nan"))
            graph = torch.cuda.CUDAGraph()
            # (high priority: torch's pool of such streams, which other tests leave unused)
            with torch.cuda.graph(graph, stream=torch.cuda.Stream(priority=-1)):
                aiter.gemm_a8w8_blockscale(a, w, a_scale, w_scale, out=out)
        graph.replay()
        torch.cuda.synchronize()
        check(on_host(out), blockscale_reference(*args), "bfloat16", 2048, magnitude)


@on_gpu
def test_heuristic_takes_the_library_where_it_wins(rng, cublaslt, monkeypatch):
    """Untuned bf16 above 16 rows goes to cuBLASLt, a few tokens stay on the
    skinny kernels; AITER_VENDOR_BLAS=0 takes the library out (and a forced
    vendor variant then cannot run)."""
    w = to_device(rand(rng, (256, 520), "bfloat16"), CUDA)
    for m, family in [(4, "skinny"), (1000, "cublaslt")]:
        aiter.gemm_a16w16(to_device(rand(rng, (m, 520), "bfloat16"), CUDA), w)
        assert aiter.tuning.last_variant()[1].split(".")[0] == family and aiter.tuning.last_variant()[2] == 0
    monkeypatch.setenv("AITER_VENDOR_BLAS", "0")
    aiter.tuning.reload()
    try:
        a = to_device(rand(rng, (1000, 520), "bfloat16"), CUDA)
        aiter.gemm_a16w16(a, w)
        assert not aiter.tuning.last_variant()[1].startswith("cublaslt")
        assert refuses(lambda: forced_run("gemm_a16w16", "cublaslt.bf16", a, w))
    finally:
        monkeypatch.delenv("AITER_VENDOR_BLAS")
        aiter.tuning.reload()


@on_gpu
def test_heuristic_takes_the_library_for_block_scales_at_large_m(rng, cublaslt):
    """Untuned block-scaled calls of 256 rows or more go to cuBLASLt (either
    a_scale layout); fewer rows stay on libaiter's kernels."""
    n, k = 640, 1024  # no tuned row has this shape
    w = to_device(quantized(rng, (n, k)), CUDA)
    w_scale = to_device((rng.random((n // 128, k // 128)) + 0.5).astype(np.float32), CUDA)
    for m, by_column, vendor in [(64, False, False), (1024, False, True), (1024, True, True)]:
        a = to_device(quantized(rng, (m, k)), CUDA)
        a_scale = (rng.random((m, k // 128)) + 0.5).astype(np.float32)
        scale = to_device(np.ascontiguousarray(a_scale.T), CUDA).T if by_column else to_device(a_scale, CUDA)
        aiter.gemm_a8w8_blockscale(a, w, scale, w_scale)
        _, name, how = aiter.tuning.last_variant()
        assert how == 0 and name.startswith("cublaslt.") == vendor, (m, by_column, name)


@on_gpu
def test_heuristic_takes_the_library_for_fp8_where_the_last_wave_idles(rng, cublaslt, monkeypatch):
    """Untuned per-token x per-channel fp8 goes to cuBLASLt where libaiter's own
    128-row tiles would run in 2-4 waves on the H100's 132 multiprocessors with
    the last wave less than half full (N = 5120, 128 x 256 tiles: 160 tiles at
    M = 1024, 320 at 2048), and stays on libaiter's kernels in one wave (80 tiles
    at M = 512), where the last of 4 waves is more than half full (480 tiles at
    M = 3072) and for few tokens (skinny kernels to 8 rows; at 16 rows, on
    Hopper, the 64 x 64 tiles, as 64 x 64 tiles fill more than half the GPU
    here).  Each chosen call matches float64; AITER_VENDOR_BLAS=0 takes the
    library out."""
    n, k = 5120, 256  # no tuned row has this shape
    w = quantized(rng, (n, k))
    w_scale = (rng.random((1, n)) + 0.5).astype(np.float32) / 64
    hopper = torch.cuda.get_device_capability() == (9, 0)
    probe = dev(quantized(rng, (1024, k)), w, np.ones((1024, 1), np.float32), w_scale)
    if refuses(lambda: forced_run("gemm_a8w8", "cublaslt.e4m3fn", *probe)):
        pytest.skip("cuBLASLt has no per-token x per-channel fp8 here")
    cases = [(8, "skinny"), (16, "wgmma_ws" if hopper else None), (512, None), (1024, "cublaslt"),
             (2048, "cublaslt"), (3072, None)]
    for m, family in cases:
        a = quantized(rng, (m, k))
        a_scale = (rng.random((m, 1)) + 0.5).astype(np.float32) / 64
        out = poisoned_on((m, n), "bfloat16", CUDA)
        aiter.gemm_a8w8(*dev(a, w, a_scale, w_scale), out=out)
        _, name, how = aiter.tuning.last_variant()
        assert how == 0 and name.startswith("cublaslt.") == (family == "cublaslt"), (m, name)
        assert family is None or name.split(".")[0] == family, (m, name)
        ref = (f64(a) @ f64(w).T) * f64(a_scale).reshape(-1, 1) * f64(w_scale).reshape(1, -1)
        magnitude = float(np.abs(f64(a)).mean() * np.abs(f64(w)).mean()) / 64 / 64 * 4
        check(on_host(out), ref, "bfloat16", k, magnitude)
    monkeypatch.setenv("AITER_VENDOR_BLAS", "0")
    aiter.tuning.reload()
    try:
        aiter.gemm_a8w8(*probe)
        assert not aiter.tuning.last_variant()[1].startswith("cublaslt")
    finally:
        monkeypatch.delenv("AITER_VENDOR_BLAS")
        aiter.tuning.reload()


@on_gpu
def test_amd_variants_do_not_run_on_nvidia(rng, cublaslt):
    a = to_device(rand(rng, (8, 64), "bfloat16"), CUDA)
    assert refuses(lambda: forced_run("gemm_a16w16", "hipblaslt.bf16", a, a))
