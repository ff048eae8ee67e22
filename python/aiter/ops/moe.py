"""Mixture-of-experts routing."""
import operator

from .._call import Call, c_or_null
from .._lib import ffi, lib
from .._route import via_torch
from ..errors import InvalidArgumentError


def _check_k(k):
    try:
        k = operator.index(k)
    except TypeError:
        raise InvalidArgumentError(f"k: expected an integer, got {type(k).__name__}") from None
    if k < 1:
        raise InvalidArgumentError(f"k: expected 1 <= k <= the experts of gating, got {k}")
    return k


@via_torch("topk_softmax")
def topk_softmax(gating, k, *, renormalize=False, topk_weights=None, topk_ids=None):
    """Softmax of ``gating`` [T, E] over the experts (in fp32), then the ``k``
    largest probabilities per token, largest first, ties going to the lower
    expert id.  Returns ``(topk_weights [T, k] float32, topk_ids [T, k] int32)``;
    with ``renormalize`` the k weights of each token are divided by their sum.
    ``topk_weights`` / ``topk_ids`` may be given to write into."""
    k = _check_k(k)
    c = Call("aiter_topk_softmax", like=gating)
    g_ = c.input(gating, "gating")
    shape = (g_.shape[0] if g_.shape else 0, k)
    w_ = c.output(topk_weights, "topk_weights", shape, "float32")
    ids_ = c.output(topk_ids, "topk_ids", shape, "int32")
    if len(w_.shape) == 2 and w_.shape[1] != k:
        raise InvalidArgumentError(f"topk_weights: expected shape[1] == k ({k}), got shape {w_.shape}")
    c.run(w_.c, ids_.c, g_.c, 1 if renormalize else 0)
    return c.result(w_), c.result(ids_)


def _routing_outputs(c, g_, k, topk_weights, topk_ids):
    shape = (g_.shape[0] if g_.shape else 0, k)
    w_ = c.output(topk_weights, "topk_weights", shape, "float32")
    ids_ = c.output(topk_ids, "topk_ids", shape, "int32")
    if len(w_.shape) == 2 and w_.shape[1] != k:
        raise InvalidArgumentError(f"topk_weights: expected shape[1] == k ({k}), got shape {w_.shape}")
    return w_, ids_


@via_torch("topk_sigmoid")
def topk_sigmoid(gating, k, *, renormalize=False, topk_weights=None, topk_ids=None):
    """As :func:`topk_softmax` with ``sigmoid(gating)`` as the scores: the ``k``
    experts of the largest logits, largest first, ties to the lower id."""
    k = _check_k(k)
    c = Call("aiter_topk_sigmoid", like=gating)
    g_ = c.input(gating, "gating")
    w_, ids_ = _routing_outputs(c, g_, k, topk_weights, topk_ids)
    c.run(w_.c, ids_.c, g_.c, 1 if renormalize else 0)
    return c.result(w_), c.result(ids_)


_SCORING = {"softmax": 0, "sigmoid": 1}


@via_torch("grouped_topk")
def grouped_topk(gating, k, num_expert_group, topk_group, *, correction_bias=None, scoring_func="softmax",
                 renormalize=True, routed_scaling_factor=1.0, topk_weights=None, topk_ids=None):
    """Grouped top-k routing (DeepSeek-V2/V3; vLLM's ``grouped_topk``): the
    experts of ``gating`` [T, E] in ``num_expert_group`` groups of consecutive
    experts; scores = softmax or sigmoid of gating.  Groups rank by their best
    score, or with ``correction_bias`` [E] (sigmoid only) by the sum of their
    two best ``score + bias``; the ``topk_group`` best groups are kept and the
    ``k`` best experts in them chosen (by score + bias where there is a bias).
    Weights: the chosen scores (without bias), divided by their sum if
    ``renormalize``, times ``routed_scaling_factor``.  Returns
    ``(topk_weights [T, k] float32, topk_ids [T, k] int32)``, best first, ties
    to the lower id (the same on CPU and GPU)."""
    k = _check_k(k)
    if scoring_func not in _SCORING:
        raise InvalidArgumentError(f"scoring_func: expected 'softmax' or 'sigmoid', got {scoring_func!r}")
    c = Call("aiter_grouped_topk", like=gating)
    g_ = c.input(gating, "gating")
    b_ = c.optional(correction_bias, "correction_bias")
    w_, ids_ = _routing_outputs(c, g_, k, topk_weights, topk_ids)
    c.run(w_.c, ids_.c, g_.c, c_or_null(b_), operator.index(num_expert_group), operator.index(topk_group),
          _SCORING[scoring_func], 1 if renormalize else 0, float(routed_scaling_factor))
    return c.result(w_), c.result(ids_)


def biased_grouped_topk(gating, correction_bias, k, num_expert_group, topk_group, *, renormalize=True,
                        routed_scaling_factor=1.0, topk_weights=None, topk_ids=None):
    """DeepSeek-V3 routing: :func:`grouped_topk` with sigmoid scores and the
    per-expert ``correction_bias`` used for selection only."""
    return grouped_topk(gating, k, num_expert_group, topk_group, correction_bias=correction_bias,
                        scoring_func="sigmoid", renormalize=renormalize,
                        routed_scaling_factor=routed_scaling_factor, topk_weights=topk_weights, topk_ids=topk_ids)


def _mask_bytes(mask):
    """A boolean expert mask as uint8 (DLPack's bool is not a dtype the library takes)."""
    name = str(getattr(mask, "dtype", ""))
    if name == "bool":
        return mask.astype("uint8")
    if name == "torch.bool":
        return mask.byte()
    return mask


def moe_sorting_max_rows(tokens, k, num_experts, block_size):
    """The most rows :func:`moe_sorting` can use: T*k + min(E, T*k)*(block_size-1),
    rounded down to a multiple of block_size."""
    rows = lib.aiter_moe_sorting_max_rows(tokens, k, num_experts, block_size)
    if rows < 0:
        raise InvalidArgumentError("moe_sorting_max_rows: sizes out of range")
    return rows


def moe_sorting(topk_ids, num_experts, block_size, *, expert_mask=None, sorted_ids=None, block_experts=None,
                num_valid=None):
    """The token-expert pairs of ``topk_ids`` [T, k] grouped by expert, each
    expert's rows padded to ``block_size``: returns ``(sorted_ids [R] int32`` (the
    pair t*k+j of each row, T*k on padding), ``block_experts [R / block_size] int32``
    (-1 past the valid rows), ``num_valid [1] int32)`` with R =
    :func:`moe_sorting_max_rows`.  ``expert_mask`` [E] (int32 / uint8 / bool)
    keeps the pairs of this rank's experts, numbered among them."""
    return _moe_sorting(topk_ids, num_experts, block_size, expert_mask=_mask_bytes(expert_mask),
                        sorted_ids=sorted_ids, block_experts=block_experts, num_valid=num_valid)


@via_torch("moe_sorting")
def _moe_sorting(topk_ids, num_experts, block_size, expert_mask=None, *, sorted_ids=None, block_experts=None,
                 num_valid=None):
    c = Call("aiter_moe_sorting", like=topk_ids)
    ids_ = c.input(topk_ids, "topk_ids")
    m_ = c.optional(expert_mask, "expert_mask")
    tokens, k = (ids_.shape + (0, 0))[:2] if len(ids_.shape) == 2 else (0, 1)
    rows = lib.aiter_moe_sorting_max_rows(tokens, k, num_experts, block_size)
    rows = max(rows, 0)
    s_ = c.output(sorted_ids, "sorted_ids", (rows,), "int32")
    b_ = c.output(block_experts, "block_experts", (rows // block_size if block_size > 0 else 0,), "int32")
    n_ = c.output(num_valid, "num_valid", (1,), "int32")
    c.run(s_.c, b_.c, n_.c, ids_.c, c_or_null(m_), num_experts, block_size)
    return c.result(s_), c.result(b_), c.result(n_)


_ACTIVATIONS = {"silu": 0, "gelu": 1, "gelu_tanh": 2}
_VARIANTS = {"auto": 0, "portable": 1, "mma": 2}


def _moe_params(activation, weights_on_input, block_size, variant):
    if activation not in _ACTIVATIONS:
        raise InvalidArgumentError(f"activation: expected one of {', '.join(_ACTIVATIONS)}, got {activation!r}")
    if variant not in _VARIANTS:
        raise InvalidArgumentError(f"variant: expected one of {', '.join(_VARIANTS)}, got {variant!r}")
    p = ffi.new("aiter_fused_moe_params *")
    lib.aiter_fused_moe_params_init(p)
    p.activation = _ACTIVATIONS[activation]
    p.weights_on_input = 1 if weights_on_input else 0
    p.block_size = operator.index(block_size)
    p.variant = _VARIANTS[variant]
    return p


def fused_moe_workspace_size(tokens, k, num_experts, hidden, inter, *, elem_bytes=2, activation="silu",
                             weights_on_input=False, block_size=0):
    """Bytes of workspace :func:`fused_moe` needs for these sizes."""
    p = _moe_params(activation, weights_on_input, block_size, "auto")
    return int(lib.aiter_fused_moe_workspace_size(tokens, k, num_experts, hidden, inter, elem_bytes, p))


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
    "auto", "portable" or "mma" (NVIDIA tensor cores) for tests and tuning."""
    expert_mask = _mask_bytes(expert_mask)
    if workspace is None:
        workspace = _new_workspace(x, w1, topk_ids, expert_mask, activation, weights_on_input, block_size)
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
    expert_mask = _mask_bytes(expert_mask)
    if workspace is None:
        workspace = _new_workspace(x, w1, topk_ids, expert_mask, activation, weights_on_input, block_size, 1)
    return _fused_moe_fp8(x, w1, w2, w1_scale, w2_scale, topk_weights, topk_ids, workspace, expert_mask=expert_mask,
                          activation=activation, weights_on_input=weights_on_input, block_size=block_size,
                          variant=variant, out=out)


@via_torch("fused_moe_fp8")
def _fused_moe_fp8(x, w1, w2, w1_scale, w2_scale, topk_weights, topk_ids, workspace, expert_mask=None,
                   activation="silu", weights_on_input=False, block_size=0, variant="auto", *, out=None):
    p = _moe_params(activation, weights_on_input, block_size, variant)
    c = Call("aiter_fused_moe_fp8", like=x)
    x_, w1_, w2_ = c.input(x, "x"), c.input(w1, "w1"), c.input(w2, "w2")
    s1_, s2_ = c.input(w1_scale, "w1_scale"), c.input(w2_scale, "w2_scale")
    tw_, ids_ = c.input(topk_weights, "topk_weights"), c.input(topk_ids, "topk_ids")
    m_ = c.optional(expert_mask, "expert_mask")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    ws_ = c.inplace(workspace, "workspace")
    c.run(out_.c, ws_.c, x_.c, w1_.c, w2_.c, s1_.c, s2_.c, tw_.c, ids_.c, c_or_null(m_), p)
    return c.result(out_)


def _new_workspace(x, w1, topk_ids, expert_mask, activation, weights_on_input, block_size, elem_bytes=2):
    """A uint8 workspace like x, of the size the library asks for, starting on
    a 256-byte boundary (a slice of a slightly larger buffer)."""
    p = _moe_params(activation, weights_on_input, block_size, "auto")
    c = Call("aiter_fused_moe", like=x)
    x_, w1_, ids_ = c.input(x, "x"), c.input(w1, "w1"), c.input(topk_ids, "topk_ids")
    m_ = c.optional(expert_mask, "expert_mask")
    size = 0  # a malformed argument: the library names it
    if len(x_.shape) == 2 and len(w1_.shape) == 3 and len(ids_.shape) == 2:
        experts = m_.shape[0] if m_ is not None and len(m_.shape) == 1 else w1_.shape[0]
        size = lib.aiter_fused_moe_workspace_size(x_.shape[0], ids_.shape[1], experts, x_.shape[1],
                                                  w1_.shape[1] // 2, elem_bytes, p)
    raw = c.adapter.empty((size + 256,), "uint8", x)
    start = -int(ffi.cast("uintptr_t", c.input(raw, "workspace").c.data)) % 256
    return raw[start:start + size]


@via_torch("fused_moe")
def _fused_moe(x, w1, w2, topk_weights, topk_ids, workspace, expert_mask=None, activation="silu",
               weights_on_input=False, block_size=0, variant="auto", *, out=None):
    p = _moe_params(activation, weights_on_input, block_size, variant)
    c = Call("aiter_fused_moe", like=x)
    x_, w1_, w2_ = c.input(x, "x"), c.input(w1, "w1"), c.input(w2, "w2")
    tw_, ids_ = c.input(topk_weights, "topk_weights"), c.input(topk_ids, "topk_ids")
    m_ = c.optional(expert_mask, "expert_mask")
    out_ = c.output(out, "out", x_.shape, x_.dtype)
    ws_ = c.inplace(workspace, "workspace")
    c.run(out_.c, ws_.c, x_.c, w1_.c, w2_.c, tw_.c, ids_.c, c_or_null(m_), p)
    return c.result(out_)
