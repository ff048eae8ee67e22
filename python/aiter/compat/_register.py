"""The AITER-compatible functions as ``torch.ops.aiter_compat.<name>``.

Their schemas are read from the functions' type hints
(``torch.library.infer_schema``), naming the tensors each writes; their
implementation is registered as CompositeImplicitAutograd, so under tracing
(torch.compile, torch.export) they decompose into the ``torch.ops.aiter`` ops
they call, whose fake implementations give the shapes.  A separate namespace:
AITER's names (``silu_and_mul(out, input)``) clash with libaiter's own ops.
"""
import torch

from . import activation, attention, cache, gemm, mla, moe, norm, quant, rope

NAMESPACE = "aiter_compat"

# function -> the arguments it writes (flash_attn_varlen_func returns a Tensor or a
# tuple by return_lse, which a schema cannot say: it stays a plain function, as
# does mla_decode_fwd, whose lse is a tensor or None by return_lse).
REGISTERED = {
    norm.rms_norm: (), norm.rmsnorm2d_fwd: (), norm.layernorm2d_fwd: (),
    norm.rmsnorm2d_fwd_with_add: ("out", "residual_out"),
    norm.rmsnorm2d_fwd_with_dynamicquant: ("out", "yscale"),
    norm.rmsnorm2d_fwd_with_add_dynamicquant: ("out", "residual_out", "yscale"),
    activation.silu_and_mul: ("out",), activation.gelu_and_mul: ("out",), activation.gelu_tanh_and_mul: ("out",),
    quant.static_per_tensor_quant: ("out",), quant.dynamic_per_tensor_quant: ("out", "scale"),
    quant.dynamic_per_token_scaled_quant: ("out", "scales"),
    rope.rotary_embedding_fwd: ("query", "key"),
    moe.topk_softmax: ("topk_weights", "topk_indices", "token_expert_indices"),
    moe.grouped_topk: ("topk_weights", "topk_ids"), moe.biased_grouped_topk: ("topk_weights", "topk_ids"),
    moe.moe_sorting_fwd: ("sorted_token_ids", "sorted_weights", "sorted_expert_ids", "num_valid_ids", "moe_buf"),
    moe.fused_moe: (),
    gemm.gemm_a8w8_CK: (), gemm.gemm_a8w8_blockscale: (), gemm.gemm_a16w16: (),
}
# Registered under AITER's name, the public function calling the op (paged_attention_v1
# also returns `out`, as AITER's does, which a schema may not say).
NAMED = {attention.paged_attention_v1_into: ("paged_attention_v1", ("out",)),
         cache.reshape_and_cache_kernel: ("reshape_and_cache", ("key_cache", "value_cache")),
         cache.reshape_and_cache_flash_kernel: ("reshape_and_cache_flash", ("key_cache", "value_cache")),
         mla.concat_and_cache_mla_kernel: ("concat_and_cache_mla", ("kv_cache",))}
# These read their fp8 scales (one-element tensors in AITER's signature) as numbers
# for the C call: traced, that would be a data-dependent value, so they are
# opaque ops with CPU/CUDA kernels and a fake implementation (they only write
# their arguments) instead of decomposing.
OPAQUE = {"reshape_and_cache", "reshape_and_cache_flash", "paged_attention_v1", "concat_and_cache_mla"}

_library = torch.library.Library(NAMESPACE, "DEF")  # kept alive: dropping it unregisters the ops

_ALL = [(f, f.__name__, m) for f, m in REGISTERED.items()] + [(f, n, m) for f, (n, m) in NAMED.items()]
def _writes_only(*args, **kwargs):
    return None


for _function, _name, _mutated in _ALL:
    _library.define(_name + torch.library.infer_schema(_function, mutates_args=_mutated))
    if _name in OPAQUE:
        _library.impl(_name, _function, "CPU")
        _library.impl(_name, _function, "CUDA")
        torch.library.register_fake(f"{NAMESPACE}::{_name}", _writes_only, lib=_library)
    else:
        _library.impl(_name, _function, "CompositeImplicitAutograd")
