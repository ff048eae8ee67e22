#!/usr/bin/env python3
"""Compiles the Triton kernels ahead of time into code objects for one target.

usage: build.py --outputs TARGET FAMILY...     the files build.py TARGET DIR FAMILY... writes (for meson)
       build.py TARGET DIR FAMILY...           compile them into DIR

A FAMILY is a Triton source of this folder (gemm: gemm.py) with its list of
kernels (gemm_aot.py, see aot.py).  Writes <stem>.<target>.{hsaco,cubin} per
kernel and triton.<target>.json (installed beside them), the kernels' manifest
rows: op, variant, file, symbol, block (threads), smem (dynamic shared memory,
bytes) and args, the kernel's parameters in order as name:type (ptr, i32, i64,
fp32); Triton's trailing scratch pointers, which these kernels do not use, are
named "scratch" and passed as null.  The parameter list is read from the
compiled LLVM IR, so a Triton that adds parameters is noticed.  AMD rows also
count the matrix instructions of Triton's own assembly, which
tools/check_amd_isa.py reads for targets the system's llvm-objdump cannot
disassemble (LLVM 19: gfx950).
Only for build time: nothing here runs when libaiter does.
"""
import importlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot import MAX_SHARED, TARGETS  # noqa: E402

FAMILIES = ("gemm", "attention", "moe", "decode", "mla", "paged_prefill")


def kernels_for(target, families=FAMILIES):
    """The AotKernels of `families` built for `target` (needs no triton)."""
    return [k for family in families for k in importlib.import_module(f"{family}_aot").kernels(target)]


def file_name(kernel, target):
    return f"{kernel.stem}.{target}.{'cubin' if target.startswith('sm_') else 'hsaco'}"


def outputs(target, families):
    return [file_name(k, target) for k in kernels_for(target, families)] + [f"triton.{target}.json"]


def parameter_types(llir, symbol):
    """The LLVM parameter list of `symbol` as ptr / i32 / i64 / f32."""
    define = re.search(r"^define [^@\n]*@" + re.escape(symbol) + r"\(", llir, re.M)
    if define is None:
        raise RuntimeError(f"{symbol}: no definition in the LLVM IR")
    depth, at = 1, define.end()
    while depth:  # to the parenthesis that closes the list ("ptr addrspace(1)" holds some)
        depth += {"(": 1, ")": -1}.get(llir[at], 0)
        at += 1
    params = llir[define.end():at - 1].split(",")
    kinds = ["ptr" if p.split()[0].startswith("ptr") else p.split()[0] for p in params if p.strip()]
    return ["f32" if k == "float" else k for k in kinds]


def argument_layout(kernel, arguments):
    """name:type of every kernel parameter, checked against what we passed."""
    kinds = parameter_types(kernel.asm["llir"], kernel.name)
    ours = [("ptr" if t.startswith("*") else "f32" if t == "fp32" else t) for _, t in arguments]
    if kinds[:len(ours)] != ours or any(k != "ptr" for k in kinds[len(ours):]):
        raise RuntimeError(f"{kernel.name}: parameters {kinds} do not start with ours {ours} then pointers")
    names = [name for name, _ in arguments] + ["scratch"] * (len(kinds) - len(ours))
    return ",".join(f"{name}:{kind}" for name, kind in zip(names, kinds))


def compile_one(target, kernel):
    import triton
    from triton.backends.compiler import GPUTarget

    fn = getattr(importlib.import_module(kernel.source), kernel.fn)
    signature = dict(kernel.arguments)
    aligned = [i for i, (name, _) in enumerate(kernel.arguments) if name in kernel.aligned]
    attrs = {(i,): [["tt.divisibility", 16]] for i in aligned}
    source = triton.compiler.ASTSource(fn=fn, signature={**signature, **{c: "constexpr" for c in kernel.constants}},
                                       constexprs=kernel.constants, attrs=attrs)
    backend, arch, warp = TARGETS[target]
    compiled = triton.compiler.compile(source, target=GPUTarget(backend, arch, warp),
                                       options={"num_warps": kernel.warps, "num_stages": kernel.stages})
    if compiled.metadata.shared > MAX_SHARED[target]:
        raise RuntimeError(f"{kernel.stem} for {target} needs {compiled.metadata.shared} bytes of shared memory, "
                           f"more than the {MAX_SHARED[target]} a block may have")
    if getattr(compiled.metadata, "global_scratch_size", 0):
        raise RuntimeError(f"{compiled.name} for {target} needs global scratch, which the launcher does not give")
    image = compiled.asm["hsaco" if backend == "hip" else "cubin"]
    return compiled, image, kernel.warps * warp, argument_layout(compiled, kernel.arguments)


def build(target, folder, families):
    rows = []
    for kernel in kernels_for(target, families):
        compiled, image, block, args = compile_one(target, kernel)
        name = file_name(kernel, target)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(image)
        row = {"op": kernel.op, "variant": kernel.variant, "file": name, "symbol": compiled.name, "block": block,
               "smem": compiled.metadata.shared, "args": args}
        if "amdgcn" in compiled.asm:  # for tools/check_amd_isa.py where the system's LLVM cannot disassemble
            row["matrix_instructions"] = len(re.findall(r"^\s*v_(?:mfma|wmma|smfmac|swmmac)",
                                                        compiled.asm["amdgcn"], re.M))
        rows.append(row)
    with open(os.path.join(folder, f"triton.{target}.json"), "w", encoding="utf-8") as f:
        json.dump({"target": target, "kernels": rows}, f, indent=1)


if __name__ == "__main__":
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns when it is unset
    if sys.argv[1] == "--outputs":
        print("\n".join(outputs(sys.argv[2], sys.argv[3:])))
    else:
        build(sys.argv[1], sys.argv[2], sys.argv[3:])
