"""The op wrappers, one module per op family (the same families as include/aiter/)."""
from .gemm import gemm_a8w8, gemm_a16w16
from .norm import add_rmsnorm, layernorm, rmsnorm

__all__ = ["rmsnorm", "add_rmsnorm", "layernorm", "gemm_a16w16", "gemm_a8w8"]
