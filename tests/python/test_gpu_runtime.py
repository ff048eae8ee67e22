"""The GPU runtime through the Python layer: the caller's stream, CUDA-graph
capture, CuPy arrays, results left on the device.  GPU only (pytest -m gpu)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import aiter
from gemm_helpers import check as check_gemm, reference as gemm_reference
from harness import QMAX, assert_close, check_quantized, f64, poisoned_on, rand, to_device

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)


def rms_ref(x, w, eps=1e-6):
    x, w = f64(x), f64(w)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def test_results_stay_on_the_device(rng):
    x = to_device(rand(rng, (8, 4096), "bfloat16"), "cuda")
    w = to_device(rand(rng, (4096,), "bfloat16"), "cuda")
    y = aiter.rmsnorm(x, w)
    assert isinstance(y, torch.Tensor) and y.device == x.device and y.dtype == torch.bfloat16
    assert_close(y, rms_ref(x, w), "bfloat16")


def test_runs_on_the_callers_stream(rng):
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # Keep the side stream busy first: a launch on any other stream would
        # read `x2` before this multiply has written it.
        x2 = x * 2
        y = aiter.rmsnorm(x2, w)
    side.synchronize()
    assert_close(y, rms_ref(x * 2, w), "bfloat16")


def test_cuda_graph_capture_and_replay(rng):
    x = torch.empty(64, 1024, device="cuda", dtype=torch.float16)
    w = torch.randn(1024, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    x.normal_()
    aiter.rmsnorm(x, w, out=out)  # load the code object before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        aiter.rmsnorm(x, w, out=out)
        aiter.add_rmsnorm(out, x, w, out=out, residual_out=x)
    for _ in range(3):  # new inputs each replay: the graph must really recompute
        x.normal_()
        first = rms_ref(x, w)
        expected_residual = f64(x) + first.astype(np.float16).astype(np.float64)
        graph.replay()
        torch.cuda.synchronize()
        assert_close(x, expected_residual, "float16", what="residual")
        assert_close(out, rms_ref(x, w), "float16")


def silu_mul_ref(h):
    gate, up = np.split(f64(h), 2, axis=-1)
    return gate / (1 + np.exp(-gate)) * up


def test_dependent_kernels_back_to_back(rng):
    """On sm_90 and up each kernel is launched before the one ahead of it has
    finished (programmatic launch) and waits for it on the GPU: a chain of ops,
    each reading what the one before wrote, with no synchronization between
    them, eagerly and as a graph; every intermediate is poisoned first, so a
    kernel that read too early would see NaN."""
    rows, hidden, n = 2048, 4096, 2048
    x = torch.randn(rows, hidden, device="cuda", dtype=torch.bfloat16)
    g = to_device(rand(rng, (hidden,), "bfloat16"), "cuda")
    w = to_device(rand(rng, (n, hidden), "bfloat16", scale=0.05), "cuda")
    fp8 = "float8_e4m3fn"
    bufs = dict(y=poisoned_on((rows, hidden), "bfloat16", "cuda"), q=poisoned_on((rows, hidden), fp8, "cuda"),
                s=poisoned_on((1,), "float32", "cuda"), h=poisoned_on((rows, n), "bfloat16", "cuda"),
                h8=poisoned_on((8, n), "bfloat16", "cuda"), act=poisoned_on((rows, n // 2), "bfloat16", "cuda"))
    fresh = {name: buf.clone() for name, buf in bufs.items()}  # the poison, to restore before each replay

    def chain():
        b = bufs
        aiter.rmsnorm(x, g, out=b["y"])
        aiter.quant_per_tensor(b["y"], fp8, out=b["q"], scale=b["s"])  # a memset and three kernels
        aiter.gemm_a16w16(b["y"], w, out=b["h"])  # tensor-core tiles
        aiter.gemm_a16w16(b["y"][:8], w, out=b["h8"])  # the skinny kernel
        aiter.silu_and_mul(b["h"], out=b["act"])

    def check():
        torch.cuda.synchronize()
        b = bufs
        assert_close(b["y"], rms_ref(x, g), "bfloat16", what="rmsnorm")
        y = f64(b["y"])
        assert np.isclose(f64(b["s"])[0], np.abs(y).max() / QMAX[fp8], rtol=1e-6), "per-tensor scale"
        check_quantized(b["q"], y, f64(b["s"])[0], fp8)
        check_gemm(b["h"], gemm_reference(b["y"], w), "bfloat16", hidden, magnitude=0.05)
        check_gemm(b["h8"], gemm_reference(b["y"][:8], w), "bfloat16", hidden, magnitude=0.05)
        assert_close(b["act"], silu_mul_ref(b["h"]), "bfloat16", what="silu_and_mul")

    chain()
    check()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()
    for _ in range(2):
        x.normal_()
        for name, buf in bufs.items():  # poisoned again in place: the graph holds these buffers
            buf.copy_(fresh[name])
        graph.replay()
        check()


def test_dependent_kernels_in_plain_stream_order():
    """AITER_PROGRAMMATIC_LAUNCH=0 launches in plain stream order (read once per
    process): the same chain in a fresh process."""
    env = dict(os.environ, AITER_PROGRAMMATIC_LAUNCH="0")
    env.pop("AITER_TEST_SHARD", None)  # the child runs the one test it is given, whatever shard this is
    test = f"{__file__}::test_dependent_kernels_back_to_back"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", test], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 passed" in run.stdout


def test_cupy_in_cupy_out(rng):
    cupy = pytest.importorskip("cupy")
    x = cupy.asarray(rand(rng, (16, 2048), "float32"))
    w = cupy.asarray(rand(rng, (2048,), "float32"))
    y = aiter.rmsnorm(x, w)
    assert isinstance(y, cupy.ndarray) and y.device.id == x.device.id
    assert_close(cupy.asnumpy(y), rms_ref(cupy.asnumpy(x), cupy.asnumpy(w)), "float32")


def test_mixed_host_and_device_tensors_are_rejected(rng):
    x = to_device(rand(rng, (4, 64), "float32"), "cuda")
    with pytest.raises(aiter.InvalidArgumentError, match="weight: expected the device of x"):
        aiter.rmsnorm(x, rand(rng, (64,), "float32"))


def test_too_long_odd_rows_get_a_clear_error():
    x = torch.randn(2, 20001, device="cuda")  # not a whole number of vectors, and too long for one block
    with pytest.raises(aiter.UnsupportedShapeError, match="too long"):
        aiter.rmsnorm(x, torch.ones(20001, device="cuda"))


def test_jax_gpu_arrays_in_and_out(rng):
    jax = pytest.importorskip("jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX sees no GPU")
    x_h, w_h = rand(rng, (32, 1024), "bfloat16"), rand(rng, (1024,), "bfloat16")
    x, w = jax.device_put(x_h, gpus[0]), jax.device_put(w_h, gpus[0])
    y = aiter.rmsnorm(x, w)
    assert isinstance(y, jax.Array) and next(iter(y.devices())).platform == "gpu"
    assert_close(np.asarray(y), rms_ref(x_h, w_h), "bfloat16")
    # JAX keeps computing with the result: it must see the finished values.
    assert_close(np.asarray(y * 2), 2 * rms_ref(x_h, w_h), "bfloat16")
