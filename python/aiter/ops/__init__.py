"""The op wrappers, one module per op family (the same families as include/aiter/)."""
from .attention import paged_decode_attention, prefill_attention, reshape_and_cache
from .norm import add_rmsnorm, layernorm, rmsnorm

__all__ = ["rmsnorm", "add_rmsnorm", "layernorm",
           "prefill_attention", "paged_decode_attention", "reshape_and_cache"]
