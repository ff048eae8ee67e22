"""fused_moe on the CPU and the GPU against a float64 NumPy MoE layer."""
import math

import numpy as np
import pytest

import aiter
from harness import f64, np_dtype, on_host, poisoned_on, to_device

# Stage 1's output and each expert's output are rounded to the dtype, then the
# sum: errors of a few units of the dtype's precision relative to the outputs'
# size (measured against the rms of the reference).
TOL = {"bfloat16": (2e-2, 3e-2), "float16": (4e-3, 5e-3)}


def act64(name, g):
    if name == "silu":
        return g / (1.0 + np.exp(-g))
    if name == "gelu":
        return 0.5 * g * (1.0 + np.vectorize(math.erf)(g / math.sqrt(2.0)))
    return 0.5 * g * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * g ** 3)))


def weights64(w):
    """An expert's weights as float64; 8- and 16-bit floats through a table of every
    code (exact, and much faster than ml_dtypes' conversion at large H)."""
    w = np.asarray(w)
    if w.dtype.kind == "V" and w.dtype.itemsize <= 2:  # ml_dtypes' bfloat16 and fp8
        bits = np.uint8 if w.dtype.itemsize == 1 else np.uint16
        with np.errstate(invalid="ignore"):  # the NaN codes
            table = np.arange(np.iinfo(bits).max + 1, dtype=bits).view(w.dtype).astype(np.float64)
        return table[w.view(bits)]
    return f64(w)


def pairs_by_expert(ids, mask=None):
    """(expert, token indices, slot indices) for each expert some token routes to
    (and this rank holds, under an expert mask): the reference then touches only
    the experts the tokens use, one matrix product each."""
    tokens, slots = np.nonzero(np.ones(ids.shape, bool))
    experts = ids[tokens, slots]
    for e in np.unique(experts):
        if mask is not None and not mask[e]:
            continue
        sel = experts == e
        yield int(e), tokens[sel], slots[sel]


def rounded_to(values, dtype):
    """float64 values rounded to a 16-bit float dtype (through fp32, as the GPU's fp32
    products are: exact here, since a 16-bit value times an fp32 one fits float64)."""
    return values.astype(np.float32).astype(dtype).astype(np.float64)


def moe_ref(x, w1, w2, weights, ids, act="silu", weights_on_input=False, mask=None):
    x_dtype = np.asarray(x).dtype
    x, weights = f64(x), f64(weights)
    inter = w1.shape[1] // 2
    local = np.arange(w1.shape[0]) if mask is None else np.cumsum(mask.astype(bool)) - 1
    out = np.zeros_like(x)
    for e, t, j in pairs_by_expert(ids, mask):
        w, down = weights64(w1[local[e]]), weights64(w2[local[e]])
        # weights_on_input: stage 1 reads x[t] * w as a row of x's dtype (AITER's
        # scaled copy), so that rounding is the op's own; it can move an output by
        # several % of its rms where the pairs' outputs cancel.
        xin = rounded_to(x[t] * weights[t, j][:, None], x_dtype) if weights_on_input else x[t]
        h = act64(act, xin @ w[:inter].T) * (xin @ w[inter:].T)
        y = h @ down.T
        np.add.at(out, t, y if weights_on_input else y * weights[t, j][:, None])
    return out


def check_out(out, ref, dtype):
    rtol, atol = TOL[dtype]
    out = f64(on_host(out))
    assert not np.isnan(out).any(), f"{np.isnan(out).sum()} outputs unwritten"
    scale = np.sqrt(np.mean(ref ** 2)) + 1e-30
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol * scale)


def make_layer(rng, tokens, experts, k, hidden, inter, dtype, skew=False):
    dt = np_dtype(dtype)
    x = rng.standard_normal((tokens, hidden)).astype(dt)
    w1 = (rng.standard_normal((experts, 2 * inter, hidden)) / math.sqrt(hidden)).astype(dt)
    w2 = (rng.standard_normal((experts, hidden, inter)) / math.sqrt(inter)).astype(dt)
    if skew:
        ids = np.tile(np.arange(k, dtype=np.int32), (tokens, 1))
    else:
        ids = np.array([rng.permutation(experts)[:k] for _ in range(tokens)], np.int32).reshape(tokens, k)
    weights = rng.random((tokens, k)).astype(np.float32)
    return x, w1, w2, weights, ids


def routed_ids(rng, tokens, experts, k):
    """k distinct experts a token, uniformly at random."""
    return np.argsort(rng.random((tokens, experts)), axis=1)[:, :k].astype(np.int32)


def nan_filled(shape, dt):
    """A NaN array of a 16- or 8-bit float dtype, filled as bytes (fast at a GB)."""
    pattern = np.array(np.nan, dt).view(np.uint16 if dt.itemsize == 2 else np.uint8)
    return np.full(shape, pattern, pattern.dtype).view(dt)


def make_routed_layer(rng, tokens, experts, k, hidden, inter, dtype):
    """A layer whose unrouted experts are NaN: only the experts the tokens use get
    random weights (cheap at E 256 with large H), and a kernel that reads an
    expert no token routes to puts NaN in the output."""
    dt = np_dtype(dtype)
    ids = routed_ids(rng, tokens, experts, k)
    used = np.unique(ids)
    x = rng.standard_normal((tokens, hidden), dtype=np.float32).astype(dt)
    w1 = nan_filled((experts, 2 * inter, hidden), dt)
    w2 = nan_filled((experts, hidden, inter), dt)
    for w, rows, cols in ((w1, 2 * inter, hidden), (w2, hidden, inter)):
        values = rng.standard_normal((len(used), rows, cols), dtype=np.float32)
        values *= np.float32(1 / math.sqrt(cols))
        w[used] = values.astype(dt)
    weights = rng.random((tokens, k)).astype(np.float32)
    return x, w1, w2, weights, ids


def run(device, x, w1, w2, weights, ids, **kw):
    dev = [to_device(a, device) for a in (x, w1, w2, weights, ids)]
    if "expert_mask" in kw:
        kw["expert_mask"] = to_device(kw["expert_mask"], device)
    out = poisoned_on(x.shape, x.dtype.name, device)
    experts = kw["expert_mask"].shape[0] if "expert_mask" in kw else w1.shape[0]
    size = aiter.fused_moe_workspace_size(x.shape[0], ids.shape[1], experts, x.shape[1], w1.shape[1] // 2,
                                          weights_on_input=kw.get("weights_on_input", False),
                                          block_size=kw.get("block_size", 0))
    raw = np.full(size + 256, 0xFF, np.uint8)  # NaN bytes in every 16-bit slot
    workspace = to_device(raw, device)
    start = -int(workspace.__array_interface__["data"][0] if device == "cpu" else workspace.data_ptr()) % 256
    aiter.fused_moe(*dev, out=out, workspace=workspace[start:start + size], **kw)
    return out


# (T, E, k, H, I): one token, odd sizes (E 7, k 3), unaligned H / I (portable path on the GPU), many tokens.
CPU_CASES = [(1, 8, 2, 64, 32), (3, 7, 3, 40, 24), (17, 8, 2, 128, 64), (60, 16, 4, 64, 48), (5, 4, 4, 20, 10)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CPU_CASES)
def test_fused_moe(rng, device, dtype, case):
    x, w1, w2, weights, ids = make_layer(rng, *case, dtype)
    check_out(run(device, x, w1, w2, weights, ids), moe_ref(x, w1, w2, weights, ids), dtype)


@pytest.mark.parametrize("act", ["silu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("block_size", [32, 64, 128])
def test_fused_moe_activations_and_blocks(rng, device, act, block_size):
    x, w1, w2, weights, ids = make_layer(rng, 9, 6, 3, 64, 32, "bfloat16")
    out = run(device, x, w1, w2, weights, ids, activation=act, block_size=block_size)
    check_out(out, moe_ref(x, w1, w2, weights, ids, act), "bfloat16")


def test_fused_moe_weights_on_input_and_skew(rng, device):
    x, w1, w2, weights, ids = make_layer(rng, 21, 8, 1, 64, 32, "bfloat16", skew=True)
    out = run(device, x, w1, w2, weights, ids, weights_on_input=True)
    check_out(out, moe_ref(x, w1, w2, weights, ids, weights_on_input=True), "bfloat16")


def test_fused_moe_shared_expert(rng, device):
    """A shared expert as an extra expert (id E) every token uses with weight 1."""
    x, w1, w2, weights, ids = make_layer(rng, 11, 9, 2, 64, 32, "float16")
    ids[:, 1] = 8
    weights[:, 1] = 1.0
    check_out(run(device, x, w1, w2, weights, ids), moe_ref(x, w1, w2, weights, ids), "float16")


def test_fused_moe_expert_mask(rng, device):
    """Expert parallelism: this rank holds experts 1, 4, 5 of 8; other pairs add nothing."""
    x, w1, w2, weights, ids = make_layer(rng, 13, 8, 3, 64, 32, "bfloat16")
    mask = np.zeros(8, np.int32)
    mask[[1, 4, 5]] = 1
    w1, w2 = w1[[1, 4, 5]], w2[[1, 4, 5]]
    out = run(device, x, w1, w2, weights, ids, expert_mask=mask)
    check_out(out, moe_ref(x, w1, w2, weights, ids, mask=mask), "bfloat16")


GPU_CASES = [(1000, 128, 8, 256, 128), (257, 8, 2, 1024, 512), (64, 256, 8, 512, 256), (1, 128, 8, 2048, 768)]


@pytest.mark.parametrize("variant", ["auto", "portable", "mma"])
@pytest.mark.parametrize("case", GPU_CASES)
def test_fused_moe_gpu_shapes(rng, device, variant, case):
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    x, w1, w2, weights, ids = make_routed_layer(rng, *case, "bfloat16")
    out = run(device, x, w1, w2, weights, ids, variant=variant)
    check_out(out, moe_ref(x, w1, w2, weights, ids), "bfloat16")


# Decode with long inter: stage 2 splits K into 2, 4 or 8 parts
# (gpu/moe_fused.cpp's stage2_splits: few blocks, 16+ K steps a part, at most
# 64 pairs) and the combine adds the parts' fp32 rows.  Inter 4104: a part
# ends mid-step (65 steps of 64); H 264: a column tile past the edge; 64 pairs
# (the most with partial rows) and 68 (none: one part); inter 8192 (8 parts).
# The mma.sync stages (the 16-bit default at decode) and the Triton stages
# (the fp8 default; the tuned variant "triton" here), which need H a multiple of 16.
SPLIT_CASES = [(1, 8, 2, 264, 4104), (5, 16, 4, 256, 2048), (16, 8, 4, 128, 4096), (17, 8, 4, 128, 4096),
               (2, 8, 3, 128, 8192)]


@pytest.mark.parametrize("stages", ["auto", "triton"])
@pytest.mark.parametrize("case", SPLIT_CASES)
def test_fused_moe_decode_split_k_gpu(rng, device, stages, case):
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    if stages == "triton" and case[3] % 16:
        pytest.skip("the Triton stages: H a multiple of 16")
    x, w1, w2, weights, ids = make_routed_layer(rng, *case, "bfloat16")
    with aiter.tuning.force_variant("fused_moe", None if stages == "auto" else stages):
        first = run(device, x, w1, w2, weights, ids)
        second = run(device, x, w1, w2, weights, ids)
    check_out(first, moe_ref(x, w1, w2, weights, ids), "bfloat16")
    np.testing.assert_array_equal(f64(on_host(first)), f64(on_host(second)))  # the parts summed in a fixed order


def test_fused_moe_decode_split_k_expert_mask_gpu(rng, device):
    """Split stage 2 with pairs of experts this rank does not hold: their
    partial rows are never written, and the combine skips them."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    x, w1, w2, weights, ids = make_routed_layer(rng, 3, 8, 3, 256, 4096, "bfloat16")
    mask = np.array([1, 0, 1, 1, 0, 1, 1, 0], np.int32)
    w1, w2 = w1[mask.astype(bool)], w2[mask.astype(bool)]
    out = run(device, x, w1, w2, weights, ids, expert_mask=mask)
    check_out(out, moe_ref(x, w1, w2, weights, ids, mask=mask), "bfloat16")


# Prefill sizes: on average 64 or more rows an expert, where the GPU runs its
# Triton stages (wgmma on sm_90a) when they are built; odd token counts, inter
# not a multiple of the Triton tiles' width (192, 320: clamped columns), k 3.
# Past 4096 pairs the sort runs on several blocks (2049 x 2 just past it; E 128
# k 8 as Qwen3-30B, 3 blocks).
PREFILL_CASES = [(2049, 8, 2, 512, 256), (1501, 16, 4, 256, 192), (700, 4, 3, 384, 320), (1100, 128, 8, 256, 128)]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", PREFILL_CASES)
def test_fused_moe_prefill_gpu(rng, device, dtype, case):
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    x, w1, w2, weights, ids = make_routed_layer(rng, *case, dtype)
    check_out(run(device, x, w1, w2, weights, ids), moe_ref(x, w1, w2, weights, ids), dtype)


@pytest.mark.parametrize("options", [dict(activation="gelu"), dict(activation="gelu_tanh", block_size=128),
                                     dict(weights_on_input=True), dict(block_size=32)],
                         ids=["gelu", "gelu_tanh-block128", "weights_on_input", "block32"])
def test_fused_moe_prefill_options_gpu(rng, device, options):
    """The prefill path's options (block 32: BM 64 does not divide it, another path runs)."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    x, w1, w2, weights, ids = make_routed_layer(rng, 1031, 8, 2, 256, 128, "bfloat16")
    out = run(device, x, w1, w2, weights, ids, **options)
    ref = moe_ref(x, w1, w2, weights, ids, options.get("activation", "silu"), options.get("weights_on_input", False))
    check_out(out, ref, "bfloat16")


def test_fused_moe_prefill_expert_mask_gpu(rng, device):
    """Expert parallelism at prefill size: this rank holds experts 0, 3, 6 of 8."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    x, w1, w2, weights, ids = make_routed_layer(rng, 2500, 8, 2, 256, 128, "bfloat16")  # 5000 pairs: 2 sort blocks
    mask = np.zeros(8, np.int32)
    mask[[0, 3, 6]] = 1
    w1, w2 = w1[[0, 3, 6]], w2[[0, 3, 6]]
    out = run(device, x, w1, w2, weights, ids, expert_mask=mask)
    check_out(out, moe_ref(x, w1, w2, weights, ids, mask=mask), "bfloat16")


@pytest.mark.parametrize("block", [False, True], ids=["per_channel", "block_scaled"])
def test_fused_moe_fp8_prefill_gpu(rng, device, block):
    """fp8 experts at prefill size (the Triton fp8 stages where built)."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    from test_moe_fp8 import check, moe_fp8_reference, routed_fp8_layer, run_fp8  # imports this module: not at the top
    layer = routed_fp8_layer(rng, (1029, 8, 2, 512, 384), "bfloat16", "float8_e4m3fn", block)
    check(run_fp8(device, *layer), moe_fp8_reference(*layer, "float8_e4m3fn"))


def test_fused_moe_unrouted_experts_unread(rng, device):
    """Experts no token routes to hold NaN weights: nothing of them reaches the output."""
    x, w1, w2, weights, ids = make_routed_layer(rng, 3, 64, 4, 128, 64, "bfloat16")
    check_out(run(device, x, w1, w2, weights, ids), moe_ref(x, w1, w2, weights, ids), "bfloat16")


def test_fused_moe_gpu_matches_cpu(rng, device):
    """Same rounding steps on both backends: close to each other well within the dtype."""
    if device == "cpu":
        pytest.skip("GPU against CPU")
    x, w1, w2, weights, ids = make_layer(rng, 100, 16, 4, 128, 64, "bfloat16")
    gpu = f64(on_host(run(device, x, w1, w2, weights, ids)))
    cpu = f64(run("cpu", x, w1, w2, weights, ids))
    np.testing.assert_allclose(gpu, cpu, rtol=2e-2, atol=2e-2 * np.sqrt(np.mean(cpu ** 2)))


def check_graph_replays(rng, device, tokens, variant=None):
    """A CUDA graph of one fused_moe call (T tokens, E 8, k 2, H 128, I 64; the
    tuned variant `variant` forced while capturing), captured once on a
    NaN-filled workspace and replayed with new routing."""
    import torch
    x, w1, w2, weights, ids = make_layer(rng, tokens, 8, 2, 128, 64, "bfloat16")
    dev = [to_device(a, device) for a in (x, w1, w2, weights, ids)]
    size = aiter.fused_moe_workspace_size(tokens, 2, 8, 128, 64)
    ws = torch.full((size,), 255, dtype=torch.uint8, device="cuda")
    out = torch.empty_like(dev[0])
    with aiter.tuning.force_variant("fused_moe", variant):
        aiter.fused_moe(*dev, out=out, workspace=ws)  # loads the kernels
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            aiter.fused_moe(*dev, out=out, workspace=ws)
    for _ in range(2):
        _, _, _, new_w, new_ids = make_layer(rng, tokens, 8, 2, 128, 64, "bfloat16")
        dev[3].copy_(torch.from_numpy(new_w))
        dev[4].copy_(torch.from_numpy(new_ids))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check_out(out, moe_ref(x, w1, w2, new_w, new_ids), "bfloat16")


def test_fused_moe_graph_capture(rng, device):
    """A CUDA graph captured once replays with new routing (same T)."""
    if device == "cpu":
        pytest.skip("CUDA graphs")
    check_graph_replays(rng, device, 33)


def test_fused_moe_prefill_graph_capture(rng, device):
    """The prefill path (the sort on several blocks; with AITER_MOE_COMBINE=sums
    stage 2's fp32 sums, zeroed in the sort) captured once, replayed with new
    routing on a NaN-filled workspace."""
    if device == "cpu":
        pytest.skip("CUDA graphs")
    import torch
    case = (1501, 16, 4, 256, 192)
    x, w1, w2, weights, ids = make_routed_layer(rng, *case, "bfloat16")
    dev = [to_device(a, device) for a in (x, w1, w2, weights, ids)]
    ws = torch.full((aiter.fused_moe_workspace_size(1501, 4, 16, 256, 192),), 0xFF, dtype=torch.uint8, device="cuda")
    out = torch.empty_like(dev[0])
    aiter.fused_moe(*dev, out=out, workspace=ws)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        aiter.fused_moe(*dev, out=out, workspace=ws)
    for _ in range(2):
        new_w = rng.random((1501, 4)).astype(np.float32)
        new_ids = routed_ids(rng, 1501, 16, 4)
        dev[3].copy_(torch.from_numpy(new_w))
        dev[4].copy_(torch.from_numpy(new_ids))
        ws.fill_(0xFF)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check_out(out, moe_ref(x, w1, w2, new_w, new_ids), "bfloat16")


@pytest.mark.parametrize("k", [2, 4])
def test_fused_moe_prefill_repeatable(rng, device, k):
    """Run to run at prefill size: the outputs are bit-identical (the combine sums
    a token's rows in j order), except under AITER_MOE_COMBINE=sums, where stage 2
    adds them by atomics in whatever order the tiles finish: bit-identical up to 2
    pairs a token (0 + a + b in either order), within about an ulp beyond."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    import os
    x, w1, w2, weights, ids = make_routed_layer(rng, 2100, 8, k, 256, 128, "bfloat16")
    first, second = (f64(on_host(run(device, x, w1, w2, weights, ids))) for _ in range(2))
    if k <= 2 or os.environ.get("AITER_MOE_COMBINE") != "sums":
        np.testing.assert_array_equal(first, second)
    else:
        np.testing.assert_allclose(first, second, rtol=1e-2, atol=1e-2 * np.sqrt(np.mean(first ** 2)))


def test_fused_moe_rejects_bad_arguments(rng):
    x, w1, w2, weights, ids = make_layer(rng, 4, 8, 2, 32, 16, "bfloat16")
    bad_ids = ids.copy()
    bad_ids[2, 1] = 8
    cases = [
        (aiter.InvalidArgumentError, r"topk_ids\[2, 1\] = 8 is outside", dict(topk_ids=bad_ids)),
        (aiter.InvalidArgumentError, r"w2: expected shape\[2\] == 16", dict(w2=w2[:, :, :8].copy())),
        (aiter.InvalidArgumentError, r"w1: expected shape\[2\] == 32", dict(w1=w1[:, :, :16].copy())),
        (aiter.InvalidArgumentError, r"topk_weights: expected the shape of topk_ids",
         dict(topk_weights=weights[:, :1].copy())),
        (aiter.UnsupportedDtypeError, "w1: expected the dtype of x", dict(w1=w1.astype(np.float32))),
        (aiter.UnsupportedDtypeError, "x: expected dtype", dict(x=x.astype(np.float32), w1=w1.astype(np.float32),
                                                                 w2=w2.astype(np.float32))),
        (aiter.InvalidArgumentError, "expert_mask: expected as many local experts",
         dict(expert_mask=np.ones(9, np.int32))),
        (aiter.InvalidArgumentError, "params.block_size", dict(block_size=48)),
        (aiter.InvalidArgumentError, "activation: expected", dict(activation="relu")),
        (aiter.InvalidArgumentError, "workspace: expected at least", dict(workspace=np.zeros(64, np.uint8))),
    ]
    for error, message, change in cases:
        args = dict(x=x, w1=w1, w2=w2, topk_weights=weights, topk_ids=ids)
        args.update(change)
        out = np.full(x.shape, np.nan, x.dtype)
        with pytest.raises(error, match=message):
            aiter.fused_moe(args.pop("x"), args.pop("w1"), args.pop("w2"), args.pop("topk_weights"),
                            args.pop("topk_ids"), out=out, **args)
        assert np.isnan(f64(out)).all(), message
