"""Hugging Face transformers: libaiter's attention as ``attn_implementation="aiter"``
and a swap of a Llama-family model's RMSNorms, MLPs and linear layers for
libaiter ops.

    import aiter.torch.hf       # registers "aiter" (so does importing aiter.torch
                                # once transformers is loaded)
    model = LlamaForCausalLM.from_pretrained(..., attn_implementation="aiter")
    aiter.torch.hf.use_aiter_ops(model)

The attention runs ``torch.ops.aiter.prefill_attention`` on the batch's
sequences packed end to end (causal masks aligned at the sequence ends, which
is what a decode step over a KV cache needs).  In a padded batch (left or
right padding) only each sequence's valid tokens are packed; a padded query
row gets zeros.
"""
import torch

from ..errors import InvalidArgumentError
from .layers import AiterGatedMLP, AiterLinear, AiterRMSNorm

NAME = "aiter"


def _offsets(batch, length, device):
    return torch.arange(0, (batch + 1) * length, length, dtype=torch.int32, device=device)


def _packed(t):
    """[B, H, S, D] -> compact [B * S, H, D]."""
    return t.transpose(1, 2).reshape(t.shape[0] * t.shape[2], t.shape[1], t.shape[3])


def _packed_valid(t, valid):
    """[B, H, S, D] -> [tokens, H, D] of the positions where ``valid`` [B, S] holds."""
    return t.transpose(1, 2)[valid]


def _contiguous_runs(valid):
    """Each row of ``valid`` [B, S] is one run of True (left or right padding)."""
    starts = (valid[:, 1:] & ~valid[:, :-1]).sum(-1) + valid[:, 0].long()
    return bool((starts <= 1).all())


def _padded_attention(query, key, value, mask, scaling, causal, window, softcap):
    """Batches with padding: the valid tokens of each sequence, packed end to end.
    The queries are the last Sq positions; a padded query row gets zeros."""
    batch, heads, sq, _ = query.shape
    valid_k = mask.bool()
    valid_q = valid_k[:, valid_k.shape[1] - sq:]
    if not _contiguous_runs(valid_k):
        raise InvalidArgumentError("aiter attention: each attention-mask row must be one run of ones (left or "
                                   "right padding)")
    cu_q = torch.nn.functional.pad(valid_q.sum(-1).cumsum(0), (1, 0)).to(torch.int32)
    cu_k = torch.nn.functional.pad(valid_k.sum(-1).cumsum(0), (1, 0)).to(torch.int32)
    out, _ = torch.ops.aiter.prefill_attention(
        _packed_valid(query, valid_q), _packed_valid(key, valid_k), _packed_valid(value, valid_k), cu_q, cu_k,
        scaling, causal, window, softcap)
    full = out.new_zeros(batch, sq, heads, value.shape[-1])
    full[valid_q] = out
    return full


def attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, sliding_window=None,
                      softcap=None, **kwargs):
    """transformers' attention-function interface: q [B, Hq, Sq, D], k and v
    [B, Hkv, Sk, D] (the cache included), ``attention_mask`` None or the 2-D
    [B, Sk] padding mask; returns ([B, Sq, Hq, Dv], None)."""
    if dropout:
        raise InvalidArgumentError(f"aiter attention: dropout={dropout} is not supported (inference only)")
    batch, heads, sq, _ = query.shape
    sk = key.shape[2]
    causal = bool(getattr(module, "is_causal", True))
    window = -1 if not sliding_window else int(sliding_window) - 1
    softcap = float(softcap or 0.0)
    if attention_mask is not None and attention_mask.dim() != 2:
        raise InvalidArgumentError(f"aiter attention: expected a 2-D padding mask, got {attention_mask.dim()} dims")
    if attention_mask is not None and not bool(attention_mask.all()):
        return _padded_attention(query, key, value, attention_mask, scaling, causal, window, softcap), None
    out, _ = torch.ops.aiter.prefill_attention(
        _packed(query), _packed(key), _packed(value), _offsets(batch, sq, query.device),
        _offsets(batch, sk, query.device), scaling, causal, window, softcap)
    return out.reshape(batch, sq, heads, value.shape[-1]), None


def register():
    """Registers ``attention_forward`` as ``attn_implementation="aiter"``, with
    the flash-attention mask function (None, or the 2-D padding mask)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, flash_attention_mask
    AttentionInterface.register(NAME, attention_forward)
    AttentionMaskInterface.register(NAME, flash_attention_mask)


def _swap(module, hidden_act):
    for name, child in module.named_children():
        kind = type(child).__name__
        if kind.endswith("RMSNorm") and hasattr(child, "weight"):
            eps = getattr(child, "variance_epsilon", getattr(child, "eps", 1e-6))
            setattr(module, name, AiterRMSNorm(child.weight, eps))
        elif all(hasattr(child, p) for p in ("gate_proj", "up_proj", "down_proj")):
            setattr(module, name, AiterGatedMLP(child.gate_proj, child.up_proj, child.down_proj, hidden_act))
        elif isinstance(child, torch.nn.Linear):
            setattr(module, name, AiterLinear(child))
        else:
            _swap(child, hidden_act)


def use_aiter_ops(model):
    """Swaps, in place, the RMSNorm modules (any class named ``*RMSNorm`` with a
    weight), the gated MLPs (gate_proj / up_proj / down_proj) and the remaining
    nn.Linear layers of ``model`` for libaiter layers; returns the model."""
    _swap(model, getattr(model.config, "hidden_act", "silu"))
    return model


register()  # importing this module loads transformers: make "aiter" available at once
