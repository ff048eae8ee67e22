"""libaiter_torch.so, the C++ kernels of torch.ops.aiter: which overloads it
serves, its argument errors, and the Python kernels that take over without it.
test_torch.py runs every op through whichever kernels are registered (the C++
ones where the library was built, as on the GPU machine; the Python ones in
CI, whose wheel is built without torch)."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import aiter.torch  # noqa: E402,F401
from aiter.spec import OPS  # noqa: E402
from aiter.torch import _native  # noqa: E402
from harness import assert_close, f64  # noqa: E402
from test_norm import rms_ref  # noqa: E402

needs_native = pytest.mark.skipif(not _native._native, reason="libaiter_torch.so not built (no torch at build time)")


def _planned():
    names = set()
    for op in OPS:
        names |= {op.name} if _native.plan(op, True) else set()
        names |= {f"{op.name}.out"} if op.outs and _native.plan(op, False) else set()
    return names


def test_the_benchmark_ops_have_plans_and_attention_keeps_python():
    planned = _planned()
    assert {"rmsnorm", "rmsnorm.out", "gemm_a16w16", "gemm_a16w16.out", "rope"} <= planned
    # A params struct (attention, MLA decode, fused MoE) has no plan: Python kernels serve those.
    assert "prefill_attention" not in planned and "fused_moe" not in planned


@needs_native
def test_every_planned_overload_is_served_by_the_library():
    assert _native.native_overloads == _planned()


@needs_native
@pytest.mark.gpu
def test_cuda_kernels_are_the_cpp_ones_too():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    assert _native._cuda, "torch's current-stream function was not found in libtorch_cuda.so"
    assert _native.kernel_of("rmsnorm", "cuda") == "C++"
    x, w = torch.randn(3, 40, device="cuda"), torch.randn(40, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # x and w were made on the default stream
    with torch.cuda.stream(stream):  # the kernel runs on the caller's current stream
        out = torch.ops.aiter.rmsnorm(x, w, 1e-6)
    stream.synchronize()
    assert_close(out.cpu(), rms_ref(f64(x.cpu()), f64(w.cpu()), 1e-6), "float32")


@needs_native
def test_enum_and_int32_arguments_are_checked_in_cpp(gen):
    q, pos, cache = torch.randn(3, 2, 8), torch.zeros(3, dtype=torch.int64), torch.randn(4, 8)
    with pytest.raises(ValueError, match="aiter.rope: style: expected one of 'neox', 'gptj', got 'x'"):
        torch.ops.aiter.rope(q, None, pos, cache, "x")
    gating = torch.randn(4, 8)
    with pytest.raises(ValueError, match="aiter.grouped_topk: num_expert_group: .* does not fit in 32 bits"):
        torch.ops.aiter.grouped_topk(gating, 2, 2**40, 1)


@needs_native
def test_outputs_are_allocated_by_the_table_rules(gen):
    x = torch.randn(2, 3, 64, generator=gen)
    out, scale = torch.ops.aiter.quant_per_token(x, torch.int8)
    assert out.shape == x.shape and out.dtype == torch.int8 and scale.shape == (2, 3, 1)
    assert scale.dtype == torch.float32 and out.is_contiguous()
    y = torch.ops.aiter.gemm_a16w16(torch.randn(5, 32, generator=gen), torch.randn(7, 32, generator=gen))
    assert y.shape == (5, 7) and y.dtype == torch.float32
    w, ids = torch.ops.aiter.topk_softmax(torch.randn(6, 16, generator=gen), 3)
    assert w.shape == ids.shape == (6, 3) and ids.dtype == torch.int32


def test_python_kernels_serve_without_the_library():
    code = """
import logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout)
import torch, aiter.torch
from aiter.torch import _native
assert not _native.native_overloads, _native.native_overloads
x, w = torch.randn(3, 40), torch.randn(40)
torch.save((x, w, torch.ops.aiter.rmsnorm(x, w, 1e-6)), sys.argv[1])
"""
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"aiter-native-{os.getpid()}.pt")
    env = {**os.environ, "AITER_TORCH_LIBRARY": "0"}
    run = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, check=True)
    assert "libaiter_torch.so not loaded" in run.stdout
    x, w, out = torch.load(path)
    os.unlink(path)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), "float32")


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(int(torch.randint(0, 2**31, ()).item()))
