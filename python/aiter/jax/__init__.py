"""libaiter ops for JAX, usable inside ``jax.jit``.

Each op is an XLA FFI custom call (``jax.ffi.ffi_call``) into libaiter_xla.so,
which hands XLA's buffers to libaiter's C functions as DLTensors: on the CPU
platform on the host, on a GPU (``CUDA``, or ``ROCM``, untested) on the
stream XLA runs the computation on, with no synchronization and no copies.
The targets are registered with JAX at the first call (``register()`` does it
ahead of time and returns the library's path).

The names and arguments are those of the eager ops (``aiter.rmsnorm`` ...),
less ``out=``: JAX arrays are immutable, so every op returns new arrays.  The
in-place ops (``rope``, ``reshape_and_cache``) alias their results with the
arrays they update; donate those to the jitted function to have them updated
in their own buffers.  The ops have no derivative rules, and under
``jax.vmap`` they run once per batch element.

``aiter.rmsnorm(jax_array)`` and the other eager ops still take JAX arrays
outside ``jit`` (through DLPack, on the default stream, synchronized).
"""
from ._targets import register
from .ops import (add_rmsnorm, add_rmsnorm_quant, gelu_and_mul, gemm_a8w8, gemm_a16w16, layernorm,
                  quant_per_tensor, quant_per_tensor_static, quant_per_token, reshape_and_cache, rmsnorm,
                  rmsnorm_quant, rope, silu_and_mul, silu_and_mul_quant)

__all__ = ["register", "rmsnorm", "add_rmsnorm", "layernorm", "rmsnorm_quant", "add_rmsnorm_quant",
           "silu_and_mul", "gelu_and_mul", "silu_and_mul_quant", "quant_per_tensor", "quant_per_token",
           "quant_per_tensor_static", "rope", "reshape_and_cache", "gemm_a16w16", "gemm_a8w8"]
