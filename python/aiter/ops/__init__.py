"""The op wrappers, one module per op family (the same families as include/aiter/)."""
from .activation import gelu_and_mul, silu_and_mul, silu_and_mul_quant
from .attention import (paged_decode_attention, paged_decode_workspace_size, paged_prefill_attention,
                        prefill_attention, reshape_and_cache)
from .mla import concat_and_cache_mla, mla_decode, mla_decode_workspace_size
from .gemm import batched_gemm_a8w8, batched_gemm_a16w16, gemm_a8w8, gemm_a8w8_blockscale, gemm_a16w16
from .moe import (biased_grouped_topk, fused_moe, fused_moe_fp8, fused_moe_workspace_size, grouped_topk,
                  moe_sorting, moe_sorting_max_rows, topk_sigmoid, topk_softmax)
from .norm import add_rmsnorm, add_rmsnorm_quant, layernorm, rmsnorm, rmsnorm_quant
from .quant import quant_per_tensor, quant_per_tensor_static, quant_per_token
from .rope import rope, rope_cos_sin_cache

__all__ = ["rmsnorm", "add_rmsnorm", "layernorm", "rmsnorm_quant", "add_rmsnorm_quant", "silu_and_mul",
           "gelu_and_mul", "silu_and_mul_quant",
           "quant_per_tensor", "quant_per_token", "quant_per_tensor_static",
           "rope", "rope_cos_sin_cache", "gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale",
           "batched_gemm_a16w16", "batched_gemm_a8w8", "topk_softmax",
           "topk_sigmoid", "grouped_topk", "biased_grouped_topk", "moe_sorting", "moe_sorting_max_rows",
           "fused_moe", "fused_moe_fp8", "fused_moe_workspace_size",
           "prefill_attention", "paged_decode_attention", "paged_decode_workspace_size", "paged_prefill_attention",
           "reshape_and_cache", "mla_decode", "mla_decode_workspace_size", "concat_and_cache_mla"]
