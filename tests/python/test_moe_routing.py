"""Routing ops (topk_softmax / topk_sigmoid / grouped_topk / biased_grouped_topk)
on the CPU and the GPU against float64 NumPy references with stable sorts."""
import numpy as np
import pytest

import aiter
from harness import FLOAT_DTYPES, assert_close, f64, np_dtype, on_host, poisoned_on, to_device

WEIGHT_TOL = dict(rtol=2e-5, atol=1e-6)


def softmax64(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


def grouped_ref(gating, k, groups=1, topk_group=1, bias=None, scoring="softmax", renormalize=False, scale=1.0):
    """The library's documented rule, in NumPy: without a bias experts rank by
    logit (the order of their scores) and groups by their best; with one by
    float32(sigmoid) + bias in float32 and groups by the float32 sum of their two
    best.  Ties: the lower id (stable sorts)."""
    x = f64(gating)
    tokens, experts = x.shape
    score = softmax64(x) if scoring == "softmax" else sigmoid64(x)
    size = experts // groups
    if bias is None:
        key = x
        gv = key.reshape(tokens, groups, size).max(axis=2)
    else:
        key = (score.astype(np.float32) + f64(bias).astype(np.float32)).astype(np.float32)
        top2 = -np.sort(-key.reshape(tokens, groups, size), axis=2)[:, :, :2]
        gv = top2[:, :, 0] + (top2[:, :, 1] if size > 1 else 0)
    kept_groups = np.argsort(-gv, axis=1, kind="stable")[:, :topk_group]
    allowed = np.zeros((tokens, experts), bool)
    for t in range(tokens):
        for g in kept_groups[t]:
            allowed[t, g * size:(g + 1) * size] = True
    ids = np.empty((tokens, k), np.int64)
    for t in range(tokens):
        order = np.lexsort((np.arange(experts), -f64(key[t]), ~allowed[t]))
        ids[t] = order[:k]
    w = np.take_along_axis(score, ids, axis=1)
    if renormalize:
        w = w / w.sum(axis=1, keepdims=True)
    return w * scale, ids


def grid_logits(rng, shape, dtype, levels=128):
    """Multiples of 1/32 (exact in every float dtype): exact ties are common."""
    return (rng.integers(-levels, levels + 1, size=shape) / 32.0).astype(np_dtype(dtype))


def outputs(device, tokens, k):
    return poisoned_on((tokens, k), "float32", device), to_device(np.full((tokens, k), -7, np.int32), device)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("case", [(1, 8, 2), (17, 7, 3), (33, 128, 8), (5, 256, 8)])
@pytest.mark.parametrize("renormalize", [False, True])
def test_topk_softmax_and_sigmoid(rng, device, dtype, case, renormalize):
    tokens, experts, k = case
    gating = grid_logits(rng, (tokens, experts), dtype)
    for op, scoring in ((aiter.topk_softmax, "softmax"), (aiter.topk_sigmoid, "sigmoid")):
        w, ids = outputs(device, tokens, k)
        op(to_device(gating, device), k, renormalize=renormalize, topk_weights=w, topk_ids=ids)
        ref_w, ref_ids = grouped_ref(gating, k, scoring=scoring, renormalize=renormalize)
        np.testing.assert_array_equal(on_host(ids), ref_ids, err_msg=scoring)
        assert_close(on_host(w), ref_w, "float32", what=scoring, **WEIGHT_TOL)


# (T, E, groups, topk_group, k): DeepSeek-V3, odd sizes, groups of one expert, one group.
GROUPED = [(1, 256, 8, 4, 8), (19, 256, 8, 4, 8), (7, 12, 4, 2, 3), (9, 7, 7, 3, 3), (5, 16, 1, 1, 4),
           (3, 64, 8, 8, 6)]


@pytest.mark.parametrize("case", GROUPED)
@pytest.mark.parametrize("scoring", ["softmax", "sigmoid"])
def test_grouped_topk(rng, device, case, scoring):
    tokens, experts, groups, topk_group, k = case
    gating = grid_logits(rng, (tokens, experts), "float32")
    w, ids = outputs(device, tokens, k)
    aiter.grouped_topk(to_device(gating, device), k, groups, topk_group, scoring_func=scoring, renormalize=True,
                       routed_scaling_factor=2.5, topk_weights=w, topk_ids=ids)
    ref_w, ref_ids = grouped_ref(gating, k, groups, topk_group, scoring=scoring, renormalize=True, scale=2.5)
    np.testing.assert_array_equal(on_host(ids), ref_ids)
    assert_close(on_host(w), ref_w, "float32", **WEIGHT_TOL)


@pytest.mark.parametrize("case", GROUPED)
@pytest.mark.parametrize("bias_dtype", ["float32", "same"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("renormalize", [False, True])
def test_biased_grouped_topk(rng, device, case, bias_dtype, dtype, renormalize):
    tokens, experts, groups, topk_group, k = case
    gating = (rng.standard_normal((tokens, experts)) * 2).astype(np_dtype(dtype))
    bias = (rng.integers(-8, 9, size=experts) / 64.0).astype(np_dtype(dtype if bias_dtype == "same" else "float32"))
    w, ids = outputs(device, tokens, k)
    aiter.biased_grouped_topk(to_device(gating, device), to_device(bias, device), k, groups, topk_group,
                              renormalize=renormalize, routed_scaling_factor=2.5, topk_weights=w, topk_ids=ids)
    ref_w, ref_ids = grouped_ref(gating, k, groups, topk_group, bias, "sigmoid", renormalize, 2.5)
    np.testing.assert_array_equal(on_host(ids), ref_ids)
    assert_close(on_host(w), ref_w, "float32", **WEIGHT_TOL)


def test_biased_ties_go_to_lower_ids(device):
    """Equal logits and biases: equal choice values, so groups and experts go to the lower ids."""
    gating = np.zeros((2, 16), np.float32)
    gating[1, [3, 5, 9, 14]] = 1.0
    bias = np.zeros(16, np.float32)
    w, ids = outputs(device, 2, 3)
    aiter.biased_grouped_topk(to_device(gating, device), to_device(bias, device), 3, 4, 2, topk_weights=w,
                              topk_ids=ids)
    # token 0: groups 0, 1 (all tie), experts 0, 1, 2; token 1: groups 1 (5) and 0 (3): 3, 5, then 0.
    np.testing.assert_array_equal(on_host(ids), [[0, 1, 2], [3, 5, 0]])


@pytest.mark.gpu
def test_gpu_matches_cpu_on_continuous_values(rng):
    """The same experts on both backends, bit for bit, for random logits."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    gating = (rng.standard_normal((3000, 256)) * 3).astype(np.float32)
    bias = (rng.standard_normal(256) * 0.1).astype(np.float32)
    cpu = aiter.biased_grouped_topk(gating, bias, 8, 8, 4)
    gpu = aiter.biased_grouped_topk(to_device(gating, "cuda"), to_device(bias, "cuda"), 8, 8, 4)
    np.testing.assert_array_equal(on_host(gpu[1]), cpu[1])
    assert_close(on_host(gpu[0]), cpu[0], "float32", **WEIGHT_TOL)
    cpu = aiter.topk_softmax(gating, 8, renormalize=True)
    gpu = aiter.topk_softmax(to_device(gating, "cuda"), 8, renormalize=True)
    np.testing.assert_array_equal(on_host(gpu[1]), cpu[1])
    assert_close(on_host(gpu[0]), cpu[0], "float32", **WEIGHT_TOL)


def test_grouped_topk_rejects_bad_arguments(rng):
    gating = rng.standard_normal((4, 16)).astype(np.float32)
    bias = np.zeros(16, np.float32)
    cases = [
        (r"num_expert_group: expected a divisor", dict(num_expert_group=5)),
        (r"topk_group: expected 1 <= topk_group", dict(topk_group=5)),
        (r"k\) <= topk_group \* experts per group \(8\)", dict(k=9)),
        (r"correction_bias: expected sigmoid scoring", dict(correction_bias=bias, scoring_func="softmax")),
        (r"correction_bias: expected shape\[0\] == 16", dict(correction_bias=np.zeros(8, np.float32), scoring_func="sigmoid")),
        (r"scoring_func: expected", dict(scoring_func="tanh")),
    ]
    for message, change in cases:
        args = dict(k=2, num_expert_group=4, topk_group=2)
        args.update(change)
        with pytest.raises(aiter.AiterError, match=message):
            aiter.grouped_topk(gating, args.pop("k"), args.pop("num_expert_group"), args.pop("topk_group"), **args)
