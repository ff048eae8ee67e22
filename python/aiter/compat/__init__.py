"""AMD AITER's entry points, backed by libaiter: code written against AITER
runs after changing ``import aiter`` (AITER) to ``import aiter.compat as aiter``.

Each function keeps AITER's name, argument order, in-place convention (outputs
first, written in place, ``None`` returned) and defaults; its docstring names
the AITER signature it mirrors.  AITER options libaiter does not implement
(model-sensitive RMSNorm, grouped or shuffled scales, ALiBi, dropout, the
5-dim paged-cache layout...) raise ``aiter.InvalidArgumentError`` naming the
function and the argument, never a silent fallback.  They take torch tensors
(CPU, or CUDA where libaiter has the op's GPU kernel) and are also registered as
``torch.ops.aiter_compat.<name>`` (all but ``flash_attn_varlen_func`` and
``mla_decode_fwd``, whose return types depend on ``return_lse``).

Every function calls the ``torch.ops.aiter`` ops of ``aiter.torch``, so it works
under ``torch.compile`` and CUDA graphs like them.
"""
from .. import torch as _aiter_torch  # noqa: F401  (registers torch.ops.aiter first)
from ._register import NAMESPACE
from .activation import gelu_and_mul, gelu_tanh_and_mul, silu_and_mul
from .attention import flash_attn_varlen_func, paged_attention_v1
from .cache import reshape_and_cache, reshape_and_cache_flash
from .gemm import gemm_a8w8_blockscale, gemm_a8w8_CK, gemm_a16w16
from .mla import concat_and_cache_mla, mla_decode_fwd
from .moe import biased_grouped_topk, fused_moe, grouped_topk, moe_sorting_fwd, topk_softmax
from .norm import (layernorm2d_fwd, rms_norm, rmsnorm2d_fwd, rmsnorm2d_fwd_with_add,
                   rmsnorm2d_fwd_with_add_dynamicquant, rmsnorm2d_fwd_with_dynamicquant)
from .quant import dynamic_per_tensor_quant, dynamic_per_token_scaled_quant, static_per_tensor_quant
from .rope import rotary_embedding_fwd

__all__ = ["NAMESPACE", "rms_norm", "rmsnorm2d_fwd", "rmsnorm2d_fwd_with_add", "rmsnorm2d_fwd_with_dynamicquant",
           "rmsnorm2d_fwd_with_add_dynamicquant", "layernorm2d_fwd", "silu_and_mul", "gelu_and_mul",
           "gelu_tanh_and_mul", "dynamic_per_token_scaled_quant", "dynamic_per_tensor_quant",
           "static_per_tensor_quant", "rotary_embedding_fwd", "reshape_and_cache", "reshape_and_cache_flash",
           "topk_softmax", "gemm_a8w8_CK", "gemm_a8w8_blockscale", "gemm_a16w16", "flash_attn_varlen_func",
           "paged_attention_v1", "mla_decode_fwd", "concat_and_cache_mla", "grouped_topk", "biased_grouped_topk",
           "moe_sorting_fwd", "fused_moe"]
