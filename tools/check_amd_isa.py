#!/usr/bin/env python3
"""Checks that the AMD code objects' matrix products use the matrix cores, and
shows every AMD kernel's resources.

usage: check_amd_isa.py MANIFEST [--table]

Each AMD code object of the manifest is disassembled (llvm-objdump-19) and its
kernels' metadata note read (python/aiter/cli/code_objects.py: VGPRs, AGPRs,
SGPRs, spills, LDS bytes, wavefront size).  A kernel of a GEMM, attention, MLA or MoE-GEMM op
must hold a v_mfma* (CDNA: gfx9*) or v_wmma* (RDNA 3/4: gfx11*, gfx12*)
instruction, except the known gaps below: families that have no matrix-core
AMD kernel yet, whose ops AMD runs through a portable kernel (or, for GEMM, a
Triton variant).  So the check fails on a regression (a kernel that had matrix
instructions lost them, a new matrix kernel without them) and when a gap closes
without leaving this list (a known gap that now has them), not on the gaps
themselves, which it reports.  Exit status 1 on a failure, 2 when llvm-objdump
is missing.
"""
import collections
import concurrent.futures
import importlib.util
import json
import os
import re
import sys

# Code-object family (file name before .<target>) -> why it has no matrix instruction.
KNOWN_GAPS = {
    "gemm_generic": "portable GEMM (clang-built, no MFMA/WMMA builtins yet); the Triton variants are AMD's matrix-core GEMMs",
    "attention_prefill": "portable prefill attention, for what the Triton kernels (triton_attention: MFMA / WMMA) do not take",
    "attention_decode": "portable paged decode attention, for what the Triton kernels (triton_decode: MFMA / WMMA) do not take",
    "attention_paged_prefill": "portable prefill over a paged cache, for what the Triton kernels (triton_paged_prefill: MFMA / WMMA) do not take",
    "mla": "portable MLA decode, for what the Triton kernels (triton_mla: MFMA, CDNA only, bf16) do not take",
    "moe_fused": "portable fused-MoE expert GEMMs (stages 1 and 2), for what the Triton stages (triton_moe: MFMA / WMMA) do not take",
}


def _code_objects():
    """python/aiter/cli/code_objects.py, loaded by path where the source tree is
    here (`import aiter` would load a library), else the installed package's."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "aiter", "cli", "code_objects.py")
    if not os.path.exists(path):
        from aiter.cli import code_objects as installed
        return installed
    spec = importlib.util.spec_from_file_location("aiter_code_objects", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


code_objects = _code_objects()
tool = code_objects.llvm_tool
MATRIX_OPS = code_objects.MATRIX_OPS


def triton_assembly_counts(folder, target, file):
    """{symbol: Counter} from build.py's record of Triton's own assembly, for a
    Triton code object this LLVM cannot disassemble; None where there is none."""
    path = os.path.join(folder, f"triton.{target}.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        kernels = [k for k in json.load(f)["kernels"] if k["file"] == file and "matrix_instructions" in k]
    if not kernels:
        return None
    return {k["symbol"]: collections.Counter({"v_mfma/v_wmma (Triton's assembly)": k["matrix_instructions"]})
            for k in kernels}


def family_of(file, target):
    return file[:-len(f".{target}.hsaco")] if file.endswith(f".{target}.hsaco") else file


def check(manifest, show_table=False, out=sys.stdout):
    """Returns (failures, known gaps, table rows)."""
    objdump = tool("llvm-objdump")
    if not objdump:
        raise FileNotFoundError("llvm-objdump-19 is needed (apt install llvm-19)")
    folder = os.path.dirname(manifest)
    rows = [line.rstrip("\n").split("\t") for line in open(manifest, encoding="utf-8") if not line.startswith("#")]
    rows = [r for r in rows if r[0].startswith("gfx")]
    failures, gaps, table = [], collections.defaultdict(list), []
    unreadable = set()  # targets this LLVM does not disassemble
    assembly_only = set()  # of those, the Triton kernels counted in Triton's own assembly
    # Only code objects with matrix-op kernels are disassembled (the slow part),
    # several at once.
    matrix_files = sorted({r[3] for r in rows if MATRIX_OPS.match(r[1])})
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        found = pool.map(lambda f: code_objects.matrix_instructions(os.path.join(folder, f), objdump), matrix_files)
        disassembled = dict(zip(matrix_files, found))
    cache = {}
    for target, op, variant, file, symbol, *_ in rows:
        if file not in cache:
            cache[file] = (disassembled.get(file, {}), code_objects.amd_kernel_resources(os.path.join(folder, file)))
        instructions, resources = cache[file]
        if instructions is None:
            instructions = triton_assembly_counts(folder, target, file)
            if instructions is not None:
                assembly_only.add(target)
        if instructions is None:
            unreadable.add(target)
            table.append((target, op, variant, None, resources.get(symbol, {})))
            continue
        counts = instructions.get(symbol, collections.Counter())
        family = family_of(file, target)
        table.append((target, op, variant, sum(counts.values()), resources.get(symbol, {})))
        if not MATRIX_OPS.match(op):
            continue
        has = sum(counts.values()) > 0
        if family in KNOWN_GAPS:
            if has:
                failures.append(f"{file} {symbol}: has matrix instructions now; take {family} off KNOWN_GAPS")
            else:
                gaps[family].append(target)
        elif not has:
            failures.append(f"{target} {op}/{variant} ({file}, {symbol}): no v_mfma/v_wmma instruction")
    if show_table:
        print_table(table, out)
    for target in sorted(unreadable):
        out.write(f"not checked: {target} ({objdump} cannot disassemble it; a newer LLVM can)\n")
    for target in sorted(assembly_only):
        out.write(f"{target}: Triton kernels checked in the assembly Triton wrote at build time "
                  f"(triton.{target}.json), not disassembled\n")
    return failures, gaps, table


def print_table(table, out):
    out.write("target\top\tvariant\tmatrix_insts\tvgpr\tagpr\tsgpr\tspills(v/s)\tlds\twave\n")
    for target, op, variant, matrix, r in table:
        spills = f"{r.get('vgpr_spill_count', '?')}/{r.get('sgpr_spill_count', '?')}"
        out.write(f"{target}\t{op}\t{variant}\t{'?' if matrix is None else matrix}\t{r.get('vgpr_count', '?')}\t{r.get('agpr_count', '-')}\t"
                  f"{r.get('sgpr_count', '?')}\t{spills}\t{r.get('group_segment_fixed_size', '?')}\t"
                  f"{r.get('wavefront_size', '?')}\n")


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        failures, gaps, table = check(argv[0], show_table="--table" in argv)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    matrix = sum(1 for row in table if row[3])
    print(f"{len(table)} AMD kernels, {matrix} with matrix instructions")
    for family, targets in sorted(gaps.items()):
        print(f"known gap: {family} ({', '.join(sorted(set(targets)))}): {KNOWN_GAPS[family]}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
