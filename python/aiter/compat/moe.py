"""AITER's MoE routing entry point (aiter/ops/moe_op.py)."""
import torch
from torch import Tensor

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
