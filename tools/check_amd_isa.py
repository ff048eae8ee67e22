#!/usr/bin/env python3
"""Checks that the AMD code objects' matrix products use the matrix cores, and
shows every AMD kernel's resources.

usage: check_amd_isa.py MANIFEST [--table]

Each AMD code object of the manifest is disassembled (llvm-objdump-19) and its
kernels' metadata read (llvm-readelf-19 --notes: VGPRs, AGPRs, SGPRs, spills,
LDS bytes, wavefront size).  A kernel of a GEMM, attention, MLA or MoE-GEMM op
must hold a v_mfma* (CDNA: gfx9*) or v_wmma* (RDNA 3/4: gfx11*, gfx12*)
instruction, except the known gaps below: families that have no matrix-core
AMD kernel yet, whose ops AMD runs through a portable kernel (or, for GEMM, a
Triton variant).  So the check fails on a regression (a kernel that had matrix
instructions lost them, a new matrix kernel without them) and when a gap closes
without leaving this list (a known gap that now has them), not on the gaps
themselves, which it reports.  Exit status 1 on a failure, 2 when the LLVM
tools are missing.
"""
import collections
import os
import re
import shutil
import subprocess
import sys

# Ops whose kernels multiply matrices (manifest op column).  Routing, sorting,
# caches and norms are not here.
MATRIX_OPS = re.compile(r"^(gemm.*|.*attention.*|mla.*|fused_moe.*|moe_gemm.*|moe_mlp.*)$")
# Code-object family (file name before .<target>) -> why it has no matrix instruction.
KNOWN_GAPS = {
    "gemm_generic": "portable GEMM (clang-built, no MFMA/WMMA builtins yet); the Triton variants are AMD's matrix-core GEMMs",
    "attention_prefill": "portable prefill attention: no matrix-core AMD kernel yet (NVIDIA: attention_prefill_mma)",
    "attention_decode": "portable paged decode attention: no matrix-core AMD kernel yet",
}
RESOURCES = ("vgpr_count", "agpr_count", "sgpr_count", "vgpr_spill_count", "sgpr_spill_count",
             "group_segment_fixed_size", "private_segment_fixed_size", "wavefront_size")


def tool(name):
    for candidate in (f"{name}-19", name, f"/usr/lib/llvm-19/bin/{name}"):
        path = shutil.which(candidate)
        if path:
            return path
    return None


def matrix_instructions(objdump, path):
    """{kernel symbol: Counter of its v_mfma* / v_wmma* / v_smfmac* mnemonics},
    or None when this LLVM cannot disassemble the target (LLVM 19: gfx950)."""
    run = subprocess.run([objdump, "--disassemble", "--no-show-raw-insn", path], capture_output=True, text=True)
    if run.returncode != 0:
        return None
    text = run.stdout
    found, current = {}, None
    for line in text.splitlines():
        label = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if label:
            current = found.setdefault(label.group(1), collections.Counter())
            continue
        op = re.match(r"^\s+(v_(?:mfma|wmma|smfmac|swmmac)\w*)", line)
        if op and current is not None:
            current[op.group(1)] += 1
    return found


def kernel_resources(readelf, path):
    """{kernel name: {resource: value}} from the code object's AMDGPU metadata note."""
    text = subprocess.run([readelf, "--notes", path], check=True, capture_output=True, text=True).stdout
    lines = text.splitlines()
    # A kernel's map starts with "- ." at the least indentation (its .args list
    # items start the same way, deeper).
    starts = [len(line) - len(line.lstrip()) for line in lines if line.lstrip().startswith("- .")]
    kernel_indent = min(starts, default=0)
    kernels, current = {}, None
    for line in lines:
        if line.lstrip().startswith("- .") and len(line) - len(line.lstrip()) == kernel_indent:
            current = {}
        entry = re.match(r"^\s+(?:- )?\.(\w+):\s+(\S+)$", line)
        if not entry:
            continue
        key, value = entry.groups()
        if current is None:
            continue
        if key == "name":
            kernels[value] = current
        elif key in RESOURCES:
            current[key] = int(value)
    return kernels


def family_of(file, target):
    return file[:-len(f".{target}.hsaco")] if file.endswith(f".{target}.hsaco") else file


def check(manifest, show_table=False, out=sys.stdout):
    """Returns (failures, known gaps, table rows)."""
    objdump, readelf = tool("llvm-objdump"), tool("llvm-readelf")
    if not objdump or not readelf:
        raise FileNotFoundError("llvm-objdump-19 and llvm-readelf-19 are needed (apt install llvm-19)")
    folder = os.path.dirname(manifest)
    rows = [line.rstrip("\n").split("\t") for line in open(manifest, encoding="utf-8") if not line.startswith("#")]
    rows = [r for r in rows if r[0].startswith("gfx")]
    failures, gaps, table = [], collections.defaultdict(list), []
    unreadable = set()  # targets this LLVM does not disassemble
    cache = {}
    for target, op, variant, file, symbol, *_ in rows:
        if file not in cache:
            path = os.path.join(folder, file)
            cache[file] = (matrix_instructions(objdump, path), kernel_resources(readelf, path))
        instructions, resources = cache[file]
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
