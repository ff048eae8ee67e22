"""The GPU runtime through the Python layer: the caller's stream, CUDA-graph
capture, CuPy arrays, results left on the device.  GPU only (pytest -m gpu)."""
import numpy as np
import pytest

import aiter
from harness import assert_close, f64, rand, to_device

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
