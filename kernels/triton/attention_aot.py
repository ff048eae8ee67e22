"""The prefill attention kernels built from attention.py for each target (see aot.py)."""
from aot import TRITON_DTYPE, AotKernel, is_nvidia

# Run-time arguments in order; "*in": a pointer to q's dtype (k, v and out share
# it).  The launcher (libaiter/gpu/attention_prefill.cpp) fills them by name.
ARGUMENTS = (
    ("q", "*in"), ("k", "*in"), ("v", "*in"), ("out", "*in"), ("lse", "*fp32"),
    ("cu_seqlens_q", "*i32"), ("cu_seqlens_k", "*i32"),
    ("q_token_stride", "i64"), ("q_head_stride", "i64"), ("k_token_stride", "i64"), ("k_head_stride", "i64"),
    ("v_token_stride", "i64"), ("v_head_stride", "i64"), ("out_token_stride", "i64"), ("out_head_stride", "i64"),
    ("total_q", "i32"), ("total_k", "i32"), ("batch", "i32"), ("search_steps", "i32"), ("q_heads", "i32"),
    ("group", "i32"), ("causal", "i32"), ("window_left", "i32"),
    ("scale", "fp32"), ("softcap", "fp32"), ("has_lse", "i32"),
)
# Promised 16-divisible (pointers: 16-byte aligned), so Triton loads 16-byte
# vectors: attention_prefill_triton.cpp offers the kernel only to calls that have them.
ALIGNED = ("q", "k", "v", "out", "q_token_stride", "q_head_stride", "k_token_stride", "k_head_stride",
           "v_token_stride", "v_head_stride", "out_token_stride", "out_head_stride")
# q/k head dim split into powers of two (D1 + D2) and v's: the head dims of
# attention_prefill.cpp's tensor-core list (192 = 128 + 64: DeepSeek-V3's MLA prefill).
HEAD_DIMS = ((64, 0, 64), (128, 0, 128), (256, 0, 256), (128, 64, 128))
# The launcher takes the row tile from the variant's name (".m128").
# (BM, BN, warps, stages) per q/k head dim.
# Chosen on an H100 (Triton 3.6, 2026-11-27): the fastest of a sweep that fits
# the 227 KiB of shared memory (D256 with 2 stages needs 320 KiB).
NVIDIA_TILES = {64: (128, 64, 4, 3), 128: (128, 64, 8, 3), 256: (128, 64, 8, 1), 192: (128, 64, 8, 2)}
# AMD: compiled, never run; chosen by the compiled resources (python -m aiter
# info --kernels): no VGPR spills on CDNA and RDNA 4.  RDNA's (wave32) 128-row
# tiles spilled thousands of VGPRs; on RDNA 3 (gfx1100) even 32-row tiles spill
# (D128: about 200), and D256 / D192 spilled over 400, so gfx1100 builds none of
# those two: its portable kernel runs them.
CDNA_TILES = {64: (128, 32, 4, 1), 128: (128, 32, 4, 1), 256: (64, 32, 4, 1), 192: (64, 32, 4, 1)}
RDNA_TILES = {64: (64, 32, 4, 1), 128: (32, 32, 4, 1), 256: (32, 16, 4, 1), 192: (32, 16, 4, 1)}
RDNA3_TILES = {64: (64, 32, 4, 1), 128: (32, 32, 4, 1)}


def _tiles(target):
    if is_nvidia(target):
        return NVIDIA_TILES
    return RDNA3_TILES if target == "gfx1100" else RDNA_TILES if target.startswith("gfx1") else CDNA_TILES


def _name(dtype, d1, d2, dv, bm):
    dims = f"d{d1 + d2}" + (f"v{dv}" if dv != d1 + d2 else "")
    return f"triton.{dtype}.{dims}.m{bm}"


def kernels(target):
    out = []
    for dtype in ("bf16", "f16"):
        for d1, d2, dv in HEAD_DIMS:
            if d1 + d2 not in _tiles(target):
                continue
            bm, bn, warps, stages = _tiles(target)[d1 + d2]
            variant = _name(dtype, d1, d2, dv, bm)
            arguments = tuple((n, f"*{TRITON_DTYPE[dtype]}" if t == "*in" else t) for n, t in ARGUMENTS)
            out.append(AotKernel(op="prefill_attention", variant=variant, stem="triton_attention." + variant[7:],
                                 source="attention", fn="prefill_kernel", arguments=arguments,
                                 constants={"BM": bm, "BN": bn, "D1": d1, "D2": d2, "DV": dv},
                                 warps=warps, stages=stages, aligned=ALIGNED))
    return out
