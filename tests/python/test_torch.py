"""aiter.torch: every op as torch.ops.aiter.<name>, checked by opcheck, traced
by torch.compile / torch.export / torch.jit.trace, on CPU tensors."""
import copy
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import aiter  # noqa: E402
import aiter.torch  # noqa: E402,F401
from aiter.spec import OPS  # noqa: E402
from aiter.torch._functional import EAGER  # noqa: E402
from harness import assert_close, f64  # noqa: E402
from test_norm import rms_ref  # noqa: E402
from torch_samples import check, rope_checked, samples  # noqa: E402

NAMES = [op.name for op in OPS]


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(int(torch.randint(0, 2**31, ()).item()))


def test_import_aiter_does_not_import_torch():
    code = "import sys, aiter; aiter.rmsnorm; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_op_is_registered_and_has_a_sample(gen):
    assert sorted(samples(gen)) == sorted(NAMES)
    for name in NAMES:
        assert hasattr(torch.ops.aiter, name)


_FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2)
_ALL_CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def opcheck(op, args, kwargs):
    """torch.library.opcheck, but for fp8 inputs its schema test (torch.allclose
    of the arguments, which CPU fp8 lacks) is replaced by a bitwise check that
    the fp8 inputs, read-only in every schema, are unchanged."""
    fp8 = [a for a in args if isinstance(a, torch.Tensor) and a.dtype in _FP8]
    fp8_out = [a for a in kwargs.values() if isinstance(a, torch.Tensor) and a.dtype in _FP8]
    if not fp8 and not fp8_out:
        torch.library.opcheck(op, args, kwargs)
        return
    before = [a.view(torch.uint8).clone() for a in fp8]
    op(*args, **kwargs)
    assert all(torch.equal(a.view(torch.uint8), b) for a, b in zip(fp8, before)), "an fp8 input was written"
    torch.library.opcheck(op, args, kwargs, test_utils=_ALL_CHECKS[1:])


@pytest.mark.parametrize("name", NAMES)
def test_opcheck(gen, name):
    args, kwargs = samples(gen)[name]
    opcheck(getattr(torch.ops.aiter, name).default, args, kwargs)


@pytest.mark.parametrize("name", [op.name for op in OPS if op.outs])
def test_opcheck_out_overload(gen, name):
    args, kwargs = samples(gen)[name]
    fresh = getattr(torch.ops.aiter, name)(*copy.deepcopy(args), **kwargs)
    fresh = fresh if isinstance(fresh, tuple) else (fresh,)
    op = next(o for o in OPS if o.name == name)
    outs = {o.name: torch.full_like(t, float("nan")) if t.is_floating_point() else torch.full_like(t, -128)
            for o, t in zip(op.outs, fresh)}
    opcheck(getattr(torch.ops.aiter, name).out, args, {**kwargs, **outs})


@pytest.mark.parametrize("name", NAMES)
def test_results_match_float64_references_and_out_overload(gen, name):
    args, kwargs = samples(gen)[name]
    result = getattr(torch.ops.aiter, name)(*copy.deepcopy(args), **kwargs)
    check(name, args, result)
    op = next(o for o in OPS if o.name == name)
    if not op.outs:
        return
    fresh = result if isinstance(result, tuple) else (result,)
    outs = {o.name: torch.full_like(t, float("nan")) if t.is_floating_point() else torch.full_like(t, -128)
            for o, t in zip(op.outs, fresh)}
    assert getattr(torch.ops.aiter, name).out(*copy.deepcopy(args), **kwargs, **outs) is None
    for o, t in zip(op.outs, fresh):
        assert torch.equal(outs[o.name], t), f"{name}.out: {o.name} differs from the functional form"


def _tensors(result):
    return [t for t in (result if isinstance(result, tuple) else (result,)) if isinstance(t, torch.Tensor)]


@pytest.mark.parametrize("name", sorted(n for n in EAGER if hasattr(getattr(aiter, n, None), "__wrapped__")))
def test_eager_shortcut_matches_the_op_and_steps_aside_under_a_mode(gen, name):
    """aiter.<name>(torch tensors) skips the dispatcher in plain eager calls; it
    must give the registered op's results, and any dispatch mode must still see
    the op (as torch.compile, export and jit.trace do)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.name())
            return func(*args, **(kwargs or {}))

    args, kwargs = samples(gen)[name]
    op_args, api_args = copy.deepcopy(args), copy.deepcopy(args)
    via_op = getattr(torch.ops.aiter, name)(*op_args, **kwargs)
    via_api = getattr(aiter, name)(*api_args, **kwargs)
    expected = _tensors(via_op) or [a for a in op_args if isinstance(a, torch.Tensor)]
    got = _tensors(via_api) if via_op is not None else [a for a in api_args if isinstance(a, torch.Tensor)]
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert torch.equal(e, g), f"aiter.{name}: the eager shortcut differs from torch.ops.aiter.{name}"
    with Seen():
        getattr(aiter, name)(*copy.deepcopy(args), **kwargs)
    assert any(n.startswith(f"aiter::{name}") for n in Seen.names), Seen.names


def test_rope_rotates_in_place(gen):
    rope_checked(gen)


@pytest.mark.parametrize("name", NAMES)
def test_meta_tensors_propagate_shapes(gen, name):
    args, kwargs = samples(gen)[name]
    real = getattr(torch.ops.aiter, name)(*copy.deepcopy(args), **kwargs)
    meta_args = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
    meta = getattr(torch.ops.aiter, name)(*meta_args, **kwargs)
    real, meta = (real, meta) if isinstance(real, tuple) else ((real,), (meta,))
    for r, m in zip(real, meta):
        if r is None:
            assert m is None
            continue
        assert m.device.type == "meta" and m.shape == r.shape and m.dtype == r.dtype


@pytest.mark.parametrize("name", ["rmsnorm", "gemm_a16w16", "silu_and_mul", "rope"])
def test_requires_grad_is_refused(gen, name):
    args, kwargs = samples(gen)[name]
    args = list(copy.deepcopy(args))
    args[0] = args[0].float().requires_grad_() if name != "rope" else args[0].requires_grad_()
    if name == "gemm_a16w16":
        args[1], args[2] = args[1].float(), args[2].float()
    if name == "rmsnorm":
        args[1] = args[1].float()
    with pytest.raises(RuntimeError, match=f"aiter.{name}: .* requires grad.*no derivative"):
        getattr(torch.ops.aiter, name)(*args, **kwargs)
    with torch.no_grad():
        getattr(torch.ops.aiter, name)(*args, **kwargs)


# A torch.ops call raises ValueError for a bad argument: aiter's own error class
# from the Python kernels (a ValueError too), a plain ValueError from the C++
# ones of libaiter_torch.so (torch's errors cannot carry aiter's classes).
def test_bad_argument_names_the_op_and_argument(gen):
    x = torch.randn(4, 96)
    with pytest.raises(ValueError, match="aiter_rmsnorm: weight"):
        torch.ops.aiter.rmsnorm(x, torch.randn(95))
    with pytest.raises(ValueError, match="style"):
        torch.ops.aiter.rope(torch.randn(3, 2, 8), None, torch.zeros(3, dtype=torch.int64), torch.randn(4, 8), "x")


def llama_block(x, p, positions, cos_sin, cu_seqlens):
    """One decoder layer of a Llama-style model, libaiter ops only: [T, hidden]."""
    t, heads, kv_heads, d = x.shape[0], 4, 2, 64
    h = torch.ops.aiter.rmsnorm(x, p["ln1"], 1e-5)
    qkv = torch.ops.aiter.gemm_a16w16(h, p["wqkv"])
    q = qkv[:, :heads * d].reshape(t, heads, d).contiguous()
    k = qkv[:, heads * d:(heads + kv_heads) * d].reshape(t, kv_heads, d).contiguous()
    v = qkv[:, (heads + kv_heads) * d:].reshape(t, kv_heads, d).contiguous()
    torch.ops.aiter.rope(q, k, positions, cos_sin, "neox")
    attn, _ = torch.ops.aiter.prefill_attention(q, k, v, cu_seqlens)
    o = torch.ops.aiter.gemm_a16w16(attn.reshape(t, heads * d), p["wo"])
    h2, residual = torch.ops.aiter.add_rmsnorm(o, x, p["ln2"], 1e-5)
    up = torch.ops.aiter.gemm_a16w16(h2, p["wgu"])
    act = torch.ops.aiter.silu_and_mul(up)
    return torch.ops.aiter.gemm_a16w16(act, p["wdown"]) + residual


def llama_inputs(g, t=11, hidden=256, ffn=344):
    def rnd(*s):
        return (torch.randn(*s, generator=g) / s[-1] ** 0.5).float()
    p = {"ln1": 1 + rnd(hidden) / 10, "ln2": 1 + rnd(hidden) / 10, "wqkv": rnd((4 + 4) * 64, hidden),
         "wo": rnd(hidden, 4 * 64), "wgu": rnd(2 * ffn, hidden), "wdown": rnd(hidden, ffn)}
    from test_rope import reference_cache
    cos_sin = torch.from_numpy(reference_cache(64, 64)).float()
    cu = torch.tensor([0, 4, t], dtype=torch.int32)
    return torch.randn(t, hidden, generator=g), p, torch.cat([torch.arange(4), torch.arange(t - 4)]), cos_sin, cu


def test_compiled_llama_block_has_no_graph_break_and_matches_eager(gen):
    torch._dynamo.reset()
    args = llama_inputs(gen)
    eager = llama_block(*args)
    compiled = torch.compile(llama_block, fullgraph=True)(*args)
    assert_close(compiled, f64(eager), "float32", rtol=1e-4, atol=1e-4)
    explanation = torch._dynamo.explain(llama_block)(*args)
    assert explanation.graph_break_count == 0
    assert "aiter.prefill_attention" in str(explanation.graphs[0].graph)


def test_functional_api_under_torch_compile(gen):
    torch._dynamo.reset()

    def f(x, w, r):
        out = aiter.rmsnorm(x, w, 1e-6)
        normed, res = aiter.add_rmsnorm(out, r, w)
        q, scale = aiter.quant_per_token(normed, "int8")
        return aiter.silu_and_mul(res) , q, scale

    x, w, r = torch.randn(5, 96, generator=gen), torch.randn(96, generator=gen), torch.randn(5, 96, generator=gen)
    eager = f(x, w, r)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w, r)
    for c, e in zip(compiled, eager):
        assert torch.equal(c, e)
    assert_close(aiter.rmsnorm(x, w, 1e-6), rms_ref(f64(x), f64(w), 1e-6), "float32")


def test_functional_out_argument_under_torch_compile(gen):
    torch._dynamo.reset()

    def f(x, w, out):
        aiter.rmsnorm(x, w, out=out)
        return out * 2

    x, w = torch.randn(3, 64, generator=gen), torch.randn(64, generator=gen)
    out = torch.full_like(x, float("nan"))
    result = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w, out)
    assert_close(out, rms_ref(f64(x), f64(w), 1e-6), "float32")
    assert_close(result, 2 * rms_ref(f64(x), f64(w), 1e-6), "float32")


class _Norm(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(hidden) + 0.5, requires_grad=False)

    def forward(self, x):
        return torch.ops.aiter.silu_and_mul(torch.ops.aiter.rmsnorm(x, self.weight, 1e-6))


def test_torch_export_keeps_the_ops(gen):
    module = _Norm(96)
    x = torch.randn(4, 96, generator=gen)
    exported = torch.export.export(module, (x,))
    targets = {str(n.target) for n in exported.graph.nodes if n.op == "call_function"}
    assert {"aiter.rmsnorm.default", "aiter.silu_and_mul.default"} <= targets
    fresh = torch.randn(4, 96, generator=gen)
    assert torch.equal(exported.module()(fresh), module(fresh))


def test_jit_trace_keeps_the_ops(gen):
    module = _Norm(64)
    traced = torch.jit.trace(module, torch.randn(3, 64, generator=gen))
    assert "aiter::rmsnorm" in str(traced.graph)
    fresh = torch.randn(3, 64, generator=gen)
    assert_close(traced(fresh), f64(module(fresh)), "float32", rtol=0, atol=0)


def test_functional_attention_on_torch_tensors_eager_and_compiled(gen):
    torch._dynamo.reset()
    from test_attention import decode_ref, prefill_ref
    cu = torch.tensor([0, 5, 12], dtype=torch.int32)
    q, k, v = (torch.randn(12, h, 64, generator=gen) for h in (4, 2, 2))
    kc, vc = torch.randn(6, 16, 2, 64, generator=gen), torch.randn(6, 16, 2, 64, generator=gen)
    table, lens = torch.tensor([[4, 1], [0, 2]], dtype=torch.int32), torch.tensor([17, 30], dtype=torch.int32)
    qd = torch.randn(2, 4, 64, generator=gen)
    workspace = torch.empty(aiter.paged_decode_workspace_size(qd, kc, table) // 4 + 1)

    def f(q, k, v, qd, kc, vc, workspace):
        out, lse = aiter.prefill_attention(q, k, v, cu, return_lse=True, softmax_scale=0.1)
        plain = aiter.prefill_attention(q, k, v, cu, softmax_scale=0.1)
        decoded = aiter.paged_decode_attention(qd, kc, vc, table, lens)
        split = aiter.paged_decode_attention(qd, kc, vc, table, lens, workspace=workspace)
        return out, lse, plain, decoded, split

    eager = f(q, k, v, qd, kc, vc, workspace)
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v, qd, kc, vc, workspace)
    ref_out, ref_lse = prefill_ref(q, k, v, cu.tolist(), cu.tolist(), 0.1, with_lse=True)
    ref_dec = decode_ref(qd, kc, vc, table.numpy(), lens.tolist(), 1 / 8)
    for results in (eager, compiled):
        assert_close(results[0], ref_out, "float32")
        assert_close(results[1], ref_lse, "float32")
        assert_close(results[2], ref_out, "float32")
        assert_close(results[3], ref_dec, "float32")
        assert_close(results[4], ref_dec, "float32", rtol=1e-4, atol=1e-4)


def test_functional_reshape_and_cache_returns_the_caches(gen):
    key, value = torch.randn(3, 2, 64, generator=gen), torch.randn(3, 2, 64, generator=gen)
    kc, vc = torch.zeros(2, 16, 2, 64), torch.zeros(2, 16, 2, 64)
    k_out, v_out = aiter.reshape_and_cache(key, value, kc, vc, torch.tensor([0, 31, -1]))
    assert k_out is kc and v_out is vc
    assert torch.equal(kc[0, 0], key[0]) and torch.equal(kc[1, 15], key[1]) and torch.equal(vc[1, 15], value[1])
    written = torch.zeros(32, dtype=torch.bool)
    written[[0, 31]] = True
    assert (kc.reshape(32, -1)[~written] == 0).all() and (vc.reshape(32, -1)[~written] == 0).all()


def test_torch_imported_after_aiter_then_compiled_first():
    # aiter.torch is not loaded: a fullgraph compile names the fix; a plain
    # compile falls back to eager for the call, which loads aiter.torch.
    code = """
import aiter, sys
import torch
assert "aiter.torch" not in sys.modules
x, w = torch.randn(3, 64), torch.randn(64)
try:
    torch.compile(lambda x, w: aiter.rmsnorm(x, w) * 2, fullgraph=True, backend="aot_eager")(x, w)
    raise SystemExit("no error")
except Exception as e:
    assert "import aiter.torch" in str(e), e
torch._dynamo.reset()
y = torch.compile(lambda x, w: aiter.rmsnorm(x, w) * 2, backend="aot_eager")(x, w)
assert "aiter.torch" in sys.modules
assert torch.allclose(y, 2 * torch.ops.aiter.rmsnorm(x, w, 1e-6))
"""
    subprocess.run([sys.executable, "-c", code], check=True)


# OpImpl rows of libaiter/ops/*.cpp with no GPU entry: registered all the same,
# their CUDA call must raise the library's error.
NO_GPU_KERNEL = set()


def _cuda_or_skip():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")


def _on_cuda(name, args):
    args = tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in args)
    if name == "paged_decode_attention_split_kv":  # the GPU's split may need more workspace than the CPU's
        size = aiter.paged_decode_workspace_size(args[0], args[1], args[3])
        args = args[:5] + (torch.empty(max(size // 4, 1), device="cuda"),) + args[6:]
    return args


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_cuda_opcheck_and_results(gen, name):
    _cuda_or_skip()
    args, kwargs = samples(gen)[name]
    args = _on_cuda(name, args)
    op = getattr(torch.ops.aiter, name)
    if name in NO_GPU_KERNEL:
        with pytest.raises(RuntimeError, match="no GPU backend"):  # NoKernelError is a RuntimeError
            op(*args, **kwargs)
        return
    opcheck(op.default, args, kwargs)
    check(name, args, op(*copy.deepcopy(args), **kwargs))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compiled_llama_block_on_cuda(gen, mode):
    _cuda_or_skip()
    torch._dynamo.reset()
    x, p, positions, cos_sin, cu = llama_inputs(gen)
    x, positions, cos_sin, cu = x.cuda(), positions.cuda(), cos_sin.cuda(), cu.cuda()
    p = {k: v.cuda() for k, v in p.items()}
    eager = llama_block(x, p, positions, cos_sin, cu)
    compiled = torch.compile(llama_block, fullgraph=True, mode=mode)
    for _ in range(3):  # reduce-overhead records a CUDA graph, then replays it
        out = compiled(x, p, positions, cos_sin, cu)
    torch.cuda.synchronize()
    assert_close(out, f64(eager), "float32", rtol=1e-4, atol=1e-4)


def test_strided_rows_and_argument_errors_name_the_op(gen):
    x = torch.randn(5, 200, generator=gen)[:, 10:106]  # rows of a wider buffer
    w = torch.randn(96, generator=gen)
    assert_close(torch.ops.aiter.rmsnorm(x, w, 1e-6), rms_ref(f64(x), f64(w), 1e-6), "float32")
    with pytest.raises(ValueError, match="aiter.rmsnorm: x: unsupported dtype torch.complex64"):
        torch.ops.aiter.rmsnorm(x.to(torch.complex64), w)
    with pytest.raises(ValueError, match="aiter_gemm_a16w16: w: expected unit stride"):
        torch.ops.aiter.gemm_a16w16(torch.randn(4, 32), torch.randn(32, 16).t())
    with pytest.raises(ValueError, match="aiter.rmsnorm.*: weight: unsupported dtype"):
        torch.ops.aiter.rmsnorm(x, w.to(torch.complex64))
