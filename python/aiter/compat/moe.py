"""AITER's MoE entry points (aiter/ops/moe_op.py, moe_sorting.py, aiter/fused_moe.py)."""
from typing import Optional

import torch
from torch import Tensor

from ..errors import InvalidArgumentError
from ._common import refuse, refuse_tensor

_ops = torch.ops.aiter


def topk_softmax(topk_weights: Tensor, topk_indices: Tensor, token_expert_indices: Tensor, gating_output: Tensor,
                 need_renorm: bool) -> None:
    """AITER ``topk_softmax(topk_weights, topk_indices, token_expert_indices,
    gating_output, need_renorm) -> None``: the top-k of the softmax over experts,
    largest first.  ``token_expert_indices[t, j] = j * T + t`` (the row of the
    token's j-th choice in the expert-major order of vLLM's kernels);
    ``topk_indices`` may be int32 or int64."""
    tokens, k = topk_weights.shape
    ids = topk_indices if topk_indices.dtype == torch.int32 else torch.empty_like(topk_indices, dtype=torch.int32)
    _ops.topk_softmax.out(gating_output, k, need_renorm, topk_weights=topk_weights, topk_ids=ids)
    if ids is not topk_indices:
        topk_indices.copy_(ids)
    rows = torch.arange(tokens, device=gating_output.device, dtype=token_expert_indices.dtype)
    slots = torch.arange(k, device=gating_output.device, dtype=token_expert_indices.dtype)
    token_expert_indices.copy_(slots[None, :] * tokens + rows[:, None])


def _into_int32(ids, write):
    """Runs ``write(ids32)`` and copies into ``ids`` where the caller's are not int32."""
    ids32 = ids if ids.dtype == torch.int32 else torch.empty_like(ids, dtype=torch.int32)
    write(ids32)
    if ids32 is not ids:
        ids.copy_(ids32)


def grouped_topk(gating_output: Tensor, topk_weights: Tensor, topk_ids: Tensor, num_expert_group: int,
                 topk_group: int, need_renorm: bool, scoring_func: str = "softmax",
                 routed_scaling_factor: float = 1.0) -> None:
    """AITER ``grouped_topk(gating_output, topk_weights, topk_ids, num_expert_group,
    topk_group, need_renorm, scoring_func="softmax", routed_scaling_factor=1.0) -> None``:
    DeepSeek-V2-style grouped routing, written in place (``aiter.grouped_topk``'s rules)."""
    k = topk_weights.shape[1]
    _into_int32(topk_ids, lambda ids: _ops.grouped_topk.out(
        gating_output, k, num_expert_group, topk_group, None, scoring_func, need_renorm, routed_scaling_factor,
        topk_weights=topk_weights, topk_ids=ids))


def biased_grouped_topk(gating_output: Tensor, correction_bias: Tensor, topk_weights: Tensor, topk_ids: Tensor,
                        num_expert_group: int, topk_group: int, need_renorm: bool,
                        routed_scaling_factor: float = 1.0) -> None:
    """AITER ``biased_grouped_topk(gating_output, correction_bias, topk_weights,
    topk_ids, num_expert_group, topk_group, need_renorm, routed_scaling_factor=1.0)
    -> None``: DeepSeek-V3 routing (sigmoid scores, the bias for selection only)."""
    k = topk_weights.shape[1]
    _into_int32(topk_ids, lambda ids: _ops.grouped_topk.out(
        gating_output, k, num_expert_group, topk_group, correction_bias, "sigmoid", need_renorm,
        routed_scaling_factor, topk_weights=topk_weights, topk_ids=ids))


def moe_sorting_fwd(topk_ids: Tensor, topk_weights: Tensor, sorted_token_ids: Tensor, sorted_weights: Tensor,
                    sorted_expert_ids: Tensor, num_valid_ids: Tensor, moe_buf: Tensor, num_experts: int,
                    unit_size: int, local_expert_mask: Optional[Tensor] = None,
                    num_local_tokens: Optional[Tensor] = None, dispatch_policy: int = 0) -> None:
    """AITER ``moe_sorting_fwd(topk_ids, topk_weights, sorted_token_ids, sorted_weights,
    sorted_expert_ids, num_valid_ids, moe_buf, num_experts, unit_size,
    local_expert_mask=None, num_local_tokens=None, dispatch_policy=0) -> None``.
    AITER's layout: a row holds ``(slot << 24) | token`` (padding ``(k << 24) | T``)
    and its routing weight (0 on padding); ``num_valid_ids`` = [rows in use, T]
    (its second element where it has one); ``moe_buf`` is zeroed.  The buffers are
    AITER's size (T*k + E*unit_size - k), at least libaiter's bound; blocks past the
    rows in use get expert -1."""
    refuse_tensor("moe_sorting_fwd", "num_local_tokens", num_local_tokens)
    refuse("moe_sorting_fwd", "dispatch_policy", dispatch_policy, 0)
    tokens, k = topk_ids.shape
    mask = local_expert_mask
    if mask is not None and mask.dtype == torch.bool:
        mask = mask.to(torch.uint8)
    ids32 = topk_ids if topk_ids.dtype == torch.int32 else topk_ids.to(torch.int32)
    rows, blocks, valid = _ops.moe_sorting(ids32, num_experts, unit_size, mask)
    n, pairs = rows.shape[0], tokens * k
    if sorted_token_ids.shape[0] < n or sorted_weights.shape[0] < n or sorted_expert_ids.shape[0] < blocks.shape[0]:
        raise InvalidArgumentError(f"aiter.compat.moe_sorting_fwd: the output buffers hold fewer than the "
                                   f"{n} rows / {blocks.shape[0]} blocks of libaiter's bound")
    real = rows < pairs
    safe = torch.where(real, rows, torch.zeros_like(rows)).long()
    packed = torch.where(real, (rows % k) * (1 << 24) + rows // k, torch.full_like(rows, (k << 24) | tokens))
    sorted_token_ids.fill_((k << 24) | tokens)
    sorted_token_ids[:n].copy_(packed)
    sorted_weights.zero_()
    sorted_weights[:n].copy_(torch.where(real, topk_weights.reshape(-1).float()[safe], 0.0))
    sorted_expert_ids.fill_(-1)
    sorted_expert_ids[:blocks.shape[0]].copy_(blocks)
    num_valid_ids[:1].copy_(valid)
    if num_valid_ids.shape[0] > 1:
        num_valid_ids[1:2].fill_(tokens)
    moe_buf.zero_()


_ACTIVATION_NAMES = {0: "silu", 1: "gelu", "Silu": "silu", "Gelu": "gelu", "silu": "silu", "gelu": "gelu"}
# AITER's QuantType (aiter/utility/dtypes: No 0, per_Tensor 1, per_Token 2, per_1x32 3, per_1x128 4,
# per_128x128 5), by value or name.
_QUANT_TYPES = {0: "none", "No": "none", 2: "token", "per_Token": "token", 4: "block", "per_1x128": "block",
                5: "block", "per_128x128": "block"}


def fused_moe(hidden_states: Tensor, w1: Tensor, w2: Tensor, topk_weight: Tensor, topk_ids: Tensor,
              expert_mask: Optional[Tensor] = None, activation: int = 0, quant_type: int = 0,
              doweight_stage1: bool = False, w1_scale: Optional[Tensor] = None, w2_scale: Optional[Tensor] = None,
              a1_scale: Optional[Tensor] = None, a2_scale: Optional[Tensor] = None,
              block_size_M: Optional[int] = None, num_local_tokens: Optional[Tensor] = None,
              moe_sorting_dispatch_policy: int = 0, dtype: Optional[torch.dtype] = None) -> Tensor:
    """AITER ``fused_moe(hidden_states, w1, w2, topk_weight, topk_ids, expert_mask=None,
    activation=ActivationType.Silu, quant_type=QuantType.No, doweight_stage1=False,
    w1_scale=None, w2_scale=None, a1_scale=None, a2_scale=None, block_size_M=None,
    num_local_tokens=None, moe_sorting_dispatch_policy=0, dtype=None) -> Tensor``:
    the layer (w1 [E, 2I, H] gate then up, w2 [E, H, I]); ``activation`` 0 /
    ActivationType.Silu or 1 / Gelu; ``doweight_stage1`` applies the routing
    weights to the input.  ``quant_type``: No (bf16/fp16 weights), per_Token (fp8
    weights, w1_scale [E, 2I(, 1)], w2_scale [E, H(, 1)]) or per_1x128 /
    per_128x128 (DeepSeek block-scaled fp8, scales [E, N/128, K/128]); activation
    scales are always dynamic (a1_scale / a2_scale refused)."""
    name = getattr(activation, "name", activation)
    if name not in _ACTIVATION_NAMES:
        raise InvalidArgumentError(f"aiter.compat.fused_moe: activation={activation!r} is not supported by "
                                   "libaiter (Silu or Gelu)")
    quant = _QUANT_TYPES.get(getattr(quant_type, "name", quant_type))
    if quant is None:
        raise InvalidArgumentError(f"aiter.compat.fused_moe: quant_type={quant_type!r} is not supported by libaiter "
                                   "(No, per_Token, per_1x128, per_128x128)")
    for arg, value in (("a1_scale", a1_scale), ("a2_scale", a2_scale), ("num_local_tokens", num_local_tokens)):
        refuse_tensor("fused_moe", arg, value)
    if quant == "none":
        refuse_tensor("fused_moe", "w1_scale", w1_scale)
        refuse_tensor("fused_moe", "w2_scale", w2_scale)
    refuse("fused_moe", "moe_sorting_dispatch_policy", moe_sorting_dispatch_policy, 0)
    if dtype is not None and dtype != hidden_states.dtype:
        raise InvalidArgumentError(f"aiter.compat.fused_moe: dtype={dtype} differs from hidden_states' "
                                   f"({hidden_states.dtype}); libaiter writes the input's dtype")
    from ..ops.moe import fused_moe_workspace_size
    tokens, k = topk_ids.shape
    experts = expert_mask.shape[0] if expert_mask is not None else w1.shape[0]
    act = _ACTIVATION_NAMES[name]
    block = int(block_size_M or 0)
    size = fused_moe_workspace_size(tokens, k, experts, hidden_states.shape[1], w1.shape[1] // 2,
                                    elem_bytes=1 if quant != "none" else 2, activation=act,
                                    weights_on_input=doweight_stage1, block_size=block)
    workspace = torch.empty(size, dtype=torch.uint8, device=hidden_states.device)
    mask = expert_mask.to(torch.uint8) if expert_mask is not None and expert_mask.dtype == torch.bool else expert_mask
    ids32 = topk_ids if topk_ids.dtype == torch.int32 else topk_ids.to(torch.int32)
    if quant == "none":
        return _ops.fused_moe(hidden_states, w1, w2, topk_weight.float(), ids32, workspace, mask, act,
                              bool(doweight_stage1), block, "auto")
    if w1_scale is None or w2_scale is None:
        raise InvalidArgumentError("aiter.compat.fused_moe: quantized weights need w1_scale and w2_scale")
    e = w1.shape[0]
    s1 = w1_scale.float().reshape(e, -1) if quant == "token" else w1_scale.float()
    s2 = w2_scale.float().reshape(e, -1) if quant == "token" else w2_scale.float()
    return _ops.fused_moe_fp8(hidden_states, w1, w2, s1, s2, topk_weight.float(), ids32, workspace, mask, act,
                              bool(doweight_stage1), block, "auto")
