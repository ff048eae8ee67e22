"""libaiter's ops as PyTorch operators: ``torch.ops.aiter.<name>``.

Every op of the library is registered with ``torch.library`` from the op table
(``aiter.spec``): a schema declaring the arguments it writes (``Tensor(a!)``),
a fake implementation (shapes and dtypes only: meta tensors, FakeTensor,
``torch.compile``, ``torch.export``) and the real one, which calls the C
function on the caller's current stream.  So the ops stay in the graphs of
``torch.compile(fullgraph=True)``, ``torch.export`` and ``torch.jit.trace``.

Each op has a functional form that allocates its outputs and returns them
(``torch.ops.aiter.rmsnorm(x, weight, eps)``) and, where it has outputs, an
``.out`` overload writing the caller's tensors (``torch.ops.aiter.rmsnorm.out(
x, weight, eps, out=o)``).  The in-place ops (``rope``, ``reshape_and_cache``)
return nothing.  The ops have no derivative: a tensor that requires grad, with
grad mode on, is refused with an error saying so.

``aiter.torch.hf`` plugs the ops into Hugging Face transformers
(``attn_implementation="aiter"``, :func:`aiter.torch.hf.use_aiter_ops`);
``aiter.torch.layers`` holds the nn.Module layers it swaps in.

Importing this module also makes ``aiter.rmsnorm(torch_tensor, ...)`` and the
other functional ops call these operators (so they work under torch.compile).
"""
import torch

from .. import _route
from ._register import NAMESPACE  # first: the functional forms look the ops up
from ._functional import EAGER, FUNCTIONS  # noqa: E402

_route.install(torch.Tensor, FUNCTIONS, EAGER)

ops = getattr(torch.ops, NAMESPACE)

if "transformers" in __import__("sys").modules:  # attn_implementation="aiter" available at once
    from . import hf as _hf  # noqa: F401  (registers itself)

__all__ = ["ops", "NAMESPACE"]
