"""The paged decode attention kernels built from decode.py for each target (see aot.py)."""
from aot import FP8, TRITON_DTYPE, AotKernel, is_nvidia

# Run-time arguments in order; "*in": a pointer to q's dtype (out shares it),
# "*cache": to the cache's (q's, or the target's fp8 format).  The launcher
# (libaiter/gpu/attention_decode_triton.cpp) fills them by name.
ARGUMENTS = (
    ("q", "*in"), ("k_cache", "*cache"), ("v_cache", "*cache"), ("out", "*in"),
    ("partial_out", "*fp32"), ("partial_lse", "*fp32"), ("block_table", "*i32"), ("context_lens", "*i32"),
    ("q_seq_stride", "i64"), ("q_token_stride", "i64"), ("q_head_stride", "i64"),
    ("out_seq_stride", "i64"), ("out_token_stride", "i64"), ("out_head_stride", "i64"),
    ("table_stride", "i64"), ("num_blocks", "i64"), ("capacity", "i32"), ("page_size", "i32"),
    ("q_tokens", "i32"), ("q_heads", "i32"), ("kv_heads", "i32"), ("row_blocks", "i32"),
    ("splits", "i32"), ("split_keys", "i32"), ("window_left", "i32"),
    ("scale", "fp32"), ("softcap", "fp32"), ("k_scale", "fp32"), ("v_scale", "fp32"),
)
# Promised 16-byte aligned, so a cache row (D elements) loads in 16-byte
# vectors: the launcher offers the kernel only calls whose caches are.
ALIGNED = ("k_cache", "v_cache")
HEAD_DIMS = (64, 128)  # decode.cu's
# BM: rows (new token, query head) a program, the smallest matrix-core tile
# (groups of up to 16 query heads a kv head in one program).  BN keys a tile.
# (BM, BN, warps, stages).  AMD: compiled, never run; chosen by the compiled
# resources (no VGPR spills).  One configuration a target: each is a compile
# per target in every build.
NVIDIA_TILE = (16, 64, 4, 3)
AMD_TILE = (16, 64, 4, 1)
RDNA3_TILE = (16, 32, 8, 1)  # gfx1100: no VGPR spills (16 x 64 with 4 warps spilled 3, with 2 warps 42)


def variant(dtype, cache, d):
    """The manifest's variant: triton.<q dtype>.<same | fp8 format>.d<D>."""
    return f"triton.{dtype}.{cache}.d{d}"


def kernels(target):
    """bf16 / f16 queries over caches of their own dtype, and over the fp8
    format of the target's matrix cores (aot.FP8) where it has one."""
    bm, bn, warps, stages = NVIDIA_TILE if is_nvidia(target) else RDNA3_TILE if target == "gfx1100" else AMD_TILE
    caches = ["same"] + ([FP8[target]] if target in FP8 else [])
    out = []
    for dtype in ("bf16", "f16"):
        for cache in caches:
            for d in HEAD_DIMS:
                name = variant(dtype, cache, d)
                cache_type = TRITON_DTYPE[dtype if cache == "same" else cache]
                arguments = tuple((n, f"*{TRITON_DTYPE[dtype]}" if t == "*in" else f"*{cache_type}" if t == "*cache"
                                   else t) for n, t in ARGUMENTS)
                out.append(AotKernel(op="paged_decode_attention", variant=name, stem="triton_decode." + name[7:],
                                     source="decode", fn="decode_kernel", arguments=arguments,
                                     constants={"BM": bm, "BN": bn, "D": d}, warps=warps, stages=stages,
                                     aligned=ALIGNED))
    return out
