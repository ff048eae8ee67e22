"""Top-k softmax routing against a float64 NumPy softmax and a stable sort."""
import numpy as np
import pytest

import aiter
from harness import FLOAT_DTYPES, assert_close, f64, jax_cpu, np_dtype, poisoned, rand

WEIGHT_TOL = dict(rtol=1e-5, atol=1e-6)  # an fp32 softmax against float64


def softmax_ref(gating):
    x = f64(gating)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def topk_ref(gating, k, renormalize):
    """The k largest probabilities, largest first, ties to the lower expert id."""
    prob = softmax_ref(gating)
    ids = np.argsort(-prob, axis=1, kind="stable")[:, :k]
    weights = np.take_along_axis(prob, ids, axis=1)
    if renormalize:
        weights = weights / weights.sum(axis=1, keepdims=True)
    return weights, ids


def grid_gating(rng, shape, dtype):
    """Random multiples of 1/32 in [-4, 4]: exact in every float dtype, so exact
    ties are common and distinct values are far apart (ids compare exactly)."""
    return (rng.integers(-128, 129, size=shape) / 32.0).astype(np_dtype(dtype))


# (T, E, k): one token and k = 1, k = E, odd sizes, many tokens, one expert.
CASES = [(1, 8, 1), (7, 8, 8), (111, 64, 6), (500, 128, 2), (3, 1, 1), (5, 7, 7)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("renormalize", [False, True])
def test_topk_softmax(rng, dtype, case, renormalize):
    tokens, experts, k = case
    gating = grid_gating(rng, (tokens, experts), dtype)
    weights, ids = poisoned((tokens, k), "float32"), poisoned((tokens, k), "int32")
    got_w, got_ids = aiter.topk_softmax(gating, k, renormalize=renormalize, topk_weights=weights, topk_ids=ids)
    assert got_w is weights and got_ids is ids
    ref_w, ref_ids = topk_ref(gating, k, renormalize)
    np.testing.assert_array_equal(ids, ref_ids)
    assert_close(weights, ref_w, "float32", what="topk_weights", **WEIGHT_TOL)


@pytest.mark.parametrize("renormalize", [False, True])
def test_topk_softmax_continuous_values(rng, renormalize):
    """Normal fp32 logits: the chosen experts carry the reference's top-k
    probabilities (near-ties may swap ids without changing the weights)."""
    gating = rand(rng, (200, 96), "float32", scale=3.0)
    weights, ids = aiter.topk_softmax(gating, 5, renormalize=renormalize)
    assert weights.dtype == np.float32 and ids.dtype == np.int32 and ids.shape == (200, 5)
    ref_w, _ = topk_ref(gating, 5, renormalize)
    assert_close(weights, ref_w, "float32", what="topk_weights", **WEIGHT_TOL)
    chosen = np.take_along_axis(softmax_ref(gating), ids.astype(np.int64), axis=1)
    if renormalize:
        chosen = chosen / chosen.sum(axis=1, keepdims=True)
    assert_close(chosen, ref_w, "float32", what="probabilities of the chosen ids", **WEIGHT_TOL)


def test_topk_softmax_ties_go_to_lower_ids():
    gating = np.array([[0.5] * 6,                     # all equal
                       [1.0, 3.0, 2.0, 3.0, 0.0, 3.0],  # a three-way tie for first
                       [-1.0, 2.0, 2.0, 5.0, 2.0, 2.0]], np.float32)
    weights, ids = aiter.topk_softmax(gating, 4)
    np.testing.assert_array_equal(ids, [[0, 1, 2, 3], [1, 3, 5, 2], [3, 1, 2, 4]])
    assert_close(weights[0], np.full(4, 1 / 6), "float32", **WEIGHT_TOL)
    _, ids = aiter.topk_softmax(gating, 4, renormalize=True)
    np.testing.assert_array_equal(ids, [[0, 1, 2, 3], [1, 3, 5, 2], [3, 1, 2, 4]])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_topk_softmax_strided_views(rng, dtype):
    """gating rows of a wider buffer, every other row; outputs as column slices
    of wider buffers whose other columns must stay poisoned."""
    big = grid_gating(rng, (2 * 33, 80), dtype)
    gating = big[::2, 5:5 + 61]
    w_buf, id_buf = poisoned((33, 9), "float32"), poisoned((33, 9), "int32")
    aiter.topk_softmax(gating, 4, renormalize=True, topk_weights=w_buf[:, 2:6], topk_ids=id_buf[:, 3:7])
    ref_w, ref_ids = topk_ref(gating, 4, True)
    np.testing.assert_array_equal(id_buf[:, 3:7], ref_ids)
    assert_close(w_buf[:, 2:6], ref_w, "float32", **WEIGHT_TOL)
    assert np.isnan(np.delete(w_buf, np.s_[2:6], axis=1)).all()
    assert (np.delete(id_buf, np.s_[3:7], axis=1) == np.iinfo(np.int32).min).all()


def test_topk_softmax_no_tokens():
    weights, ids = aiter.topk_softmax(np.empty((0, 16), np.float16), 3)
    assert weights.shape == (0, 3) and ids.shape == (0, 3)


def test_topk_softmax_torch_and_jax(rng):
    torch = pytest.importorskip("torch")
    gating_np = grid_gating(rng, (9, 16), "bfloat16")
    ref_w, ref_ids = topk_ref(gating_np, 2, False)
    weights, ids = aiter.topk_softmax(torch.from_numpy(gating_np.astype(np.float32)).to(torch.bfloat16), 2)
    assert weights.dtype == torch.float32 and ids.dtype == torch.int32
    np.testing.assert_array_equal(ids.numpy(), ref_ids)
    assert_close(weights, ref_w, "float32", **WEIGHT_TOL)
    pytest.importorskip("jax")
    weights, ids = aiter.topk_softmax(jax_cpu(gating_np.astype(np.float32)), 2)
    np.testing.assert_array_equal(np.asarray(ids), ref_ids)
    assert_close(weights, ref_w, "float32", **WEIGHT_TOL)


def test_topk_softmax_rejects_bad_arguments(rng):
    gating = rand(rng, (4, 8), "float32")
    w, ids = poisoned((4, 2), "float32"), poisoned((4, 2), "int32")
    cases = [
        (aiter.InvalidArgumentError, "k: expected 1 <= k", dict(k=0)),
        (aiter.InvalidArgumentError, "k: expected an integer", dict(k=2.5)),
        (aiter.InvalidArgumentError, r"\(k\) in \[1, 8\]", dict(k=9, topk_weights=None, topk_ids=None)),
        (aiter.UnsupportedDtypeError, "gating: expected dtype", dict(gating=gating.astype(np.int32))),
        (aiter.InvalidArgumentError, "gating: expected 2 dims", dict(gating=gating.reshape(2, 2, 8))),
        (aiter.InvalidArgumentError, "gating: expected unit stride", dict(gating=rand(rng, (4, 16), "float32")[:, ::2])),
        (aiter.UnsupportedDtypeError, "topk_ids: expected dtype int32", dict(topk_ids=np.zeros((4, 2), np.int64))),
        (aiter.UnsupportedDtypeError, "topk_weights: expected dtype float32",
         dict(topk_weights=np.zeros((4, 2), np.float16))),
        (aiter.InvalidArgumentError, r"topk_weights: expected shape\[1\] == k", dict(topk_weights=np.zeros((4, 3), np.float32))),
        (aiter.InvalidArgumentError, r"topk_weights: expected shape\[0\] == 4", dict(topk_weights=np.zeros((5, 2), np.float32))),
        (aiter.InvalidArgumentError, "topk_ids: expected the shape of topk_weights", dict(topk_ids=np.zeros((4, 3), np.int32))),
    ]
    for error, message, change in cases:
        args = dict(gating=gating, k=2, topk_weights=w, topk_ids=ids)
        args.update(change)
        with pytest.raises(error, match=message):
            aiter.topk_softmax(args.pop("gating"), args.pop("k"), **args)
    assert np.isnan(w).all() and (ids == np.iinfo(np.int32).min).all()
