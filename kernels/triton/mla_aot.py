"""The MLA decode kernels built from mla.py for each target (see aot.py)."""
from aot import FP8, TRITON_DTYPE, AotKernel, is_nvidia

# Run-time arguments in order; "*in": a pointer to q's dtype (out and the
# partial outputs share it), "*cache": to the cache's (q's, or the target's fp8
# format).  The launcher (libaiter/gpu/mla_triton.cpp) fills them by name.
ARGUMENTS = (
    ("q", "*in"), ("kv_cache", "*cache"), ("out", "*in"), ("lse", "*fp32"), ("partial_out", "*in"),
    ("partial_lse", "*fp32"), ("block_table", "*i32"), ("context_lens", "*i32"),
    ("table_stride", "i64"), ("num_blocks", "i64"), ("capacity", "i32"), ("page_size", "i32"),
    ("q_tokens", "i32"), ("q_heads", "i32"), ("rows", "i32"), ("splits", "i32"), ("split_keys", "i32"),
    ("logit_scale", "fp32"), ("value_scale", "fp32"), ("has_lse", "i32"),
)
# Promised 16-byte aligned (rows of 576 elements then load in 16-byte vectors):
# the launcher offers the kernel only calls that have them.
ALIGNED = ("q", "kv_cache", "out", "partial_out")
# (BM, BN, warps, stages): BM rows (new token, query head) a program, the
# smallest matrix-core tile; BN positions a tile.  AMD: compiled, never run;
# chosen by the compiled resources (no VGPR spills).  One configuration a
# target: each is a compile per target in every build.
NVIDIA_TILE = (16, 64, 4, 2)
AMD_TILE = (16, 32, 4, 1)
# RDNA (wave32): none.  Every tile tried spilled hundreds of VGPRs (16 x 32 with
# 4 warps: 815 on gfx1100, 399 on gfx1201; 16 x 16 with 8 warps: 430 and 130):
# the 16 x 576 query rows stay in registers beside the 16 x 512 accumulator.
# RDNA runs mla.cu's portable kernel.
NO_TRITON_MLA = ("gfx1100", "gfx1201")
# bf16 only: DeepSeek's MLA runs in bf16; f16 calls take the other kernels
# (each variant is a compile per target in every build).
DTYPES = ("bf16",)


def variant(dtype, cache):
    """The manifest's variant: triton.<q dtype>.<same | fp8 format>."""
    return f"triton.{dtype}.{cache}"


def kernels(target):
    """bf16 queries over caches of their own dtype, and over the fp8 format
    of the target's matrix cores (aot.FP8) where it has one."""
    if target in NO_TRITON_MLA:
        return []
    bm, bn, warps, stages = NVIDIA_TILE if is_nvidia(target) else AMD_TILE
    out = []
    for dtype in DTYPES:
        for cache in ["same"] + ([FP8[target]] if target in FP8 else []):
            name = variant(dtype, cache)
            cache_type = TRITON_DTYPE[dtype if cache == "same" else cache]
            arguments = tuple((n, f"*{TRITON_DTYPE[dtype]}" if t == "*in" else f"*{cache_type}" if t == "*cache"
                               else t) for n, t in ARGUMENTS)
            out.append(AotKernel(op="mla_decode", variant=name, stem="triton_mla." + name[7:], source="mla",
                                 fn="mla_decode_kernel", arguments=arguments, constants={"BM": bm, "BN": bn},
                                 warps=warps, stages=stages, aligned=ALIGNED))
    return out
