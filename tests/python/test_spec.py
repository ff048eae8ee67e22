"""The op table drives the bindings: the functional wrappers (aiter.<name>)
and aiter.jax's ops are made from it, with the signatures the users rely on,
and libaiter_xla's rows name the scalars the table passes."""
import inspect

import numpy as np
import pytest

import aiter
from aiter.ops._from_spec import table_op
from aiter.spec import OPS, OPS_BY_NAME, Arg, Op, Out
from harness import assert_close, f64, rand

# Public signatures kept from the hand-written wrappers the table replaced.
SIGNATURES = {
    "rmsnorm": "(x, weight, eps=1e-06, *, out=None)",
    "add_rmsnorm": "(x, residual, weight, eps=1e-06, *, out=None, residual_out=None)",
    "rmsnorm_quant": "(x, weight, eps=1e-06, dtype='float8_e4m3fn', *, out=None, scale=None)",
    "gelu_and_mul": "(x, approximate='none', *, out=None)",
    "gemm_a16w16": "(a, w, bias=None, *, out_dtype=None, out=None)",
    "gemm_a8w8": "(a, w, a_scale, w_scale, bias=None, *, out_dtype='bfloat16', out=None)",
    "topk_softmax": "(gating, k, *, renormalize=False, topk_weights=None, topk_ids=None)",
    "grouped_topk": "(gating, k, num_expert_group, topk_group, *, correction_bias=None, scoring_func='softmax', "
                    "renormalize=True, routed_scaling_factor=1.0, topk_weights=None, topk_ids=None)",
    "reshape_and_cache": "(key, value, k_cache, v_cache, slot_mapping, *, k_scale=1.0, v_scale=1.0)",
    "concat_and_cache_mla": "(kv_c, k_pe, kv_cache, slot_mapping, *, scale=1.0)",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_generated_wrappers_keep_their_signatures(name):
    assert str(inspect.signature(getattr(aiter, name))) == SIGNATURES[name]


def test_prefill_attention_signature_has_the_optional_lse():
    params = inspect.signature(aiter.prefill_attention).parameters
    assert list(params)[:5] == ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k"]
    assert params["return_lse"].default is False and params["lse"].default is None
    assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in ("softmax_scale", "causal", "out"))


def test_every_table_op_has_a_documented_wrapper():
    """Public, or the inner function of a hook (fused_moe's, which allocates a workspace)."""
    import importlib
    import pkgutil
    from aiter import ops
    functions = {}
    for module in pkgutil.iter_modules(ops.__path__):
        functions.update(vars(importlib.import_module(f"aiter.ops.{module.name}")))
    for op in OPS:
        inner = {"paged_decode_attention": "_paged_decode", "paged_decode_attention_split_kv": "_paged_decode_split_kv"}
        wrapper = functions.get("_" + op.name) or functions.get(inner.get(op.name, "")) or functions.get(op.name)
        assert wrapper is not None and wrapper.__name__ == op.name, op.name
        assert wrapper.__doc__ and len(wrapper.__doc__) > 20, op.name


def _scalars_in_c_order(op):
    by_name = {a.name: a for a in op.args}
    return tuple(n for n in op.c_order if n in by_name and not by_name[n].is_tensor)


def test_xla_rows_match_the_table():
    """Each table op has a target named after its C function whose row names
    the scalars the table passes, in C order; and no row is left over."""
    pytest.importorskip("jax")
    import aiter.jax as aj
    from aiter.jax import _targets
    aj.register()
    for op in OPS:
        assert op.symbol in _targets.scalars, f"{op.name}: no row for {op.symbol} in libaiter/xla/targets.cpp"
        assert _targets.scalars[op.symbol] == _scalars_in_c_order(op), op.name
    assert set(_targets.scalars) == {op.symbol for op in OPS}


def test_jax_ops_are_the_table_less_outputs_and_workspaces():
    pytest.importorskip("jax")
    import aiter.jax as aj
    for op in OPS:
        params = inspect.signature(getattr(aj, op.name)).parameters
        expected = [a.name for a in op.args if a.name not in op.scratch]
        expected += [f"return_{o.name}" for o in op.outs if o.optional]
        assert list(params) == sorted(expected, key=expected.index), op.name  # order kept, outputs gone
        assert not {o.name for o in op.outs} & set(params), op.name


def _scaled_rmsnorm_op():
    """A new table op over an existing C function: rmsnorm with a keyword eps,
    named differently, as someone adding an op would write it."""
    return Op("rmsnorm_for_test", "aiter_rmsnorm", [Arg("x"), Arg("weight"), Arg("eps", "float", default=1e-5,
                                                                                     keyword=True)],
              [Out.same_as("out", "x")], ["out", "x", "weight", "eps"])


def test_a_new_table_op_gets_its_wrapper_and_jax_binding(rng, monkeypatch):
    op = _scaled_rmsnorm_op()
    monkeypatch.setitem(OPS_BY_NAME, op.name, op)
    x, w = rand(rng, (5, 77), "float32"), rand(rng, (77,), "float32")
    ref = f64(x) / np.sqrt((f64(x) ** 2).mean(-1, keepdims=True) + 1e-3) * f64(w)
    wrapper = table_op(op.name, "doc", route=False)
    assert str(inspect.signature(wrapper)) == "(x, weight, *, eps=1e-05, out=None)"
    assert_close(wrapper(x, w, eps=1e-3), ref, "float32")
    out = np.full_like(x, np.nan)
    assert wrapper(x, w, eps=1e-3, out=out) is out
    assert_close(out, ref, "float32")
    jax = pytest.importorskip("jax")
    from aiter.jax._from_spec import jax_op
    from harness import jax_cpu
    bound = jax_op(op.name, "doc")
    assert_close(jax.jit(lambda x, w: bound(x, w, eps=1e-3))(jax_cpu(x), jax_cpu(w)), ref, "float32")


def test_generated_wrappers_check_arguments_before_the_call(rng):
    x = rand(rng, (3, 8), "float32")
    with pytest.raises(aiter.InvalidArgumentError, match="window_left: expected a 32-bit integer"):
        aiter.prefill_attention(x.reshape(3, 1, 8), x.reshape(3, 1, 8), x.reshape(3, 1, 8),
                                np.array([0, 3], np.int32), window_left=2**31)
    with pytest.raises(aiter.InvalidArgumentError, match="k: expected an integer, got float"):
        aiter.topk_softmax(x, 1.5)
    with pytest.raises(TypeError, match="rope.. missing argument 'cos_sin_cache'"):
        aiter.rope(x.reshape(3, 1, 8), None, np.zeros(3, np.int32))
