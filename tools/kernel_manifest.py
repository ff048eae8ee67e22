#!/usr/bin/env python3
"""Write the code-object manifest, checking every code object on the way.

usage: kernel_manifest.py OUTPUT TARGET:SOURCE:OBJECT...
       (SOURCE: a kernel source, or the .json that kernels/triton/build.py writes)
       kernel_manifest.py --check MANIFEST      (re-check an installed manifest)

Each kernel source declares its kernels in comments:
    // aiter-kernel: op=norm variant=bf16.vec symbol=aiter_norm_bf16_vec8 block=512 smem=0
or, for families of instantiations, a template expanded over lists of values:
    // aiter-kernel-family: op=gemm variant=x.{dt}.{shape} symbol=k_{dt}_{sym} block={block} smem={smem} \
    //     dt=bf16,e4m3fn@89 shape=128x128:128x128_s4:256:131072
A list value "v@89" exists only for targets sm_89 and up; a value with ':' parts
also binds the names after the first ("shape" binds sym, block, smem here, in the
order the template's other fields first use them).
A Triton code object's kernels come from build.py's .json instead, with one
more column, args: the kernel's parameters in order as name:type, which the
launcher packs (libaiter/gpu/triton_args.cpp); other kernels take one by-value
struct and have "-" there.
For every declared kernel the object must be an ELF for the target's machine
and architecture (EM_CUDA with the SM number, or EM_AMDGPU with the gfx
processor) and must define the symbol.  Any mismatch fails the build.
"""
import json
import os
import re
import struct
import sys

EM_CUDA, EM_AMDGPU = 190, 224
AMDGPU_MACH = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx950": 0x4F, "gfx1100": 0x41, "gfx1201": 0x4E,
               # LLVM's generic processors (EF_AMDGPU_MACH_AMDGCN_GFX*_GENERIC)
               "gfx9-generic": 0x51, "gfx10-1-generic": 0x52, "gfx10-3-generic": 0x53, "gfx11-generic": 0x54,
               "gfx12-generic": 0x59, "gfx9-4-generic": 0x5F}
DECLARATION = re.compile(r"//\s*aiter-kernel:\s*(.*)$")
FAMILY = re.compile(r"//\s*aiter-kernel-family:\s*(.*)$")
TEMPLATE_KEYS = ("op", "variant", "symbol", "block", "smem")
COLUMNS = ("target", "op", "variant", "file", "symbol", "block", "smem", "args")


def elf_facts(path):
    """(machine, flags, defined symbol names, ABI version) of a 64-bit little-endian ELF."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    machine = struct.unpack_from("<H", data, 18)[0]
    flags = struct.unpack_from("<I", data, 48)[0]
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    symbols = set()
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            name_off, info, _, shndx = struct.unpack_from("<IBBH", data, off)
            if shndx != 0 and name_off:
                end = data.index(b"\0", strtab[4] + name_off)
                symbols.add(data[strtab[4] + name_off:end].decode())
    return machine, flags, symbols, data[8]


def cuda_sm(flags, abi_version):
    """The SM number of a cubin's e_flags: bits 8-15 from ELF ABI version 8 on
    (CUDA 13's ptxas), bits 0-7 before (CUDA 12's, which Triton 3.6 carries)."""
    return (flags >> 8) & 0xFF if abi_version >= 8 else flags & 0xFF


def check_target(path, target, machine, flags, abi_version):
    if target.startswith("sm_"):
        sm = int(re.match(r"sm_(\d+)", target).group(1))
        if machine != EM_CUDA or cuda_sm(flags, abi_version) != sm:
            raise ValueError(f"{path}: expected a CUDA ELF for {target}, got machine {machine} flags {flags:#x}")
    else:
        mach = AMDGPU_MACH.get(target)
        if machine != EM_AMDGPU or mach is None or flags & 0xFF != mach:
            raise ValueError(f"{path}: expected an AMDGPU ELF for {target}, got machine {machine} flags {flags:#x}")


def expand_family(fields):
    """The declarations of a kernel-family line, each with its minimum SM (0: any)."""
    lists = {k: v.split(",") for k, v in fields.items() if k not in TEMPLATE_KEYS}
    bound_names = []  # names bound by the ':' parts of a list value, in template order
    for key in TEMPLATE_KEYS:
        for name in re.findall(r"{(\w+)}", fields[key]):
            if name not in lists and name not in bound_names:
                bound_names.append(name)
    combos = [({}, 0)]
    for name, values in lists.items():
        expanded = []
        for binding, min_sm in combos:
            for value in values:
                value, _, sm = value.partition("@")
                first, *rest = value.split(":")
                extra = dict(zip(bound_names, rest)) if rest else {}
                expanded.append(({**binding, name: first, **extra}, max(min_sm, int(sm or 0))))
        combos = expanded
    for binding, min_sm in combos:
        yield {k: fields[k].format(**binding) for k in TEMPLATE_KEYS}, min_sm


def triton_declarations(metadata, obj):
    """The kernels build.py compiled into `obj`, from its .json."""
    with open(metadata, encoding="utf-8") as f:
        kernels = json.load(f)["kernels"]
    for k in kernels:
        if k["file"] == os.path.basename(obj):
            yield {key: str(k[key]) for key in TEMPLATE_KEYS + ("args",)}


def declarations(source, target):
    """The kernels a source declares for a target."""
    sm = int(re.match(r"sm_(\d+)", target).group(1)) if target.startswith("sm_") else 0
    with open(source, encoding="utf-8") as f:
        for line in f:
            m = DECLARATION.search(line)
            if m:
                fields = dict(item.split("=", 1) for item in m.group(1).split())
                yield {k: fields[k] for k in TEMPLATE_KEYS}
            m = FAMILY.search(line)
            if m:
                fields = dict(item.split("=", 1) for item in m.group(1).split())
                for kernel, min_sm in expand_family(fields):
                    if min_sm == 0 or sm >= min_sm:
                        yield kernel


def check_object(path, target, symbols_wanted):
    machine, flags, symbols, abi_version = elf_facts(path)
    check_target(path, target, machine, flags, abi_version)
    missing = [s for s in symbols_wanted if s not in symbols]
    if missing:
        raise ValueError(f"{path}: declared kernels missing from the code object: {', '.join(missing)}")


def write(output, triplets):
    rows = []
    for triplet in triplets:
        target, source, obj = triplet.split(":", 2)
        if source.endswith(".json"):
            kernels = list(triton_declarations(source, obj))
            if not kernels:
                raise ValueError(f"{obj}: not in {source}")
        else:
            kernels = list(declarations(source, target))
        check_object(obj, target, [k["symbol"] for k in kernels])
        for k in kernels:
            rows.append((target, k["op"], k["variant"], os.path.basename(obj), k["symbol"], k["block"], k["smem"],
                         k.get("args", "-")))
    rows.sort()
    with open(output, "w", encoding="utf-8") as f:
        f.write("# " + "\t".join(COLUMNS) + "\n")
        for row in rows:
            f.write("\t".join(row) + "\n")


def check_manifest(path):
    """Re-checks an installed manifest: every row's file exists, is an ELF of its
    target and defines its symbol.  Returns the number of rows."""
    folder = os.path.dirname(path)
    rows = [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8") if not line.startswith("#")]
    for target, _op, _variant, file, symbol, *_ in rows:
        check_object(os.path.join(folder, file), target, [symbol])
    return len(rows)


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        print(f"{check_manifest(sys.argv[2])} kernels checked")
    else:
        write(sys.argv[1], sys.argv[2:])
