"""The fused MoE stage kernels built from moe.py for each target (see aot.py)."""
from aot import FP8, TRITON_DTYPE, AotKernel, is_nvidia

# The kernel's run-time arguments in order, with their Triton types ("*in": a
# pointer to the input dtype).  The launcher (libaiter/gpu/moe_triton.cpp)
# fills them by name from the manifest's argument column.
ARGUMENTS = (
    ("a", "*in"), ("w", "*in"), ("out", "*fp32"), ("sorted_rows", "*i32"), ("block_experts", "*i32"),
    ("block_runs", "*i32"), ("num_valid", "*i32"), ("a_scale", "*fp32"), ("w_scale", "*fp32"),
    ("rows", "i32"), ("pairs", "i32"), ("topk", "i32"), ("n", "i32"), ("k", "i32"),
    ("lda", "i64"), ("ldo", "i64"),
    ("local_experts", "i32"), ("block", "i32"), ("gather", "i32"), ("act", "i32"), ("out_kind", "i32"),
    ("weights", "*fp32"), ("weights_stride", "i64"), ("combine", "i32"), ("splits", "i32"),
)
# 16-byte aligned inputs and outputs, sizes and strides multiples of 16
# elements: the launcher offers the kernels only calls that have them (and K a
# multiple of BK: the K loop has no masks).
ALIGNED = ("a", "w", "out", "n", "k", "lda", "ldo")

# (BM, BN, warps, stages) of stage 1 and stage 2.  BM 64 divides every block
# size the sorting takes beyond 32 (64, 128).  sm_90a: stage 1's product is
# 2 BN = 512 weight rows wide (gate and up), stage 2's 512: two warpgroups of
# m64n256 wgmma (half the shared-memory reads of B a product of m64n128 needs),
# 3 stages of 72 KB of shared memory.  AMD: 64 x 128 / 64 x 128 products, two
# stages (compile-verified only; no AMD GPU has run them).  Few configurations
# on purpose: each is a compile per target in every build.
NVIDIA_TILES = ((64, 256, 8, 3), (64, 512, 8, 3))
# sm_90a fp8: products half as wide (stage 1 256 weight rows, stage 2 256), 4
# stages of 40 KB: the sums are added to fp32 every K step of 128 (PROMOTE),
# DeepGEMM's remedy for wgmma's reduced-precision fp8 sums, which needs a
# second accumulator (the 512-wide products spilled 280-376 bytes with it).
NVIDIA_FP8_TILES = ((64, 128, 8, 4), (64, 256, 8, 4))
# sm_90a fp8 at decode (a few rows an expert, weights streamed once): half as
# wide again, one warpgroup, 4 stages of 24 KB (175-232 registers a thread),
# so that two blocks share an SM and one block's first loads and epilogue hide
# under the other's stream (with one block an SM nothing does).  On an H100
# (docs/performance_moe.md, run 35) 4 stages ran Qwen3-30B 2% and DeepSeek-V3
# T 8 3% faster than 3 stages, Mixtral-8x7B 1% slower.  gpu/moe_fused.cpp's
# triton_tiles chooses them.
NVIDIA_FP8_NARROW_TILES = ((64, 64, 4, 4), (64, 128, 4, 4))
AMD_TILES = ((64, 64, 4, 2), (64, 128, 4, 2))
BK_16BIT = {"gfx1100": 32}  # RDNA 3: BK 64 spilled in the GEMM family's kernels (gemm_aot.py)


def variant(dtype, tile, bk, block_scaled):
    """The manifest's variant: triton_<dtype>.<BM>x<BN>x<BK>[.bs] (dtype: the weights')."""
    bm, bn = tile[:2]
    return f"triton_{dtype}.{bm}x{bn}x{bk}" + (".bs" if block_scaled else "")


def _kernel(target, stage, dtype, block_scaled, tiles=None):
    fp8 = dtype not in ("bf16", "f16")
    if tiles is None:
        tiles = (NVIDIA_FP8_TILES if fp8 else NVIDIA_TILES) if is_nvidia(target) else AMD_TILES
    bm, bn, warps, stages = tiles[stage - 1]
    bk = 128 if fp8 else BK_16BIT.get(target, 64)
    name = variant(dtype, (bm, bn), bk, block_scaled)
    arguments = tuple((n, f"*{TRITON_DTYPE[dtype]}" if t == "*in" else t) for n, t in ARGUMENTS)
    constants = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 16, "GATED": stage == 1,
                 "SCALED": fp8 and not block_scaled, "BLOCK_SCALED": block_scaled,
                 # block-scaled sums restart every K step already (each step's own scales)
                 "PROMOTE": bk if fp8 and is_nvidia(target) and not block_scaled else 0}
    return AotKernel(op=f"moe_stage{stage}", variant=name, stem=f"triton_moe.stage{stage}.{name[len('triton_'):]}",
                     source="moe", fn="moe_stage_kernel", arguments=arguments, constants=constants, warps=warps,
                     stages=stages, aligned=ALIGNED)


def kernels(target):
    """Every MoE stage kernel built for `target`: 16-bit, and where the matrix
    cores have an fp8 format (sm_90a, gfx942, gfx950, gfx1201), fp8 per channel
    and block-scaled (on NVIDIA in the wide and the narrow tiles)."""
    out = []
    fp8_tiles = (None, NVIDIA_FP8_NARROW_TILES) if is_nvidia(target) else (None,)
    for stage in (1, 2):
        for dtype in ("bf16", "f16"):
            out.append(_kernel(target, stage, dtype, False))
        if target in FP8:
            for tiles in fp8_tiles:
                out.append(_kernel(target, stage, FP8[target], False, tiles))
                out.append(_kernel(target, stage, FP8[target], True, tiles))
    return out
