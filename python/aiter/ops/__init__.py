"""The op wrappers, one module per op family (the same families as include/aiter/)."""
from .norm import add_rmsnorm, layernorm, rmsnorm

__all__ = ["rmsnorm", "add_rmsnorm", "layernorm"]
