"""moe_sorting on the CPU and the GPU against a NumPy counting sort."""
import numpy as np
import pytest

import aiter
from harness import on_host, to_device


def sorting_ref(ids, experts, block, mask=None):
    """Per local expert (in order): its pairs in increasing order, padded to block.
    Returns the expert segments [(local id, pairs)] and the padded total."""
    tokens, k = ids.shape
    local = np.ones(experts, bool) if mask is None else mask.astype(bool)
    flat = ids.reshape(-1)
    segments, total, index = [], 0, 0
    for e in range(experts):
        if not local[e]:
            continue
        pairs = np.flatnonzero(flat == e)
        segments.append((index, pairs))
        total += -(-len(pairs) // block) * block
        index += 1
    return segments, total


def check_sorting(ids, experts, block, sorted_ids, block_experts, num_valid, mask=None, ordered=True):
    tokens, k = ids.shape
    segments, total = sorting_ref(ids, experts, block, mask)
    sorted_ids, block_experts = on_host(sorted_ids), on_host(block_experts)
    assert on_host(num_valid)[0] == total
    assert len(sorted_ids) >= aiter.moe_sorting_max_rows(tokens, k, experts, block) >= total
    row = 0
    for index, pairs in segments:
        padded = -(-len(pairs) // block) * block
        got = sorted_ids[row:row + len(pairs)]
        np.testing.assert_array_equal(got if ordered else np.sort(got), pairs)
        assert (sorted_ids[row + len(pairs):row + padded] == tokens * k).all(), "padding rows"
        assert (block_experts[row // block:(row + padded) // block] == index).all(), "block experts"
        row += padded
    assert (sorted_ids[total:] == tokens * k).all(), "rows past num_valid"
    assert (block_experts[total // block:] == -1).all(), "blocks past num_valid"


def routed_ids(rng, tokens, k, experts, skew=False):
    if skew:  # every token on expert 0 (and others for k > 1), most experts empty
        return np.tile(np.arange(k, dtype=np.int32), (tokens, 1))
    return np.array([rng.permutation(experts)[:k] for _ in range(tokens)], np.int32).reshape(tokens, k)


@pytest.mark.parametrize("case", [(1, 8, 2, 4), (3, 7, 3, 16), (17, 128, 8, 32), (200, 8, 2, 64), (0, 8, 2, 16)])
@pytest.mark.parametrize("skew", [False, True])
def test_moe_sorting(rng, device, case, skew):
    tokens, experts, k, block = case
    ids = routed_ids(rng, tokens, k, experts, skew)
    rows = aiter.moe_sorting_max_rows(tokens, k, experts, block)
    out = [to_device(np.full(n, -5, np.int32), device) for n in (rows + 3, rows // block + 1, 1)]
    got = aiter.moe_sorting(to_device(ids, device), experts, block, sorted_ids=out[0], block_experts=out[1],
                            num_valid=out[2])
    check_sorting(ids, experts, block, *got, ordered=device == "cpu")


@pytest.mark.parametrize("mask_dtype", ["int32", "uint8", "bool"])
def test_moe_sorting_expert_mask(rng, device, mask_dtype):
    ids = routed_ids(rng, 50, 4, 16)
    mask = np.zeros(16, mask_dtype)
    mask[[1, 2, 3, 8, 15]] = 1
    got = aiter.moe_sorting(to_device(ids, device), 16, 8, expert_mask=to_device(mask, device))
    check_sorting(ids, 16, 8, *got, mask=mask, ordered=device == "cpu")


def test_moe_sorting_big_gpu(rng, device):
    """DeepSeek-sized routing (GPU only: large)."""
    if device == "cpu":
        pytest.skip("large shape: GPU only")
    ids = routed_ids(rng, 4096, 8, 256)
    check_sorting(ids, 256, 64, *aiter.moe_sorting(to_device(ids, device), 256, 64), ordered=False)


def test_moe_sorting_bounds():
    assert aiter.moe_sorting_max_rows(1, 8, 256, 64) == 8 + 8 * 63 - (8 + 8 * 63) % 64
    assert aiter.moe_sorting_max_rows(4096, 8, 256, 64) == (32768 + 256 * 63) // 64 * 64
    assert aiter.moe_sorting_max_rows(0, 8, 256, 64) == 0


def test_moe_sorting_rejects_bad_arguments():
    ids = np.array([[0, 1], [2, 9]], np.int32)
    with pytest.raises(aiter.InvalidArgumentError, match=r"topk_ids\[1, 1\] = 9 is outside \[0, 8\)"):
        aiter.moe_sorting(ids, 8, 4)
    ok = np.array([[0, 1], [2, 3]], np.int32)
    with pytest.raises(aiter.InvalidArgumentError, match="block_size: expected"):
        aiter.moe_sorting(ok, 8, 0)
    with pytest.raises(aiter.InvalidArgumentError, match=r"expert_mask: expected shape\[0\] == 8"):
        aiter.moe_sorting(ok, 8, 4, expert_mask=np.ones(7, np.int32))
    with pytest.raises(aiter.InvalidArgumentError, match="sorted_ids: expected at least"):
        aiter.moe_sorting(ok, 8, 4, sorted_ids=np.zeros(3, np.int32))
    with pytest.raises(aiter.UnsupportedDtypeError, match="topk_ids: expected dtype int32"):
        aiter.moe_sorting(ok.astype(np.int64), 8, 4)
