"""Hugging Face transformers: libaiter's attention as ``attn_implementation="aiter"``
and a swap of a Llama-family model's RMSNorms, MLPs and linear layers for
libaiter ops.

    import aiter.torch.hf       # registers "aiter" (so does importing aiter.torch
                                # once transformers is loaded)
    model = LlamaForCausalLM.from_pretrained(..., attn_implementation="aiter")
    aiter.torch.hf.use_aiter_ops(model)

The attention runs ``torch.ops.aiter.prefill_attention`` on the batch's
sequences packed end to end (causal masks aligned at the sequence ends, which
is what a decode step over a KV cache needs).  Padded batches (an attention
mask with zeros) are refused with an error rather than attended wrongly.
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


def attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, sliding_window=None,
                      softcap=None, **kwargs):
    """transformers' attention-function interface: q [B, Hq, Sq, D], k and v
    [B, Hkv, Sk, D] (the cache included); returns ([B, Sq, Hq, Dv], None)."""
    if dropout:
        raise InvalidArgumentError(f"aiter attention: dropout={dropout} is not supported (inference only)")
    if attention_mask is not None and not bool(attention_mask.all()):
        raise InvalidArgumentError("aiter attention: padded batches (an attention mask with zeros) are not "
                                   "supported; run sequences of equal length or one at a time")
    batch, heads, sq, _ = query.shape
    sk = key.shape[2]
    window = -1 if not sliding_window else int(sliding_window) - 1
    out, _ = torch.ops.aiter.prefill_attention(
        _packed(query), _packed(key), _packed(value), _offsets(batch, sq, query.device),
        _offsets(batch, sk, query.device), scaling, bool(getattr(module, "is_causal", True)), window,
        float(softcap or 0.0))
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
