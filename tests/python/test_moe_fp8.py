"""fused_moe_fp8 (fp8 experts, per-channel weight scales, dynamic per-row
activation scales) on the CPU and the GPU against a float64 NumPy layer that
quantizes at the same points."""

import numpy as np
import pytest

import aiter
from harness import QMAX, f64, ml_dtypes, np_dtype, on_host, poisoned_on, quant_reference, to_device
from test_moe_fp8_bound import check as bound_check
from test_moe_fp8_bound import moe_fp8_reference
from test_moe_fused import make_layer, nan_filled, routed_ids

pytestmark = pytest.mark.skipif(ml_dtypes is None, reason="fp8 NumPy arrays need ml_dtypes")
# For other files' CPU comparisons (test_jax_ffi.py): fp8 codes on both stage
# inputs.  This file's tests check against the data's own bound (check()).
TOL = (5e-2, 5e-2)


def quantize_channels(w, qdtype):
    """Per output channel (row of each expert matrix): scale = amax / qmax."""
    w64 = f64(w)
    amax = np.abs(w64).max(axis=2, keepdims=True)
    scale = np.where(amax > 0, amax / QMAX[qdtype], 1.0).astype(np.float32)
    return quant_reference(w64, f64(scale), qdtype), scale[..., 0]


def quantize_blocks(w, qdtype, block=128):
    """DeepSeek-V3 weights: one scale per 128 x 128 block of each expert matrix."""
    w64 = f64(w)
    e, n, k = w64.shape
    blocks = w64.reshape(e, n // block, block, k // block, block)
    amax = np.abs(blocks).max(axis=(2, 4), keepdims=True)
    scale = np.where(amax > 0, amax / QMAX[qdtype], 1.0).astype(np.float32)
    codes = quant_reference(blocks, f64(scale), qdtype).reshape(e, n, k)
    return codes, scale.reshape(e, n // block, k // block)


def moe_fp8_ref(x, w1q, w2q, s1, s2, weights, ids, qdtype, act="silu", weights_on_input=False):
    """The float64 layer alone (test_moe_fp8_bound.moe_fp8_reference, which also
    gives each element's error allowance)."""
    return moe_fp8_reference(x, w1q, w2q, s1, s2, weights, ids, qdtype, act, weights_on_input).value


def run_fp8(device, x, w1q, w2q, s1, s2, weights, ids, **kw):
    dev = [to_device(a, device) for a in (x, w1q, w2q, s1, s2, weights, ids)]
    out = poisoned_on(x.shape, x.dtype.name, device)
    size = aiter.fused_moe_workspace_size(x.shape[0], ids.shape[1], w1q.shape[0], x.shape[1], w1q.shape[1] // 2,
                                          elem_bytes=1, weights_on_input=kw.get("weights_on_input", False),
                                          block_size=kw.get("block_size", 0))
    workspace = to_device(np.full(size, 0xFF, np.uint8), device)
    aiter.fused_moe_fp8(*dev, workspace=workspace, out=out, **kw)
    return f64(on_host(out))


def check(out, ref):
    """out against a test_moe_fp8_bound.Reference: within each element's worst-case
    bound, the rms error within the model's (that module's docstring gives the
    argument; a fixed tolerance pinned one rounding of the requantized h)."""
    bound_check(out, ref)


def fp8_layer(rng, case, dtype, qdtype, block=False):
    x, w1, w2, weights, ids = make_layer(rng, *case, dtype)
    quantize = quantize_blocks if block else quantize_channels
    w1q, s1 = quantize(w1, qdtype)
    w2q, s2 = quantize(w2, qdtype)
    return x, w1q, w2q, s1, s2, weights, ids


def quantize_fp32(w, scale, qdtype):
    """Input codes of the large layers, rounded in fp32 (any codes are valid
    inputs: the reference reads the codes and scales the op is given)."""
    return np.clip(w / scale, -QMAX[qdtype], QMAX[qdtype]).astype(np_dtype(qdtype))


def routed_fp8_experts(rng, used, experts, rows, cols, qdtype, block):
    """Codes and scales of an expert matrix: random for the `used` experts, NaN for
    the rest (a kernel reading an unrouted expert puts NaN in the output).  The
    codes fill the fp8 range; the scales (amax / qmax of normal values, never 0)
    then differ block to block."""
    w = rng.standard_normal((len(used), rows, cols), dtype=np.float32)
    codes = nan_filled((experts, rows, cols), np_dtype(qdtype))
    if block:
        blocks = w.reshape(len(used), rows // 128, 128, cols // 128, 128)
        amax = np.abs(blocks).max(axis=(2, 4), keepdims=True)
        scale = (amax / np.float32(QMAX[qdtype])).astype(np.float32)
        codes[used] = quantize_fp32(blocks, scale, qdtype).reshape(len(used), rows, cols)
        scales = np.full((experts, rows // 128, cols // 128), np.nan, np.float32)
        scales[used] = scale.reshape(len(used), rows // 128, cols // 128)
    else:
        amax = np.abs(w).max(axis=2, keepdims=True)
        scale = (amax / np.float32(QMAX[qdtype])).astype(np.float32)
        codes[used] = quantize_fp32(w, scale, qdtype)
        scales = np.full((experts, rows), np.nan, np.float32)
        scales[used] = scale[..., 0]
    return codes, scales


def routed_fp8_layer(rng, case, dtype, qdtype, block=False):
    """The large shapes: only the experts the tokens route to are built."""
    tokens, experts, k, hidden, inter = case
    ids = routed_ids(rng, tokens, experts, k)
    used = np.unique(ids)
    x = rng.standard_normal((tokens, hidden), dtype=np.float32).astype(np_dtype(dtype))
    w1q, s1 = routed_fp8_experts(rng, used, experts, 2 * inter, hidden, qdtype, block)
    w2q, s2 = routed_fp8_experts(rng, used, experts, hidden, inter, qdtype, block)
    weights = rng.random((tokens, k)).astype(np.float32)
    return x, w1q, w2q, s1, s2, weights, ids


@pytest.mark.parametrize("qdtype", ["float8_e4m3fn", "float8_e4m3fnuz"])
@pytest.mark.parametrize("case", [(3, 4, 2, 256, 128), (1, 8, 3, 128, 256)])
def test_fused_moe_blockscale(rng, device, qdtype, case):
    """DeepSeek-V3 style: 128 x 128 weight blocks, 1 x 128 activation groups."""
    layer = fp8_layer(rng, case, "bfloat16", qdtype, block=True)
    check(run_fp8(device, *layer), moe_fp8_reference(*layer, qdtype))


@pytest.mark.parametrize("variant", ["auto", "portable", "mma"])
@pytest.mark.parametrize("case", [(200, 32, 8, 1024, 512), (1, 256, 8, 7168, 256),
                                  (200, 4, 3, 640, 384),  # 150 rows an expert: sm_90a's wgmma stages by default
                                  (5, 4, 2, 16512, 128)])  # 129 groups a row: the quantization's items in two rounds
def test_fused_moe_blockscale_gpu_shapes(rng, device, variant, case):
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    layer = routed_fp8_layer(rng, case, "bfloat16", "float8_e4m3fn", block=True)
    check(run_fp8(device, *layer, variant=variant), moe_fp8_reference(*layer, "float8_e4m3fn"))


def test_fused_moe_blockscale_strided_rows_gpu(rng, device):
    """x as the first columns of a wider array, rows 8 bytes off 16-byte
    alignment every other token: the block-scaled quantization takes those rows
    element by element, the others in 16-byte packs."""
    if device == "cpu":
        pytest.skip("the GPU quantization's two paths")
    layer = routed_fp8_layer(rng, (9, 8, 2, 256, 128), "bfloat16", "float8_e4m3fn", block=True)
    x = layer[0]
    wide = np.zeros((x.shape[0], x.shape[1] + 4), x.dtype)
    wide[:, : x.shape[1]] = x
    dev = [to_device(wide, device)[:, : x.shape[1]]] + [to_device(a, device) for a in layer[1:]]
    out = poisoned_on(x.shape, x.dtype.name, device)
    size = aiter.fused_moe_workspace_size(x.shape[0], 2, 8, x.shape[1], 128, elem_bytes=1)
    aiter.fused_moe_fp8(*dev, workspace=to_device(np.full(size, 0xFF, np.uint8), device), out=out)
    check(f64(on_host(out)), moe_fp8_reference(*layer, "float8_e4m3fn"))


CASES = [(1, 8, 2, 64, 32), (3, 7, 3, 48, 32), (17, 8, 2, 128, 64), (5, 4, 4, 20, 10)]


@pytest.mark.parametrize("qdtype", ["float8_e4m3fn", "float8_e4m3fnuz"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES)
def test_fused_moe_fp8(rng, device, qdtype, dtype, case):
    layer = fp8_layer(rng, case, dtype, qdtype)
    check(run_fp8(device, *layer), moe_fp8_reference(*layer, qdtype))


@pytest.mark.parametrize("weights_on_input", [False, True])
def test_fused_moe_fp8_options(rng, device, weights_on_input):
    layer = fp8_layer(rng, (9, 6, 2, 64, 32), "bfloat16", "float8_e4m3fn")
    out = run_fp8(device, *layer, activation="gelu", weights_on_input=weights_on_input, block_size=32)
    check(out, moe_fp8_reference(*layer, "float8_e4m3fn", "gelu", weights_on_input))


@pytest.mark.parametrize("variant", ["auto", "portable", "mma"])
@pytest.mark.parametrize("case", [(300, 64, 6, 512, 256), (1, 128, 8, 2048, 768), (129, 8, 2, 1024, 512)])
def test_fused_moe_fp8_gpu_shapes(rng, device, variant, case):
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    layer = routed_fp8_layer(rng, case, "bfloat16", "float8_e4m3fn")
    check(run_fp8(device, *layer, variant=variant), moe_fp8_reference(*layer, "float8_e4m3fn"))


def check_forced(rng, device, variant, block, case):
    """A routed fp8 layer (GPU only) on a forced tuned variant against float64."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    op = "fused_moe_fp8_blockscale" if block else "fused_moe_fp8"
    layer = routed_fp8_layer(rng, case, "bfloat16", "float8_e4m3fn", block)
    with aiter.tuning.force_variant(op, variant):
        out = run_fp8(device, *layer)
    check(out, moe_fp8_reference(*layer, "float8_e4m3fn"))


@pytest.mark.parametrize("stages", ["mma_n128", "triton_wide", "triton_narrow"])
@pytest.mark.parametrize("block", [False, True], ids=["per_channel", "block_scaled"])
@pytest.mark.parametrize("case", [(1, 8, 2, 256, 4096), (3, 8, 4, 384, 8192), (2, 8, 3, 128, 16384)])
def test_fused_moe_fp8_decode_split_k_gpu(rng, device, stages, block, case):
    """Stage 2 split along K (fp8: 32, 64 and 128 steps of 128 codes: 2, 4
    and 8 parts; block-scaled: each part's K groups scaled where they fall)
    with the partial rows added up by the combine, on the mma.sync stages
    and on the Triton stages (the default for fp8) in both tile widths."""
    check_forced(rng, device, stages, block, case)


@pytest.mark.parametrize("tiles", ["triton_wide", "triton_narrow"])
@pytest.mark.parametrize("block", [False, True], ids=["per_channel", "block_scaled"])
@pytest.mark.parametrize("case", [(1, 7, 3, 384, 256), (3, 128, 8, 2048, 768), (17, 8, 2, 640, 384),
                                  (200, 4, 3, 256, 128)])
def test_fused_moe_fp8_triton_tiles_gpu(rng, device, tiles, block, case):
    """The Triton fp8 stages' wide and narrow tiles (moe_aot.py; by default the
    narrow ones below 64 rows an expert): an odd expert count and k, hidden
    not a multiple of either width (384, 640: stage 2's last column tile
    clamped), Qwen3-30B's shape at T 3, many rows an expert (several row
    tiles an expert), unrouted experts' NaN weights; tiles not built for the
    device run the widths that are (both names give the same kernel then)."""
    check_forced(rng, device, tiles, block, case)


@pytest.mark.parametrize("case,block_size,skewed,dtype,block", [
    ((77, 8, 3, 256, 128), 128, False, "float16", False),  # 128-row sorting blocks, fp16 outputs (small: no overflow)
    ((45, 6, 2, 1040, 528), 64, False, "bfloat16", False),  # K not a multiple of 128 (TMA's zero fill); ragged tiles
    ((150, 8, 2, 512, 256), 64, True, "bfloat16", False),  # every token's first pair on one expert, most unused
    ((77, 8, 3, 384, 256), 128, False, "float16", True),  # block-scaled: 128-row blocks, fp16, 3 K groups
    ((150, 8, 2, 640, 384), 64, True, "bfloat16", True),  # block-scaled, skewed: gate / up blocks 0-2 / 3-5
], ids=["block128-f16", "ragged", "skewed", "bs-block128-f16", "bs-skewed"])
def test_fused_moe_fp8_tile_edges_gpu(rng, device, case, block_size, skewed, dtype, block):
    """Edges of the sm_90a TMA + wgmma stages (gpu/moe_wgmma.cpp): K and columns
    that do not fill a tile, experts' runs of an odd number of 64-row units
    (tiles of one unit), skewed routing, fp16 outputs, block-scaled K groups
    in runs of 4 + 2 + 1 and gate / up rows in different scale blocks.  By
    default those stages take only long K (gpu/moe_fused.cpp's
    wgmma_by_default), so these cases run them under AITER_MOE_KERNEL=wgmma;
    otherwise (and on other GPUs) they check the path that takes them."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    x, w1q, w2q, s1, s2, weights, ids = routed_fp8_layer(rng, case, dtype, "float8_e4m3fn", block)
    if skewed:
        used = np.unique(ids)
        ids = np.stack([np.full(len(ids), used[0]), np.full(len(ids), used[1])], axis=1).astype(np.int32)
        ids[::7, 1] = used[2]
    layer = (x, w1q, w2q, s1, s2, weights, ids)
    check(run_fp8(device, *layer, block_size=block_size), moe_fp8_reference(*layer, "float8_e4m3fn"))


def test_fused_moe_fp8_long_k_default_path_gpu(rng, device):
    """Both stages' K at 4096 with 43 rows an expert: the shapes for which
    the dispatch picks the sm_90a TMA + wgmma stages by itself
    (gpu/moe_fused.cpp's wgmma_by_default; the Mixtral-sized layers), so a
    plain GPU run covers that choice as well as the forced runs do."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    layer = routed_fp8_layer(rng, (64, 3, 2, 4096, 4096), "bfloat16", "float8_e4m3fn")
    check(run_fp8(device, *layer), moe_fp8_reference(*layer, "float8_e4m3fn"))


@pytest.mark.parametrize("case", [(37, 8, 2, 4096, 2304), (21, 4, 2, 2060, 2052)], ids=["packed", "unaligned"])
def test_fused_moe_fp8_long_rows_gpu(rng, device, case):
    """Rows past 2048 values, which the quantization takes a block each: in
    16-byte packs (multiples of 8), else element by element."""
    if device == "cpu":
        pytest.skip("large shapes: GPU only")
    layer = routed_fp8_layer(rng, case, "bfloat16", "float8_e4m3fn")
    check(run_fp8(device, *layer), moe_fp8_reference(*layer, "float8_e4m3fn"))


@pytest.mark.parametrize("block", [False, True])
def test_fused_moe_fp8_unrouted_experts_unread(rng, device, block):
    """Experts no token routes to hold NaN codes and scales: none reaches the output."""
    layer = routed_fp8_layer(rng, (2, 64, 4, 256, 128), "bfloat16", "float8_e4m3fn", block)
    check(run_fp8(device, *layer), moe_fp8_reference(*layer, "float8_e4m3fn"))


def test_fused_moe_fp8_rejects_bad_scales(rng):
    x, w1q, w2q, s1, s2, weights, ids = fp8_layer(rng, (3, 4, 2, 16, 8), "bfloat16", "float8_e4m3fn")
    cases = [(r"w1_scale: expected shape\[1\] == 16", dict(w1_scale=s1[:, :8].copy())),
             (r"w2_scale: expected dtype float32", dict(w2_scale=s2.astype(np.float16))),
             (r"w2: expected the dtype of w1", dict(w2=w2q.astype(np_dtype("float8_e4m3fnuz")))),
             (r"block-scaled fp8 needs hidden and inter multiples of 128",
              dict(w1_scale=np.ones((4, 1, 1), np.float32), w2_scale=np.ones((4, 1, 1), np.float32)))]
    for message, change in cases:
        args = dict(w1_scale=s1, w2_scale=s2, w2=w2q)
        args.update(change)
        with pytest.raises(aiter.AiterError, match=message):
            aiter.fused_moe_fp8(x, w1q, args["w2"], args["w1_scale"], args["w2_scale"], weights, ids)
    with pytest.raises(aiter.AiterError, match="w1: expected dtype"):
        aiter.fused_moe_fp8(x, w1q.astype(np.float32), w2q, s1, s2, weights, ids)
