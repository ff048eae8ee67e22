"""libaiter_torch.so, the C++ kernels of torch.ops.aiter: which overloads it
serves, its argument errors, and the Python kernels that take over without it.
test_torch.py runs every op through whichever kernels are registered: the C++
ones wherever the library loaded (the wheel carries it, built for torch >=
MINIMUM_TORCH, and CI tests that wheel), the Python ones otherwise."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import aiter.torch  # noqa: E402,F401
from aiter.spec import OPS  # noqa: E402
from aiter.torch import _native  # noqa: E402
from aiter.torch._kernels import direct_kernel  # noqa: E402
from harness import assert_close, f64  # noqa: E402
from test_norm import rms_ref  # noqa: E402
from torch_samples import samples  # noqa: E402

needs_native = pytest.mark.skipif(not _native._native, reason="libaiter_torch.so not built (no torch at build time)")
MINIMUM_TORCH = _native.MINIMUM_TORCH  # the oldest torch the library serves (its TORCH_TARGET_VERSION)
assert MINIMUM_TORCH == (2, 10)  # libaiter/torch/meson.build's torch_target_version says the same


def test_the_wheels_library_serves_rmsnorm_where_torch_is_new_enough(caplog):
    """A wheel (libaiter.so.0 inside the package) carries libaiter_torch.so
    unless built with AITER_TORCH=0; where torch is new enough it must load,
    or a wheel whose library is missing or unloadable would pass every other
    test on the Python kernels."""
    import aiter
    if os.environ.get("AITER_TORCH_LIBRARY") in ("", "0"):
        pytest.skip("AITER_TORCH_LIBRARY turns the C++ kernels off")
    if _native._torch_version() < MINIMUM_TORCH:
        pytest.skip(f"torch {torch.__version__} is older than the stable ABI the library targets")
    folder = lambda path: os.path.dirname(os.path.abspath(path))  # noqa: E731
    in_wheel = folder(_native.library_path) == folder(aiter.__file__)
    if "AITER_TORCH_LIBRARY" not in os.environ and (not in_wheel or os.environ.get("AITER_TORCH") == "0"):
        pytest.skip("not a wheel's library (a build tree or system install may be built without torch)")
    if not _native._native:
        with caplog.at_level("DEBUG", logger="aiter.torch"):
            _native._load()
        pytest.fail(f"libaiter_torch.so did not load under torch {torch.__version__}: {caplog.text} "
                    "(a package built without torch's headers, e.g. `pip install .` without "
                    "-Dtorch_include_dir: AITER_TORCH=0 accepts that)")
    assert _native.kernel_of("rmsnorm", "cpu") == "C++"
    assert _native.kernel_of("rmsnorm.out", "cpu") == "C++"


@needs_native
def test_the_library_names_no_torch_library():
    """Built from torch's headers alone: the torch that loads it provides the
    symbols, so one wheel serves every torch >= MINIMUM_TORCH and auditwheel
    has no torch library to look for (or, worse, to copy into the wheel)."""
    import shutil
    path = _native._native._name
    if not shutil.which("readelf") or os.sep not in path:
        pytest.skip("no readelf, or the library was found by the loader's search (no path to read)")
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    needed = [line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line]
    assert "libaiter.so.0" in needed and not [n for n in needed if "torch" in n or "c10" in n], needed


def _planned():
    names = set()
    for op in OPS:
        names |= {op.name} if _native.plan(op, True) else set()
        names |= {f"{op.name}.out"} if op.outs and _native.plan(op, False) else set()
    return names


def test_every_overload_has_a_plan_but_moe_sortings_functional_form():
    planned = _planned()
    every = {op.name for op in OPS} | {f"{op.name}.out" for op in OPS if op.outs}
    # moe_sorting's output size is a library query (aiter_moe_sorting_max_rows): its
    # functional form keeps the Python kernel, its .out overload is C++.
    assert every - planned == {"moe_sorting"}
    assert _native.plan(next(op for op in OPS if op.name == "prefill_attention"), True).split("|")[3] == \
        "dims:0.0,0.1,2.-1/of:0 dims:0.0,0.1/code:6"  # q's [T, H] and v's head size; lse fp32 [T, H]


@needs_native
def test_every_planned_overload_is_served_by_the_library():
    assert _native.native_overloads == _planned()


def _same(a, b):
    if a.dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2):
        a, b = a.view(torch.uint8), b.view(torch.uint8)
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)


def _tensors(op, result, args):
    if not op.outs:
        return [a for a in args if isinstance(a, torch.Tensor)]  # in-place ops: the arguments, written ones included
    return list(result) if isinstance(result, tuple) else [result]


@needs_native
@pytest.mark.parametrize("name", sorted(op.name for op in OPS))
def test_cpp_kernel_matches_the_python_kernel_bitwise(gen, name):
    """The plan maps each argument where the Python kernel puts it: both call the
    same C function, so every output is bit-identical (params structs, a
    tensor that falls back to another, enum strings and int32 scalars included)."""
    import copy
    op = next(o for o in OPS if o.name == name)
    args, kwargs = samples(gen)[name]
    cpp_args, py_args = copy.deepcopy(args), copy.deepcopy(args)
    cpp = _tensors(op, getattr(torch.ops.aiter, name)(*cpp_args, **kwargs), cpp_args)
    py = _tensors(op, direct_kernel(op, returns=True)(*py_args, **kwargs), py_args)
    assert len(cpp) == len(py) and all(_same(c, p) for c, p in zip(cpp, py))


@needs_native
def test_functional_api_keeps_aiters_error_classes_through_cpp_kernels(gen):
    import aiter
    x = torch.randn(4, 96, generator=gen)
    with pytest.raises(aiter.InvalidArgumentError, match="aiter_rmsnorm: weight"):
        aiter.rmsnorm(x, torch.randn(95, generator=gen))
    with pytest.raises(aiter.UnsupportedDtypeError, match="unsupported dtype"):
        aiter.rmsnorm(x.to(torch.complex64), torch.randn(96, generator=gen))
    with pytest.raises(ValueError, match="aiter_rmsnorm: weight") as plain:  # torch.ops: torch's error types
        torch.ops.aiter.rmsnorm(x, torch.randn(95, generator=gen))
    assert not isinstance(plain.value, aiter.AiterError)


@needs_native
def test_prefill_scale_fallback_and_lse_through_the_params_struct(gen):
    q, k, v = (torch.randn(9, 4, 64, generator=gen), torch.randn(9, 2, 64, generator=gen),
               torch.randn(9, 2, 64, generator=gen))
    cu = torch.tensor([0, 4, 9], dtype=torch.int32)
    out, lse = torch.ops.aiter.prefill_attention(q, k, v, cu)
    same_out, same_lse = torch.ops.aiter.prefill_attention(q, k, v, cu, cu, 64 ** -0.5, causal=True)
    assert torch.equal(out, same_out) and torch.equal(lse, same_lse) and lse.shape == (9, 4)
    scaled, _ = torch.ops.aiter.prefill_attention(q, k, v, cu, None, 0.5, causal=False)
    assert not torch.equal(scaled, out)


@needs_native
@pytest.mark.parametrize("plan", [
    "x weight eps|ttf|@0 0 1 2|",                      # @0 with no output allocated
    "x weight eps|ttf|@0 0 1 9|like:0/of:0",           # stack index out of range
    "x weight|ttf|@0 0 1 2|like:0/of:0",               # a name missing
    "x weight eps|ttz|@0 0 1 2|like:0/of:0",           # unknown kind
    "x weight eps|ttf|@0 0 1 2|like:2/of:0",           # a shape read off a float
    "x weight eps|ttf|@0 0 1 2|like:0/of:2",           # a dtype read off a float
    "x weight eps|ttf|@0 0 1 2|dims:0.0,x/of:0",       # a malformed dim
    "x weight eps|ttf|@0 0 1 2=a:1|like:0/of:0",       # enum names on a float
    "x weight eps|ttf|@0 0 1 P:eps~2|like:0/of:0",     # a params struct where the C function takes a float
    "x weight eps|ttf|@0 0 1|like:0/of:0",             # a C parameter missing
    "x weight eps|ttf|@0 0 1 2",                       # a field missing
])
def test_a_bad_plan_is_refused_at_registration(plan):
    status = _native._native.aiter_torch_register(b"rmsnorm_probe", b"aiter_rmsnorm", plan.encode(), 0)
    assert status != 0, plan  # refused (1: does not fit the C function, -1: malformed), nothing registered
    if status < 0:
        assert b"plan" in _native._native.aiter_torch_last_error()


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


@needs_native
def test_torchs_symbols_stay_local():
    """The shim functions are reached through forwarders, not by making
    libtorch_cpu.so's exports (MKL, Sleef, ...) global for later libraries."""
    import ctypes
    assert not hasattr(ctypes.CDLL(None), "aoti_torch_get_dim")


def test_a_torch_older_than_the_stable_abi_keeps_the_python_kernels():
    code = """
import logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout)
import torch
torch.__version__ = "2.9.1+cpu"
import aiter.torch
from aiter.torch import _native
assert not _native.native_overloads and _native.kernel_of("rmsnorm", "cpu") == "Python"
x, w = torch.randn(3, 40), torch.randn(40)
torch.testing.assert_close(torch.ops.aiter.rmsnorm(x, w, 1e-6), torch.nn.functional.rms_norm(x, (40,), w, 1e-6))
"""
    env = {k: v for k, v in os.environ.items() if k != "AITER_TORCH_LIBRARY"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "torch 2.9.1+cpu predates the stable ABI" in run.stdout


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
