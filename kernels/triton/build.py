#!/usr/bin/env python3
"""Compiles the Triton kernels ahead of time into code objects for one target.

usage: build.py --outputs TARGET          the files build.py TARGET DIR writes (for meson)
       build.py TARGET DIR                compile them into DIR

Writes triton_gemm.<variant tag>.<target>.{hsaco,cubin} and triton.<target>.json
(installed beside them), the kernels' manifest rows: op, variant, file, symbol, block (threads), smem
(dynamic shared memory, bytes) and args, the kernel's parameters in order as
name:type (ptr, i32, i64); Triton's trailing scratch pointers, which these
kernels do not use, are named "scratch" and passed as null.  The parameter list
is read from the compiled LLVM IR, so a Triton that adds parameters is noticed.
AMD rows also count the matrix instructions of Triton's own assembly, which
tools/check_amd_isa.py reads for targets the system's llvm-objdump cannot
disassemble (LLVM 19: gfx950).
Only for build time: nothing here runs when libaiter does.
"""
import json
import os
import re
import sys

TARGETS = {  # target: (backend, arch, warp size)
    "gfx90a": ("hip", "gfx90a", 64), "gfx942": ("hip", "gfx942", 64), "gfx950": ("hip", "gfx950", 64),
    "gfx1100": ("hip", "gfx1100", 32), "gfx1201": ("hip", "gfx1201", 32), "sm_90a": ("cuda", 90, 32),
}
# The fp8 format of each target's matrix cores: MI300's FNUZ encoding on gfx942,
# OCP e4m3fn on gfx950, RDNA 4 and Hopper; none on gfx90a and RDNA 3.
FP8 = {"gfx942": "e4m3fnuz", "gfx950": "e4m3fn", "gfx1201": "e4m3fn", "sm_90a": "e4m3fn"}
TRITON_DTYPE = {"bf16": "bf16", "f16": "fp16", "i8": "i8", "e4m3fn": "fp8e4nv", "e4m3fnuz": "fp8e4b8"}
# (BM, BN, BK, warps): a large tile for many rows, a small one for few.  Few
# configurations on purpose: each is a compile per target in every build.
# Chosen by the compiled resources (python -m aiter info --kernels): 8-bit
# 128 x 128 tiles with BK 128 spilled VGPRs on gfx1100 and gfx950, with BK 64 on
# none; block-scaled 128 x 128 tiles spilled on RDNA 4 (85 VGPRs), 64 x 128
# with 8 warps nowhere.
SIXTEEN_BIT = ((128, 128, 64, 8), (64, 64, 64, 4))
SIXTEEN_BIT_RDNA3 = ((128, 128, 32, 8), (64, 64, 64, 4))  # BK 64 spilled 19 VGPRs on gfx1100
EIGHT_BIT = ((128, 128, 64, 8), (64, 64, 128, 4))
ALIGNED = ("a", "w", "k", "lda", "ldw", "a_batch", "w_batch")
BLOCK_SCALED = ((128, 128, 128, 8), (64, 128, 128, 8))  # BK = the 128-wide scale group
BLOCK_SCALED_RDNA = ((64, 128, 128, 8), (64, 64, 128, 4))


def kernels_for(target):
    """(variant, dtype, (BM, BN, BK, warps), block_scaled) of every kernel built for `target`."""
    dtypes = ["bf16", "f16", "i8"] + ([FP8[target]] if target in FP8 else [])
    out = []
    for dt in dtypes:
        sixteen = SIXTEEN_BIT_RDNA3 if target == "gfx1100" else SIXTEEN_BIT
        for tile in (sixteen if dt in ("bf16", "f16") else EIGHT_BIT):
            out.append((f"triton_{dt}.{tile[0]}x{tile[1]}x{tile[2]}", dt, tile, False))
    if target in FP8:
        for tile in (BLOCK_SCALED_RDNA if target.startswith("gfx1") else BLOCK_SCALED):
            out.append((f"triton_{FP8[target]}.{tile[0]}x{tile[1]}x{tile[2]}.bs", FP8[target], tile, True))
    return out


def file_name(variant, target):
    suffix = "cubin" if target.startswith("sm_") else "hsaco"
    return f"triton_gemm.{variant[len('triton_'):]}.{target}.{suffix}"


def outputs(target):
    return [file_name(v[0], target) for v in kernels_for(target)] + [f"triton.{target}.json"]


def parameter_types(llir, symbol):
    """The LLVM parameter list of `symbol` as ptr / i32 / i64."""
    define = re.search(r"^define [^@\n]*@" + re.escape(symbol) + r"\(", llir, re.M)
    if define is None:
        raise RuntimeError(f"{symbol}: no definition in the LLVM IR")
    depth, at = 1, define.end()
    while depth:  # to the parenthesis that closes the list ("ptr addrspace(1)" holds some)
        depth += {"(": 1, ")": -1}.get(llir[at], 0)
        at += 1
    params = llir[define.end():at - 1].split(",")
    return ["ptr" if p.split()[0].startswith("ptr") else p.split()[0] for p in params if p.strip()]


def argument_layout(kernel, arguments):
    """name:type of every kernel parameter, checked against what we passed."""
    kinds = parameter_types(kernel.asm["llir"], kernel.name)
    ours = [("ptr" if t.startswith("*") else t) for _, t in arguments]
    if kinds[:len(ours)] != ours or any(k != "ptr" for k in kinds[len(ours):]):
        raise RuntimeError(f"{kernel.name}: parameters {kinds} do not start with ours {ours} then pointers")
    names = [name for name, _ in arguments] + ["scratch"] * (len(kinds) - len(ours))
    return ",".join(f"{name}:{kind}" for name, kind in zip(names, kinds))


def compile_one(target, dtype, tile, block_scaled):
    import triton
    from triton.backends.compiler import GPUTarget
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gemm

    bm, bn, bk, warps = tile
    signature = {name: (f"*{TRITON_DTYPE[dtype]}" if t == "*in" else t) for name, t in gemm.ARGUMENTS}
    constants = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "SCALED": dtype in ("i8", "e4m3fn", "e4m3fnuz")
                 and not block_scaled, "BLOCK_SCALED": block_scaled, "INT8": dtype == "i8"}
    # 16-byte aligned A and W, K and their row and batch strides multiples of 16
    # elements: the launcher (libaiter/gpu/triton_gemm.cpp) offers a kernel
    # only to calls that have them, and Triton then loads 16-byte vectors.
    aligned = [i for i, (name, _) in enumerate(gemm.ARGUMENTS) if name in ALIGNED]
    attrs = {(i,): [["tt.divisibility", 16]] for i in aligned}
    source = triton.compiler.ASTSource(fn=gemm.gemm_kernel, signature={**signature, **{c: "constexpr" for c in constants}},
                                       constexprs=constants, attrs=attrs)
    backend, arch, warp = TARGETS[target]
    stages = 3 if backend == "cuda" else 2
    kernel = triton.compiler.compile(source, target=GPUTarget(backend, arch, warp),
                                     options={"num_warps": warps, "num_stages": stages})
    if getattr(kernel.metadata, "global_scratch_size", 0):
        raise RuntimeError(f"{kernel.name} for {target} needs global scratch, which the launcher does not give")
    image = kernel.asm["hsaco" if backend == "hip" else "cubin"]
    return kernel, image, warps * warp, argument_layout(kernel, gemm.ARGUMENTS)


def build(target, folder):
    rows = []
    for variant, dtype, tile, block_scaled in kernels_for(target):
        kernel, image, block, args = compile_one(target, dtype, tile, block_scaled)
        name = file_name(variant, target)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(image)
        row = {"op": "gemm", "variant": variant, "file": name, "symbol": kernel.name, "block": block,
               "smem": kernel.metadata.shared, "args": args}
        if "amdgcn" in kernel.asm:  # for tools/check_amd_isa.py where the system's LLVM cannot disassemble
            row["matrix_instructions"] = len(re.findall(r"^\s*v_(?:mfma|wmma|smfmac|swmmac)", kernel.asm["amdgcn"],
                                                        re.M))
        rows.append(row)
    with open(os.path.join(folder, f"triton.{target}.json"), "w", encoding="utf-8") as f:
        json.dump({"target": target, "kernels": rows}, f, indent=1)


if __name__ == "__main__":
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns when it is unset
    if sys.argv[1] == "--outputs":
        print("\n".join(outputs(sys.argv[2])))
    else:
        build(sys.argv[1], sys.argv[2])
