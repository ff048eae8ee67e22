"""Mixture-of-experts routing."""
import operator

from .._call import Call
from .._route import via_torch
from ..errors import InvalidArgumentError


def _check_k(k):
    try:
        k = operator.index(k)
    except TypeError:
        raise InvalidArgumentError(f"k: expected an integer, got {type(k).__name__}") from None
    if k < 1:
        raise InvalidArgumentError(f"k: expected 1 <= k <= the experts of gating, got {k}")
    return k


@via_torch("topk_softmax")
def topk_softmax(gating, k, *, renormalize=False, topk_weights=None, topk_ids=None):
    """Softmax of ``gating`` [T, E] over the experts (in fp32), then the ``k``
    largest probabilities per token, largest first, ties going to the lower
    expert id.  Returns ``(topk_weights [T, k] float32, topk_ids [T, k] int32)``;
    with ``renormalize`` the k weights of each token are divided by their sum.
    ``topk_weights`` / ``topk_ids`` may be given to write into."""
    k = _check_k(k)
    c = Call("aiter_topk_softmax", like=gating)
    g_ = c.input(gating, "gating")
    shape = (g_.shape[0] if g_.shape else 0, k)
    w_ = c.output(topk_weights, "topk_weights", shape, "float32")
    ids_ = c.output(topk_ids, "topk_ids", shape, "int32")
    if len(w_.shape) == 2 and w_.shape[1] != k:
        raise InvalidArgumentError(f"topk_weights: expected shape[1] == k ({k}), got shape {w_.shape}")
    c.run(w_.c, ids_.c, g_.c, 1 if renormalize else 0)
    return c.result(w_), c.result(ids_)
