"""The ops of aiter.jax: every op of the table (``aiter.spec``) with the eager
op's name and arguments, less ``out=`` and workspaces, each one
``jax.ffi.ffi_call`` of a target in libaiter_xla.so (see _from_spec.py).

Shapes and dtypes are known when JAX traces a call, so the outputs are
declared then, and what an output's shape or dtype depends on is checked then
(raising aiter's exceptions, naming the argument).  The library checks the
rest when the computation runs; a failure there raises JAX's runtime error
(``jax.errors.JaxRuntimeError``, a RuntimeError) with libaiter's message,
e.g. ``INVALID_ARGUMENT: aiter_rmsnorm: weight: expected shape[0] == 4096 ...``.
"""
from .. import ops as _eager
from ..spec import OPS
from ._from_spec import jax_op

_NOTE = """

    aiter.jax: inside ``jax.jit``, on XLA's stream.  JAX arrays are immutable:
    there is no ``out=``, and arrays the eager op updates in place come back
    as new arrays, aliased with the old ones (donate those to the jitted
    function to update their buffers without a copy).  Workspaces are
    allocated by XLA, sized while tracing."""


def _doc(name):
    eager = getattr(_eager, name, None)
    return ((eager.__doc__ or "") if eager is not None else f"The table op {name}.") + _NOTE


OPS_BY_NAME = {op.name: jax_op(op.name, _doc(op.name)) for op in OPS}
globals().update(OPS_BY_NAME)


def biased_grouped_topk(gating, correction_bias, k, num_expert_group, topk_group, *, renormalize=True,
                        routed_scaling_factor=1.0):
    """DeepSeek-V3 routing: :func:`grouped_topk` with sigmoid scores and the
    per-expert ``correction_bias`` used for selection only."""
    return OPS_BY_NAME["grouped_topk"](gating, k, num_expert_group, topk_group, correction_bias=correction_bias,
                                       scoring_func="sigmoid", renormalize=renormalize,
                                       routed_scaling_factor=routed_scaling_factor)


def mla_decode_workspace_size(q, kv_cache, block_table, num_splits=0):
    """Bytes of workspace mla_decode needs for arrays of these shapes and
    dtypes (arrays, tracers or ``jax.ShapeDtypeStruct``); aiter.jax's
    mla_decode allocates it itself."""
    from ..spec.mla import workspace_bytes
    return workspace_bytes({"q": q, "kv_cache": kv_cache, "block_table": block_table, "num_splits": num_splits})


__all__ = sorted(OPS_BY_NAME) + ["biased_grouped_topk", "mla_decode_workspace_size"]
