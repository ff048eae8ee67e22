"""libaiter ops for JAX, usable inside ``jax.jit``.

Each op is an XLA FFI custom call (``jax.ffi.ffi_call``) into libaiter_xla.so,
which hands XLA's buffers to libaiter's C functions as DLTensors: on the CPU
platform on the host, on a GPU (``CUDA``, or ``ROCM``, untested) on the
stream XLA runs the computation on, with no synchronization and no copies.
The targets are registered with JAX at the first call (``register()`` does it
ahead of time and returns the library's path).

The ops are those of the op table (``aiter.spec``), made from it; their
names and arguments are those of the eager ops (``aiter.rmsnorm`` ...), less
``out=`` and workspaces: JAX arrays are immutable, so every op returns new
arrays.  The in-place ops (``rope``, ``reshape_and_cache``,
``concat_and_cache_mla``) alias their results with the arrays they update;
donate those to the jitted function to have them updated in their own
buffers.  Workspaces (fused_moe, mla_decode, split-KV decode) are extra
results XLA allocates, sized while tracing.  The ops have no derivative rules, and under
``jax.vmap`` they run once per batch element.

``aiter.rmsnorm(jax_array)`` and the other eager ops still take JAX arrays
outside ``jit`` (through DLPack, on the default stream, synchronized).
"""
from . import ops as _ops
from ._targets import register
from .ops import *  # noqa: F401,F403  (every op of the table, made from it)

__all__ = ["register"] + _ops.__all__
