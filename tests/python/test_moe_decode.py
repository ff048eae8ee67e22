"""The fused MoE's one-kernel path for few pairs (tuned variant "decode",
kernels/moe/moe_decode.cu) on the GPU, forced, against the float64 NumPy layers
of test_moe_fused.py and test_moe_fp8.py."""
import numpy as np
import pytest

import aiter
from harness import f64, ml_dtypes, on_host, to_device
from test_moe_fused import check_graph_replays, check_out, make_layer, make_routed_layer, moe_ref, run


def skip_cpu(device):
    if device == "cpu":
        pytest.skip("the GPU's decode kernel")


def run_decode(device, x, w1, w2, weights, ids, **kw):
    with aiter.tuning.force_variant("fused_moe", "decode"):
        return run(device, x, w1, w2, weights, ids, **kw)


# (T, E, k, H, I): one token; odd E and k; 17 tokens; Qwen3-30B's shape at T 3
# (stage 1 in teams of 4 warps); long inter (stage 2 in teams of 8 warps at 2
# pairs, fewer at 64 and 68 pairs); inter 4160 (a part ends mid-way); long
# hidden (stage 1 in teams of 8 and of 4 warps, libaiter/gpu/moe_decode.cpp).
CASES = [(1, 8, 2, 256, 128), (3, 7, 3, 192, 320), (17, 8, 2, 128, 64), (3, 128, 8, 2048, 768),
         (1, 8, 2, 256, 4096), (16, 8, 4, 128, 4096), (17, 8, 4, 128, 4096), (2, 8, 3, 64, 4160),
         (1, 8, 2, 4096, 64), (1, 8, 2, 2048, 192)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES)
def test_decode_moe(rng, device, dtype, case):
    skip_cpu(device)
    x, w1, w2, weights, ids = make_routed_layer(rng, *case, dtype)
    check_out(run_decode(device, x, w1, w2, weights, ids), moe_ref(x, w1, w2, weights, ids), dtype)


@pytest.mark.parametrize("tokens,experts,k", [(40, 4, 2), (100, 2, 2), (9, 1, 1)])
def test_decode_moe_many_pairs_an_expert(rng, device, tokens, experts, k):
    """Experts with more pairs than one pass over K multiplies (16): further passes."""
    skip_cpu(device)
    x, w1, w2, weights, ids = make_layer(rng, tokens, experts, k, 128, 192, "bfloat16", skew=True)
    check_out(run_decode(device, x, w1, w2, weights, ids), moe_ref(x, w1, w2, weights, ids), "bfloat16")


@pytest.mark.parametrize("act", ["gelu", "gelu_tanh"])
def test_decode_moe_activations(rng, device, act):
    skip_cpu(device)
    x, w1, w2, weights, ids = make_layer(rng, 5, 8, 2, 128, 64, "bfloat16")
    out = run_decode(device, x, w1, w2, weights, ids, activation=act)
    check_out(out, moe_ref(x, w1, w2, weights, ids, act=act), "bfloat16")


@pytest.mark.parametrize("mask_dtype", [np.int32, np.uint8])
@pytest.mark.parametrize("inter", [64, 4096])
def test_decode_moe_expert_mask(rng, device, mask_dtype, inter):
    """Pairs of experts this rank does not hold add nothing; w1 / w2 hold the
    local experts only (with long inter: stage 2's partial rows)."""
    skip_cpu(device)
    x, w1, w2, weights, ids = make_routed_layer(rng, 3, 8, 3, 128, inter, "bfloat16")
    mask = np.array([1, 0, 1, 1, 0, 1, 1, 0], mask_dtype)
    w1, w2 = w1[mask.astype(bool)], w2[mask.astype(bool)]
    out = run_decode(device, x, w1, w2, weights, ids, expert_mask=mask)
    check_out(out, moe_ref(x, w1, w2, weights, ids, mask=mask), "bfloat16")


def test_decode_moe_repeatable(rng, device):
    """Each pair's rows and the combine's sums in a fixed order: equal bits."""
    skip_cpu(device)
    x, w1, w2, weights, ids = make_routed_layer(rng, 16, 8, 4, 128, 4096, "bfloat16")
    first = on_host(run_decode(device, x, w1, w2, weights, ids))
    second = on_host(run_decode(device, x, w1, w2, weights, ids))
    np.testing.assert_array_equal(f64(first), f64(second))


def test_decode_moe_graph_capture(rng, device):
    """Captured once (a cooperative launch), replayed with new routing."""
    skip_cpu(device)
    check_graph_replays(rng, device, 5, "decode")


def test_decode_moe_after_gpu_routing(rng, device):
    """Routing on the GPU, then the decode kernel on the same stream with no
    synchronization between, new logits each round.  The decode kernel may be
    launched while the routing runs (programmatic launch): it must wait for
    that round's ids and weights before it reads them."""
    skip_cpu(device)
    import torch
    tokens, experts, k, hidden, inter, rounds = 2, 64, 6, 256, 128, 8
    x, w1, w2, _, _ = make_layer(rng, tokens, experts, k, hidden, inter, "bfloat16")
    dev = [to_device(a, device) for a in (x, w1, w2)]
    logits = torch.from_numpy(rng.standard_normal((rounds, tokens, experts), dtype=np.float32)).cuda()
    weights = torch.empty((tokens, k), dtype=torch.float32, device="cuda")
    ids = torch.empty((tokens, k), dtype=torch.int32, device="cuda")
    ws = torch.empty(aiter.fused_moe_workspace_size(tokens, k, experts, hidden, inter), dtype=torch.uint8,
                     device="cuda")
    outs = torch.full((rounds, tokens, hidden), float("nan"), dtype=torch.bfloat16, device="cuda")
    routed = []
    with aiter.tuning.force_variant("fused_moe", "decode"):
        for r in range(rounds):
            aiter.topk_softmax(logits[r], k, renormalize=True, topk_weights=weights, topk_ids=ids)
            aiter.fused_moe(dev[0], dev[1], dev[2], weights, ids, out=outs[r], workspace=ws)
            routed.append((weights.clone(), ids.clone()))
    torch.cuda.synchronize()
    for r in range(rounds):
        w, i = (t.cpu().numpy() for t in routed[r])
        check_out(outs[r], moe_ref(x, w1, w2, w, i), "bfloat16")


def test_decode_moe_refuses_what_it_cannot_run(rng, device):
    """weights_on_input, too many pairs, inter not a multiple of 64: a clear error, nothing run."""
    skip_cpu(device)
    for case, kw in [((3, 8, 2, 128, 64), {"weights_on_input": True}), ((600, 8, 2, 128, 64), {}),
                     ((3, 8, 2, 128, 96), {})]:
        x, w1, w2, weights, ids = make_layer(rng, *case, "bfloat16")
        with pytest.raises(aiter.AiterError, match="decode cannot run"):
            run_decode(device, x, w1, w2, weights, ids, **kw)


# ---- fp8 per channel ---------------------------------------------------------------
# Routed layers (unrouted experts NaN; codes filling the fp8 range, so bf16
# outputs: fp16 would overflow); then fp16 on a layer of scaled weights.
FP8_CASES = [(1, 8, 2, 256, 4096), (3, 128, 8, 2048, 768), (17, 8, 2, 640, 384), (1, 7, 3, 384, 256),
             (64, 16, 2, 256, 128), (8, 4, 4, 128, 64), (2, 8, 2, 4096, 128)]


def run_decode_fp8(device, layer):
    from test_moe_fp8 import run_fp8
    with aiter.tuning.force_variant("fused_moe_fp8", "decode"):
        return run_fp8(device, *layer)


@pytest.mark.skipif(ml_dtypes is None, reason="fp8 NumPy arrays need ml_dtypes")
@pytest.mark.parametrize("case", FP8_CASES)
def test_decode_moe_fp8(rng, device, case):
    """The same codes and scales as the chain's quantization, fp8 products summed
    in fp32: within the data's own bound (test_moe_fp8_bound)."""
    skip_cpu(device)
    from test_moe_fp8 import check, routed_fp8_layer
    from test_moe_fp8_bound import moe_fp8_reference
    layer = routed_fp8_layer(rng, case, "bfloat16", "float8_e4m3fn")
    check(run_decode_fp8(device, layer), moe_fp8_reference(*layer, "float8_e4m3fn"))


@pytest.mark.skipif(ml_dtypes is None, reason="fp8 NumPy arrays need ml_dtypes")
@pytest.mark.parametrize("case", [(5, 8, 2, 256, 128), (40, 4, 2, 128, 192)])
def test_decode_moe_fp8_half(rng, device, case):
    skip_cpu(device)
    from test_moe_fp8 import check, fp8_layer
    from test_moe_fp8_bound import moe_fp8_reference
    layer = fp8_layer(rng, case, "float16", "float8_e4m3fn")
    check(run_decode_fp8(device, layer), moe_fp8_reference(*layer, "float8_e4m3fn"))
