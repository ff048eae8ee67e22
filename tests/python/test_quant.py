"""Per-tensor, per-token and static quantization against float64 NumPy, with
ml_dtypes (not libaiter) rounding to fp8 for the reference.  The numerical tests
run on the CPU and (marked gpu) on a CUDA device."""
import numpy as np
import pytest

import aiter
from harness import (FLOAT_DTYPES, QMAX, QUANT_DTYPES, check_quantized, f64, np_dtype, on_host,
                     ordinal, poisoned, poisoned_on, to_device)
from harness import quant_reference as reference
# 2500: three 1024-column tiles; on the GPU, per tensor, up to 8192 elements stay in
# registers in the one-block kernel, (3, 4000) is read twice by it.
SHAPES = [(1, 7), (7, 111), (3, 5, 500), (2, 2500), (1, 8192), (3, 4000)]


def quant_input(rng, shape, dtype):
    """Normal values with a few outliers, so that amax sits well above the bulk."""
    x = rng.standard_normal(shape) * 2.0
    x.ravel()[rng.integers(0, x.size, size=max(1, x.size // 500))] *= 40.0
    return x.astype(np_dtype(dtype))


def expected_scale(amax):
    return np.where(amax == 0, 1.0, amax)


def nan_scale(shape, device):
    return to_device(np.full(shape, np.nan, np.float32), device)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_per_tensor(rng, device, qdtype, dtype, shape):
    x = quant_input(rng, shape, dtype)
    out, scale = poisoned_on(shape, qdtype, device), nan_scale((1,), device)
    got_out, got_scale = aiter.quant_per_tensor(to_device(x, device), qdtype, out=out, scale=scale)
    assert got_out is out and got_scale is scale
    x64, scale = f64(x), f64(scale)
    np.testing.assert_allclose(scale[0], np.abs(x64).max() / QMAX[qdtype], rtol=2e-7)
    check_quantized(on_host(out), x64, scale[0], qdtype)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_per_token(rng, device, qdtype, dtype, shape):
    x = quant_input(rng, shape, dtype)
    x.reshape(-1, shape[-1])[0] = 0  # an all-zero row: scale 1, zeros out
    out, scale = poisoned_on(shape, qdtype, device), nan_scale(shape[:-1] + (1,), device)
    aiter.quant_per_token(to_device(x, device), qdtype, out=out, scale=scale)
    x64, scale = f64(x), f64(scale)
    amax = np.abs(x64).max(-1, keepdims=True)
    np.testing.assert_allclose(scale, np.where(amax == 0, 1.0, amax / QMAX[qdtype]), rtol=2e-7)
    assert scale.reshape(-1)[0] == 1.0
    check_quantized(on_host(out), x64, scale, qdtype)


# Row widths that take each path of the GPU per-token kernels: the row held in
# registers (whole 8-element vectors, up to 8192 / 16384 / 32768 elements), and
# rows read twice (longer, or not whole vectors).
WIDTHS = [(8, "int8"), (4096, "float8_e4m3fn"), (12288, "float8_e4m3fnuz"), (32768, "float8_e5m2"),
          (40000, "float8_e4m3fn"), (40001, "int8")]


@pytest.mark.parametrize("width,qdtype", WIDTHS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_per_token_widths(rng, device, dtype, width, qdtype):
    x = quant_input(rng, (3, width), dtype)
    out, scale = poisoned_on(x.shape, qdtype, device), nan_scale((3, 1), device)
    aiter.quant_per_token(to_device(x, device), qdtype, out=out, scale=scale)
    x64, scale = f64(x), f64(scale)
    np.testing.assert_allclose(scale, np.abs(x64).max(-1, keepdims=True) / QMAX[qdtype], rtol=2e-7)
    check_quantized(on_host(out), x64, scale, qdtype)


@pytest.mark.parametrize("qdtype", ["float8_e4m3fn", "int8"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("rows", [16, 320])
def test_per_tensor_large(rng, device, dtype, qdtype, rows):
    """Enough elements for many blocks on the GPU, the largest one in the middle:
    16 and 320 rows of 4096, on an H100 the resident kernel with fewer blocks than
    SMs and with one an SM (320 x 4096 fp32: exactly 48 KiB of shared memory a
    block); test_per_tensor_gpu_paths takes the four-step op through the same sizes."""
    x = quant_input(rng, (rows, 4096), dtype)
    largest = (rows // 2 + 1, 1234)
    x[largest] = -3e3
    out, scale = poisoned_on(x.shape, qdtype, device), nan_scale((1, 1), device)
    aiter.quant_per_tensor(to_device(x, device), qdtype, out=out, scale=scale)
    x64, scale = f64(x), f64(scale)
    assert scale[0, 0] == np.float32(-x64[largest]) / np.float32(QMAX[qdtype])
    check_quantized(on_host(out), x64, scale[0, 0], qdtype)


# The GPU's dynamic per-tensor paths past the one-block kernel.  On an H100 the
# resident kernel (x and out contiguous in whole 16-byte pieces, x up to 90 MB)
# with uneven stretches all in shared memory (2048 x 4104), with stretches
# longer than shared memory holds (4096 x 4096: the rest read again), and with
# fewer blocks than SMs (16 x 4096); the four-step op for rows apart (in a
# buffer 8 columns wider: its vector kernels, with fewer 4096-element tiles than
# SMs and with more) and for rows not in whole pieces (333 columns: its scalar kernels).
PATH_CASES = [((2048, 4104), "bfloat16", 0), ((4096, 4096), "bfloat16", 0), ((4096, 4096), "float32", 0),
              ((16, 4096), "float16", 0), ((16, 4096), "bfloat16", 8), ((320, 4096), "float32", 8),
              ((301, 333), "float16", 0)]


@pytest.mark.parametrize("qdtype", ["float8_e4m3fn", "int8"])
@pytest.mark.parametrize("shape,dtype,pad", PATH_CASES)
def test_per_tensor_gpu_paths(rng, device, dtype, qdtype, shape, pad):
    if device == "cpu":
        pytest.skip("sizes chosen for the GPU's kernels; test_per_tensor covers the CPU backend")
    rows, cols = shape
    buffer = quant_input(rng, (rows, cols + pad), dtype)
    x = buffer[:, :cols]
    largest = tuple(int(rng.integers(0, n)) for n in shape)  # in any block's stretch
    x[largest] = 5e3 * rng.choice([-1.0, 1.0])
    out, scale = poisoned_on(shape, qdtype, device), nan_scale((1,), device)
    aiter.quant_per_tensor(to_device(buffer, device)[:, :cols], qdtype, out=out, scale=scale)
    x64, scale = f64(x), f64(scale)
    assert scale[0] == np.float32(abs(x64[largest])) / np.float32(QMAX[qdtype])
    check_quantized(on_host(out), x64, scale[0], qdtype)


# Static shapes for each GPU quantizing kernel: an odd element count (one element a
# thread), fewer 4096-element tiles than SMs (two a thread), more (eight, twice).
@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(5, 333), (16, 4096), (320, 4096)])
def test_static(rng, device, qdtype, dtype, shape):
    x = quant_input(rng, shape, dtype)
    x64 = f64(x)
    # A scale that saturates the largest few percent of the values.
    s = np.float32(np.quantile(np.abs(x64), 0.97) / QMAX[qdtype])
    out = poisoned_on(x.shape, qdtype, device)
    scale = to_device(np.array([[s]], np.float32), device)
    assert aiter.quant_per_tensor_static(to_device(x, device), scale, qdtype, out=out) is out
    out = on_host(out)
    check_quantized(out, x64, float(s), qdtype)
    saturated = np.abs(x64 / float(s)) > QMAX[qdtype] * 1.01
    assert saturated.any()
    np.testing.assert_array_equal(f64(out)[saturated], np.sign(x64[saturated]) * QMAX[qdtype])


def test_rounds_ties_to_even(device):
    x = to_device(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, 1.0625, 1.1875, -1.0625], np.float32), device)
    one = to_device(np.ones((1,), np.float32), device)
    np.testing.assert_array_equal(on_host(aiter.quant_per_tensor_static(x, one, "int8")),
                                  [0, 2, 2, 0, -2, 126, 1, 1, -1])
    # e4m3 steps of 1/8 above 1: the midpoints round to the even mantissa.
    np.testing.assert_array_equal(f64(aiter.quant_per_tensor_static(x[6:], one, "float8_e4m3fn")),
                                  [1.0, 1.25, -1.0])


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
def test_nan_and_inf(device, qdtype):
    """NaN is skipped by amax and quantizes to NaN (fp8) or 0 (int8); inf makes the scale inf."""
    x = np.array([[1.0, np.nan, -4.0, 2.0], [3.0, np.inf, -1.0, 0.0]], np.float32)
    nan_code = 0 if qdtype == "int8" else np.nan
    out, scale = aiter.quant_per_token(to_device(x, device), qdtype)
    out, scale = on_host(out), f64(scale)
    row_scale = np.float32(4.0) / np.float32(QMAX[qdtype])
    assert scale[0, 0] == row_scale and scale[1, 0] == np.inf
    finite = [0, 2, 3]
    check_quantized(out[:1, finite], f64(x)[:1, finite], float(row_scale), qdtype)
    np.testing.assert_array_equal(f64(out)[0, 1], nan_code)
    np.testing.assert_array_equal(f64(out)[1], [0, nan_code, 0, 0])  # x * (1 / inf), and inf * 0
    tensor_out, tensor_scale = aiter.quant_per_tensor(to_device(x[:1], device), qdtype)
    assert f64(tensor_scale)[0] == row_scale
    np.testing.assert_array_equal(on_host(tensor_out).view(np.uint8), out[:1].view(np.uint8))


def test_all_zero_and_empty(device):
    out, scale = aiter.quant_per_tensor(to_device(np.zeros((3, 9), np.float16), device), "int8")
    scale, out = on_host(scale), on_host(out)
    assert scale.shape == (1,) and scale.dtype == np.float32 and scale[0] == 1.0
    assert (out == 0).all()
    out, scale = aiter.quant_per_tensor(to_device(np.zeros((0, 9), np.float32), device))
    assert tuple(out.shape) == (0, 9) and on_host(scale)[0] == 1.0
    out, scale = aiter.quant_per_token(to_device(np.zeros((4, 0), np.float32), device), "float8_e4m3fnuz")
    assert tuple(out.shape) == (4, 0) and tuple(scale.shape) == (4, 1) and (on_host(scale) == 1.0).all()


# Column offsets of the views: 10 starts rows off a 16-byte boundary (the GPU's
# scalar kernels), 16 keeps x's rows 16-byte and out's 8-byte aligned (its
# vector kernels, with rows apart).
@pytest.mark.parametrize("offset", [10, 16])
@pytest.mark.parametrize("qdtype", ["int8", "float8_e4m3fn"])
def test_strided_rows(rng, device, qdtype, offset):
    big_x = to_device(quant_input(rng, (9, 300), "bfloat16"), device)
    x = big_x[::2, offset:offset + 256]  # rows 600 elements apart
    big_out = poisoned_on((5, 400), qdtype, device)
    out = big_out[:, 96 + offset:352 + offset]
    x64 = f64(x)
    _, scale = aiter.quant_per_token(x, qdtype, out=out)
    check_quantized(on_host(out), x64, f64(scale), qdtype)
    big = on_host(big_out)
    outside = np.concatenate([big[:, :96 + offset].ravel(), big[:, 352 + offset:].ravel()])
    np.testing.assert_array_equal(ordinal(outside, qdtype), ordinal(poisoned(outside.shape, qdtype), qdtype))
    _, scale = aiter.quant_per_tensor(x, qdtype, out=out)
    check_quantized(on_host(out), x64, float(f64(scale)[0]), qdtype)


def test_many_strided_rows(rng, device):
    """More rows than the GPU's per-tensor grid has blocks across rows."""
    big_x = to_device(quant_input(rng, (1500, 24), "float16"), device)
    x = big_x[:, :16]
    out, scale = aiter.quant_per_tensor(x, "float8_e5m2")
    check_quantized(on_host(out), f64(x), float(f64(scale)[0]), "float8_e5m2")
    out = poisoned_on((1500, 16), "float8_e4m3fn", device)
    s = np.float32(0.01)
    aiter.quant_per_tensor_static(x, to_device(np.array([s]), device), "float8_e4m3fn", out=out)
    check_quantized(on_host(out), f64(x), float(s), "float8_e4m3fn")


def test_allocates_and_accepts_framework_dtypes(rng):
    x = quant_input(rng, (2, 3, 40), "float32")
    out, scale = aiter.quant_per_token(x, np_dtype("float8_e4m3fnuz"))
    assert out.dtype == np_dtype("float8_e4m3fnuz") and scale.shape == (2, 3, 1)
    check_quantized(out, f64(x), f64(scale), "float8_e4m3fnuz")
    out, scale = aiter.quant_per_tensor(x, np.int8, scale=np.full((1, 1), np.nan, np.float32))
    assert out.dtype == np.int8 and scale.shape == (1, 1)
    check_quantized(out, f64(x), float(scale[0, 0]), "int8")


def test_torch(rng, device):
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(quant_input(rng, (6, 50), "float32")).to(device, torch.float16)
    out, scale = aiter.quant_per_token(x, torch.float8_e4m3fn)
    assert out.dtype == torch.float8_e4m3fn and scale.dtype == torch.float32 and scale.shape == (6, 1)
    assert out.device == x.device and scale.device == x.device
    check_quantized(on_host(out), f64(x), f64(scale), "float8_e4m3fn")


def test_rejects_bad_arguments(rng):
    x = quant_input(rng, (4, 64), "float32")
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype: expected one of int8"):
        aiter.quant_per_tensor(x, "float16")
    with pytest.raises(aiter.UnsupportedDtypeError, match="dtype: expected one of"):
        aiter.quant_per_token(x, "float7")
    with pytest.raises(aiter.InvalidArgumentError, match=r"out: expected dtype int8 \(the dtype argument\)"):
        aiter.quant_per_tensor(x, "int8", out=poisoned((4, 64), "float8_e4m3fn"))
    with pytest.raises(aiter.InvalidArgumentError, match="out: expected the shape of x"):
        aiter.quant_per_token(x, "int8", out=poisoned((4, 63), "int8"))
    with pytest.raises(aiter.UnsupportedDtypeError, match="x: expected dtype"):
        aiter.quant_per_tensor(x.astype(np.int32), "int8")
    with pytest.raises(aiter.UnsupportedDtypeError, match="scale: expected dtype float32"):
        aiter.quant_per_tensor(x, scale=np.zeros((1,), np.float64))
    with pytest.raises(aiter.InvalidArgumentError, match=r"scale: expected shape \[1\] or \[1, 1\]"):
        aiter.quant_per_tensor(x, scale=np.zeros((4, 1), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match=r"scale: expected shape\[0\] == 4"):
        aiter.quant_per_token(x, scale=np.zeros((3, 1), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="one scale per row"):
        aiter.quant_per_token(x, scale=np.zeros((4, 2), np.float32))
    with pytest.raises(aiter.InvalidArgumentError, match="scale: expected a compact"):
        aiter.quant_per_token(x, scale=np.zeros((4, 2), np.float32)[:, :1])
    with pytest.raises(aiter.InvalidArgumentError, match="x: expected unit stride"):
        aiter.quant_per_tensor(np.asfortranarray(x))
    for bad in (0.0, -1.0, np.nan, np.inf, 1e-40):
        with pytest.raises(aiter.InvalidArgumentError, match="scale: expected a finite value"):
            aiter.quant_per_tensor_static(x, np.array([bad], np.float32), "int8")
    with pytest.raises(aiter.InvalidArgumentError, match=r"scale: expected shape \[1\] or \[1, 1\]"):
        aiter.quant_per_tensor_static(x, np.ones((1, 1, 1), np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64, 1000), (4096, 4096)])
def test_cuda_graph_capture(rng, shape):
    """The GPU ops allocate nothing and never wait on the host, so a CUDA graph can
    hold them; replays with new inputs give new scales and values.  4096 x 4096
    takes, on an H100, the per-tensor op's resident kernel: a cooperative launch
    whose blocks meet at a grid barrier and count in the scale slot, which the
    kernel zeroes itself: NaN before each replay, it must end as the scale."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    qdtype = "float8_e4m3fn"
    x = to_device(quant_input(rng, shape, "bfloat16"), "cuda")
    out_t, scale_t = poisoned_on(shape, qdtype, "cuda"), nan_scale((1,), "cuda")
    out_r, scale_r = poisoned_on(shape, qdtype, "cuda"), nan_scale((shape[0], 1), "cuda")
    out_s, given = poisoned_on(shape, qdtype, "cuda"), to_device(np.array([0.05], np.float32), "cuda")

    def ops():
        aiter.quant_per_tensor(x, qdtype, out=out_t, scale=scale_t)
        aiter.quant_per_token(x, qdtype, out=out_r, scale=scale_r)
        aiter.quant_per_tensor_static(x, given, qdtype, out=out_s)

    ops()  # loads the code object before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ops()
    for _ in range(2):
        fresh = quant_input(rng, shape, "bfloat16")
        x.copy_(to_device(fresh, "cuda"))
        for out in (out_t, out_r, out_s):  # poisoned again: a replay must write every element
            out.copy_(poisoned_on(shape, qdtype, "cuda"))
        scale_t.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        x64 = f64(fresh)
        np.testing.assert_allclose(f64(scale_t)[0], np.abs(x64).max() / QMAX[qdtype], rtol=2e-7)
        check_quantized(on_host(out_t), x64, f64(scale_t)[0], qdtype)
        np.testing.assert_allclose(f64(scale_r), np.abs(x64).max(-1, keepdims=True) / QMAX[qdtype], rtol=2e-7)
        check_quantized(on_host(out_r), x64, f64(scale_r), qdtype)
        check_quantized(on_host(out_s), x64, float(np.float32(0.05)), qdtype)


@pytest.mark.gpu
@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
def test_static_scale_unchecked_on_gpu(qdtype):
    """A GPU scale cannot be read before the launch: a bad one gives what
    x * (1 / scale) quantizes to, as include/aiter/quant.h says."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    x = to_device(np.array([[1.5, -2.0, 0.0, 300.0]], np.float32), "cuda")
    qmax, nan_code = QMAX[qdtype], 0 if qdtype == "int8" else np.nan

    def run(s):
        return f64(aiter.quant_per_tensor_static(x, to_device(np.array([s], np.float32), "cuda"), qdtype))[0]

    np.testing.assert_array_equal(run(0.0), [qmax, -qmax, nan_code, qmax])  # 1/0 = inf, 0 * inf = NaN
    np.testing.assert_array_equal(run(np.inf), [0, 0, 0, 0])
    np.testing.assert_array_equal(run(np.nan), [nan_code] * 4)
    np.testing.assert_array_equal(run(-1.0), -run(1.0))


@pytest.mark.gpu
@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_gpu_rounds_like_cpu(rng, dtype, qdtype):
    """Both backends are checked against float64 above, with one step of slack at
    near-ties; here the GPU must give the CPU's scales and bytes exactly, exact ties
    (a power-of-two static scale) included."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    x = quant_input(rng, (33, 1000), dtype)
    x[3] = 0
    x_gpu = to_device(x, "cuda")

    def same(cpu, gpu):
        np.testing.assert_array_equal(np.asarray(cpu).view(np.uint8), on_host(gpu).view(np.uint8))

    for op in (aiter.quant_per_tensor, aiter.quant_per_token):
        (out_c, scale_c), (out_g, scale_g) = op(x, qdtype), op(x_gpu, qdtype)
        np.testing.assert_array_equal(scale_c, on_host(scale_g))
        same(out_c, out_g)
    for s in (np.float32(2.0 ** -3), np.float32(np.abs(f64(x)).max() / QMAX[qdtype] / 3)):
        scale = np.array([s], np.float32)
        same(aiter.quant_per_tensor_static(x, scale, qdtype),
             aiter.quant_per_tensor_static(x_gpu, to_device(scale, "cuda"), qdtype))


# ---- the portable path, where this run takes the AVX-512 one ---------------------------
def test_portable_path_in_a_subprocess():
    """The per-token and per-tensor tests above again with AITER_CPU_ISA=portable
    (read once per process): the scalar widening, amax and rounding, which a
    machine with AVX-512 would otherwise never run."""
    import os
    import subprocess
    import sys
    from gemm_helpers import ISA_LEVELS, cpu_isa
    if ISA_LEVELS.index(cpu_isa()) < ISA_LEVELS.index("avx512"):
        pytest.skip("this run already takes the portable path")
    env = dict(os.environ, AITER_CPU_ISA="portable")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "(per_token or per_tensor) and not portable and cpu"], env=env, capture_output=True,
                          text=True, timeout=600, cwd=os.path.dirname(__file__))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
