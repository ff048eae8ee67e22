"""The paged-prefill kernels built from paged_prefill.py for each target (see aot.py)."""
from aot import TRITON_DTYPE, AotKernel, is_nvidia

# Run-time arguments in order; "*in": a pointer to q's dtype (out and the
# caches share it).  The launcher (libaiter/gpu/attention_paged_prefill_triton.cpp)
# fills them by name.
ARGUMENTS = (
    ("q", "*in"), ("k_cache", "*in"), ("v_cache", "*in"), ("out", "*in"), ("lse", "*fp32"),
    ("block_table", "*i32"), ("context_lens", "*i32"), ("cu_seqlens_q", "*i32"),
    ("q_token_stride", "i64"), ("q_head_stride", "i64"), ("out_token_stride", "i64"), ("out_head_stride", "i64"),
    ("table_stride", "i64"), ("num_blocks", "i64"), ("capacity", "i32"), ("page_size", "i32"), ("batch", "i32"),
    ("search_steps", "i32"), ("total_q", "i32"), ("q_heads", "i32"), ("kv_heads", "i32"), ("causal", "i32"),
    ("window_left", "i32"), ("scale", "fp32"), ("softcap", "fp32"), ("k_scale", "fp32"), ("v_scale", "fp32"),
    ("has_lse", "i32"),
)
# Promised 16-byte aligned, so cache rows load in 16-byte vectors: the launcher
# offers the kernel only calls whose caches are.
ALIGNED = ("k_cache", "v_cache")
HEAD_DIMS = (64, 128)  # paged_prefill.cu's
# (BM, BN, warps, stages): BM rows (new token, query head of one kv head) a
# program, BN keys a tile.  AMD: compiled, never run; chosen by the compiled
# resources (no VGPR spills).  Caches of q's dtype only (fp8 caches take the
# portable kernel); one configuration a target: each is a compile per target in
# every build.
NVIDIA_TILE = (64, 64, 4, 1)  # 2 stages: the H100 image's Triton failed in its pipeliner (TritonGPUPipeline)
AMD_TILE = (64, 32, 4, 1)
RDNA_TILE = (32, 32, 4, 1)


def variant(dtype, d, bm):
    """The manifest's variant: triton.<dtype>.d<D>.m<BM> (q's dtype, the caches'
    too; the launcher reads the row tile from it)."""
    return f"triton.{dtype}.d{d}.m{bm}"


def kernels(target):
    bm, bn, warps, stages = NVIDIA_TILE if is_nvidia(target) else RDNA_TILE if target.startswith("gfx1") else AMD_TILE
    out = []
    for dtype in ("bf16", "f16"):
        for d in HEAD_DIMS:
            name = variant(dtype, d, bm)
            arguments = tuple((n, f"*{TRITON_DTYPE[dtype]}" if t == "*in" else t) for n, t in ARGUMENTS)
            out.append(AotKernel(op="paged_prefill_attention", variant=name, stem="triton_paged_prefill." + name[7:],
                                 source="paged_prefill", fn="paged_prefill_kernel", arguments=arguments,
                                 constants={"BM": bm, "BN": bn, "D": d}, warps=warps, stages=stages,
                                 aligned=ALIGNED))
    return out
