"""Mixture-of-experts: routing (top-k, grouped top-k), sorting of the
token-expert pairs by expert, and the fused expert MLPs.  The wrappers come
from the op table (``aiter.spec``); moe_sorting and fused_moe add the
conversion of a boolean expert mask and the allocation of the workspace."""
from .._call import _SIZE_T, Call, arg_type
from .._lib import ffi, lib
from ..errors import InvalidArgumentError
from ..spec.moe import ACTIVATIONS, mask_bytes, workspace_bytes
from ..spec.types import enum_to_c
from ._from_spec import table_op

# The params struct's type and init function, at import (spec/moe.py's _params).
arg_type("aiter_fused_moe_params_init", "aiter_fused_moe_params *")

topk_softmax = table_op("topk_softmax", """
    Softmax of ``gating`` [T, E] over the experts (in fp32), then the ``k``
    largest probabilities per token, largest first, ties going to the lower
    expert id.  Returns ``(topk_weights [T, k] float32, topk_ids [T, k] int32)``;
    with ``renormalize`` the k weights of each token are divided by their sum.
    ``topk_weights`` / ``topk_ids`` may be given to write into.""")

topk_sigmoid = table_op("topk_sigmoid", """
    As :func:`topk_softmax` with ``sigmoid(gating)`` as the scores: the ``k``
    experts of the largest logits, largest first, ties to the lower id.""")

grouped_topk = table_op("grouped_topk", """
    Grouped top-k routing (DeepSeek-V2/V3; vLLM's ``grouped_topk``): the
    experts of ``gating`` [T, E] in ``num_expert_group`` groups of consecutive
    experts; scores = softmax or sigmoid of gating.  Groups rank by their best
    score, or with ``correction_bias`` [E] (sigmoid only) by the sum of their
    two best ``score + bias``; the ``topk_group`` best groups are kept and the
    ``k`` best experts in them chosen (by score + bias where there is a bias).
    Weights: the chosen scores (without bias), divided by their sum if
    ``renormalize``, times ``routed_scaling_factor``.  Returns
    ``(topk_weights [T, k] float32, topk_ids [T, k] int32)``, best first, ties
    to the lower id (the same on CPU and GPU).""")


def biased_grouped_topk(gating, correction_bias, k, num_expert_group, topk_group, *, renormalize=True,
                        routed_scaling_factor=1.0, topk_weights=None, topk_ids=None):
    """DeepSeek-V3 routing: :func:`grouped_topk` with sigmoid scores and the
    per-expert ``correction_bias`` used for selection only."""
    return grouped_topk(gating, k, num_expert_group, topk_group, correction_bias=correction_bias,
                        scoring_func="sigmoid", renormalize=renormalize,
                        routed_scaling_factor=routed_scaling_factor, topk_weights=topk_weights, topk_ids=topk_ids)


def moe_sorting_max_rows(tokens, k, num_experts, block_size):
    """The most rows :func:`moe_sorting` can use: T*k + min(E, T*k)*(block_size-1),
    rounded down to a multiple of block_size."""
    rows = lib.aiter_moe_sorting_max_rows(tokens, k, num_experts, block_size)
    if rows < 0:
        raise InvalidArgumentError("moe_sorting_max_rows: sizes out of range")
    return rows


_moe_sorting = table_op("moe_sorting", "moe_sorting with a uint8 / int32 expert mask.")


def moe_sorting(topk_ids, num_experts, block_size, *, expert_mask=None, sorted_ids=None, block_experts=None,
                num_valid=None):
    """The token-expert pairs of ``topk_ids`` [T, k] grouped by expert, each
    expert's rows padded to ``block_size``: returns ``(sorted_ids [R] int32`` (the
    pair t*k+j of each row, T*k on padding), ``block_experts [R / block_size] int32``
    (-1 past the valid rows), ``num_valid [1] int32)`` with R =
    :func:`moe_sorting_max_rows`.  ``expert_mask`` [E] (int32 / uint8 / bool)
    keeps the pairs of this rank's experts, numbered among them."""
    return _moe_sorting(topk_ids, num_experts, block_size, expert_mask=mask_bytes(expert_mask),
                        sorted_ids=sorted_ids, block_experts=block_experts, num_valid=num_valid)


def fused_moe_workspace_size(tokens, k, num_experts, hidden, inter, *, elem_bytes=2, activation="silu",
                             weights_on_input=False, block_size=0):
    """Bytes of workspace :func:`fused_moe` needs for these sizes."""
    p = ffi.new(arg_type("aiter_fused_moe_params_init", "aiter_fused_moe_params *"))
    lib.aiter_fused_moe_params_init(p)
    p.activation = enum_to_c(ACTIVATIONS, "activation")(activation)
    p.weights_on_input = 1 if weights_on_input else 0
    p.block_size = block_size
    return int(lib.aiter_fused_moe_workspace_size(tokens, k, num_experts, hidden, inter, elem_bytes, p))


def _new_workspace(x, elem_bytes, arguments):
    """A uint8 workspace like x, of the size the library asks for, starting on
    a 256-byte boundary (a slice of a slightly larger buffer)."""
    c = Call("aiter_fused_moe", like=x)
    described = {name: value if name not in ("x", "w1", "topk_ids", "expert_mask") or value is None
                 else c.input(value, name) for name, value in arguments.items()}
    size = workspace_bytes(described, elem_bytes)
    raw = c.adapter.empty((size + 256,), "uint8", x)
    start = -int(ffi.cast(_SIZE_T, c.input(raw, "workspace").c.data)) % 256
    return raw[start:start + size]


_fused_moe = table_op("fused_moe", "fused_moe with its workspace given.")
_fused_moe_fp8 = table_op("fused_moe_fp8", "fused_moe_fp8 with its workspace given.")


def fused_moe(x, w1, w2, topk_weights, topk_ids, workspace=None, *, expert_mask=None, activation="silu",
              weights_on_input=False, block_size=0, variant="auto", out=None):
    """One MoE layer: ``out[t] = sum_j topk_weights[t, j] * down_e(act(gate_e(x[t])) *
    up_e(x[t]))`` with e = topk_ids[t, j], ``w1`` [E, 2I, H] (gate rows, then up
    rows), ``w2`` [E, H, I]; x, w1, w2 bf16 or fp16; topk_weights float32,
    topk_ids int32.  ``activation``: "silu", "gelu" (erf) or "gelu_tanh".
    ``weights_on_input`` scales the input instead (Llama 4); ``expert_mask``
    [E_global] (int32 / uint8 / bool) selects this rank's experts (w1/w2 hold
    those).  ``workspace``: uint8 of :func:`fused_moe_workspace_size` bytes,
    16-byte aligned (allocated here when not given; pass one for CUDA graphs).
    Shared experts: extra columns of topk_ids with weight 1.  ``variant``:
    "auto", "portable" or "mma" (the tensor-core stages: mma.sync, or Triton's at
    prefill sizes where built) for tests and tuning."""
    expert_mask = mask_bytes(expert_mask)
    if workspace is None:
        workspace = _new_workspace(x, 2, dict(x=x, w1=w1, topk_ids=topk_ids, expert_mask=expert_mask,
                                              activation=activation, weights_on_input=weights_on_input,
                                              block_size=block_size))
    return _fused_moe(x, w1, w2, topk_weights, topk_ids, workspace, expert_mask=expert_mask, activation=activation,
                      weights_on_input=weights_on_input, block_size=block_size, variant=variant, out=out)


def fused_moe_fp8(x, w1, w2, w1_scale, w2_scale, topk_weights, topk_ids, workspace=None, *, expert_mask=None,
                  activation="silu", weights_on_input=False, block_size=0, variant="auto", out=None):
    """:func:`fused_moe` with fp8 experts: ``w1`` [E, 2I, H] and ``w2`` [E, H, I]
    float8_e4m3fn or float8_e4m3fnuz with per-channel scales ``w1_scale`` [E, 2I]
    and ``w2_scale`` [E, H] (float32); x and out bf16 / fp16.  Each stage's input
    row is quantized to the weights' dtype with a dynamic per-row scale (the
    intermediate after rounding to x's dtype).  ``workspace``:
    ``fused_moe_workspace_size(..., elem_bytes=1)`` bytes."""
    expert_mask = mask_bytes(expert_mask)
    if workspace is None:
        workspace = _new_workspace(x, 1, dict(x=x, w1=w1, topk_ids=topk_ids, expert_mask=expert_mask,
                                              activation=activation, weights_on_input=weights_on_input,
                                              block_size=block_size))
    return _fused_moe_fp8(x, w1, w2, w1_scale, w2_scale, topk_weights, topk_ids, workspace, expert_mask=expert_mask,
                          activation=activation, weights_on_input=weights_on_input, block_size=block_size,
                          variant=variant, out=out)
