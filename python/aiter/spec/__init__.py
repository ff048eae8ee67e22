"""One description per op: the table the framework bindings are derived from.

``aiter.torch`` builds each op's ``torch.library`` schema, fake (shape-only)
implementation and real implementation from it, and routes the functional API
(``aiter.rmsnorm(torch_tensor)``) through it; ``aiter.compat`` calls those ops.
Nothing here imports an array library.
"""
from .table import OPS, OPS_BY_NAME
from .types import Arg, Op, Out

__all__ = ["OPS", "OPS_BY_NAME", "Op", "Arg", "Out"]
