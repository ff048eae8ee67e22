"""The GEMM kernels built from gemm.py for each target (see aot.py)."""
from aot import FP8, TRITON_DTYPE, AotKernel, is_nvidia

# The kernel's run-time arguments in order, with their Triton types ("*in": a
# pointer to the input dtype).  The launcher (libaiter/gpu/triton_gemm.cpp)
# fills them by name from the manifest's argument column.
ARGUMENTS = (
    ("a", "*in"), ("w", "*in"), ("out", "*fp32"), ("bias", "*fp32"), ("a_scale", "*fp32"), ("w_scale", "*fp32"),
    ("m", "i32"), ("n", "i32"), ("k", "i32"),
    ("lda", "i64"), ("ldw", "i64"), ("ldo", "i64"),
    ("a_batch", "i64"), ("w_batch", "i64"), ("out_batch", "i64"), ("a_scale_batch", "i64"), ("w_scale_batch", "i64"),
    ("out_kind", "i32"), ("has_bias", "i32"), ("bias_f32", "i32"),
    ("a_scale_step", "i32"), ("w_scale_step", "i32"), ("kgroups", "i32"),
)
# (BM, BN, BK, warps): a large tile for many rows, a small one for few.  Few
# configurations on purpose: each is a compile per target in every build.
# Chosen by the compiled resources (python -m aiter info --kernels): 8-bit
# 128 x 128 tiles with BK 128 spilled VGPRs on gfx1100 and gfx950, with BK 64 on
# none; block-scaled 128 x 128 tiles spilled on RDNA 4 (85 VGPRs), 64 x 128
# with 8 warps nowhere.
SIXTEEN_BIT = ((128, 128, 64, 8), (64, 64, 64, 4))
SIXTEEN_BIT_RDNA3 = ((128, 128, 32, 8), (64, 64, 64, 4))  # BK 64 spilled 19 VGPRs on gfx1100
EIGHT_BIT = ((128, 128, 64, 8), (64, 64, 128, 4))
BLOCK_SCALED = ((128, 128, 128, 8), (64, 128, 128, 8))  # BK = the 128-wide scale group
BLOCK_SCALED_RDNA = ((64, 128, 128, 8), (64, 64, 128, 4))
# 16-byte aligned A and W, K and their row and batch strides multiples of 16
# elements: the launcher offers a kernel only to calls that have them, and
# Triton then loads 16-byte vectors.
ALIGNED = ("a", "w", "k", "lda", "ldw", "a_batch", "w_batch")


def _kernel(target, dtype, tile, block_scaled):
    bm, bn, bk, warps = tile
    variant = f"triton_{dtype}.{bm}x{bn}x{bk}" + (".bs" if block_scaled else "")
    arguments = tuple((name, f"*{TRITON_DTYPE[dtype]}" if t == "*in" else t) for name, t in ARGUMENTS)
    constants = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "SCALED": dtype in ("i8", "e4m3fn", "e4m3fnuz")
                 and not block_scaled, "BLOCK_SCALED": block_scaled, "INT8": dtype == "i8"}
    return AotKernel(op="gemm", variant=variant, stem="triton_gemm." + variant[len("triton_"):], source="gemm",
                     fn="gemm_kernel", arguments=arguments, constants=constants, warps=warps,
                     stages=3 if is_nvidia(target) else 2, aligned=ALIGNED)


def kernels(target):
    """Every GEMM kernel built for `target`."""
    out = []
    for dt in ["bf16", "f16", "i8"] + ([FP8[target]] if target in FP8 else []):
        sixteen = SIXTEEN_BIT_RDNA3 if target == "gfx1100" else SIXTEEN_BIT
        for tile in (sixteen if dt in ("bf16", "f16") else EIGHT_BIT):
            out.append(_kernel(target, dt, tile, False))
    if target in FP8:
        for tile in (BLOCK_SCALED_RDNA if target.startswith("gfx1") else BLOCK_SCALED):
            out.append(_kernel(target, FP8[target], tile, True))
    return out
