"""The op wrappers, one module per op family (the same families as include/aiter/)."""
from .attention import paged_decode_attention, prefill_attention, reshape_and_cache
from .moe import topk_softmax
from .norm import add_rmsnorm, layernorm, rmsnorm
from .rope import rope, rope_cos_sin_cache

__all__ = ["rmsnorm", "add_rmsnorm", "layernorm", "rope", "rope_cos_sin_cache", "topk_softmax",
           "prefill_attention", "paged_decode_attention", "reshape_and_cache"]
