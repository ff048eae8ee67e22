"""Reading the code objects' kernels and their resources, for `python -m aiter
info --kernels` and tools/check_amd_isa.py.  Pure Python (no GPU, no LLVM):

- AMD (.hsaco): the NT_AMDGPU_METADATA note (a MessagePack map, code object
  v4-v6) gives each kernel's VGPRs, AGPRs, SGPRs, spills, LDS bytes, scratch
  and wavefront size;
- NVIDIA (.cubin): a kernel's registers are the top byte of its .text.<kernel>
  section's sh_info, its static shared memory the size of .nv.shared.<kernel>.
Whether an AMD kernel uses the matrix cores needs a disassembler:
matrix_instructions() asks llvm-objdump when it is installed.
"""
import collections
import re
import shutil
import struct
import subprocess

# Ops whose kernels multiply matrices (the manifest's op column): those whose
# AMD kernels should use the matrix cores.  Routing, sorting, caches and norms
# are not here.
MATRIX_OPS = re.compile(r"^(gemm.*|.*attention.*|mla_(decode|prefill).*|moe_stage\d.*|fused_moe.*|moe_gemm.*)$")
NT_AMDGPU_METADATA = 32
AMD_RESOURCES = (".vgpr_count", ".agpr_count", ".sgpr_count", ".vgpr_spill_count", ".sgpr_spill_count",
                 ".group_segment_fixed_size", ".private_segment_fixed_size", ".wavefront_size")


def _sections(data):
    """[(name, type, offset, size, info, link)] of a 64-bit little-endian ELF."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4]
    out = []
    for name_off, kind, _flags, _addr, offset, size, link, info, _align, _entsize in raw:
        end = data.index(b"\0", names_at + name_off)
        out.append((data[names_at + name_off:end].decode(), kind, offset, size, info, link))
    return out


def _unpack(data, at):
    """One MessagePack value at data[at:]: (value, next offset).  The subset the
    AMDGPU metadata uses: maps, arrays, strings, integers, booleans, nil."""
    b = data[at]
    at += 1
    if b <= 0x7F:
        return b, at
    if b >= 0xE0:
        return b - 0x100, at
    if 0x80 <= b <= 0x8F or b in (0xDE, 0xDF):
        n, at = (b & 0x0F, at) if b <= 0x8F else _length(data, at, 2 if b == 0xDE else 4)
        value = {}
        for _ in range(n):
            key, at = _unpack(data, at)
            value[key], at = _unpack(data, at)
        return value, at
    if 0x90 <= b <= 0x9F or b in (0xDC, 0xDD):
        n, at = (b & 0x0F, at) if b <= 0x9F else _length(data, at, 2 if b == 0xDC else 4)
        items = []
        for _ in range(n):
            item, at = _unpack(data, at)
            items.append(item)
        return items, at
    if 0xA0 <= b <= 0xBF or b in (0xD9, 0xDA, 0xDB, 0xC4, 0xC5, 0xC6):
        if b <= 0xBF:
            n = b & 0x1F
        else:
            n, at = _length(data, at, {0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC4: 1, 0xC5: 2, 0xC6: 4}[b])
        raw = data[at:at + n]
        return (raw if b in (0xC4, 0xC5, 0xC6) else raw.decode("utf-8", "replace")), at + n
    fixed = {0xCC: "B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: "b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
             0xCA: ">f", 0xCB: ">d"}
    if b in fixed:
        value, = struct.unpack_from(fixed[b], data, at)
        return value, at + struct.calcsize(fixed[b])
    if b in (0xC0, 0xC2, 0xC3):
        return {0xC0: None, 0xC2: False, 0xC3: True}[b], at
    raise ValueError(f"MessagePack byte {b:#x} at {at - 1} is not in the AMDGPU metadata subset")


def _length(data, at, size):
    return int.from_bytes(data[at:at + size], "big"), at + size


def amd_kernel_resources(path):
    """{kernel name: {resource without its dot: value}} from the metadata note."""
    data = open(path, "rb").read()
    for _name, kind, offset, size, _info, _link in _sections(data):
        if kind != 7:  # SHT_NOTE
            continue
        at = offset
        while at + 12 <= offset + size:
            namesz, descsz, note_type = struct.unpack_from("<III", data, at)
            owner = data[at + 12:at + 12 + namesz].rstrip(b"\0")
            desc = at + 12 + (namesz + 3) // 4 * 4
            if owner == b"AMDGPU" and note_type == NT_AMDGPU_METADATA:
                metadata, _ = _unpack(data, desc)
                return {k[".name"]: {r[1:]: k[r] for r in AMD_RESOURCES if r in k}
                        for k in metadata.get("amdhsa.kernels", [])}
            at = desc + (descsz + 3) // 4 * 4
    return {}


EIATTR_REGCOUNT = 0x2F  # .nv.info attribute: (symbol index, registers)


def _symbol_names(data, sections):
    """{symbol index: name} of the ELF's symbol table."""
    names = {}
    for _name, kind, offset, size, _info, link in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][2]
        for index, at in enumerate(range(offset, offset + size, 24)):
            name_off, = struct.unpack_from("<I", data, at)
            names[index] = data[strtab + name_off:data.index(b"\0", strtab + name_off)].decode()
    return names


def _nv_info_records(data, offset, size):
    """(attribute, payload bytes) of an .nv.info section: format byte, attribute
    byte, then per format no value, a byte, a 16-bit value, or a sized payload."""
    at = offset
    while at + 2 <= offset + size:
        fmt, attr = data[at], data[at + 1]
        at += 2
        if fmt == 0x04:  # EIFMT_SVAL
            length, = struct.unpack_from("<H", data, at)
            yield attr, data[at + 2:at + 2 + length]
            at += 2 + length
        else:  # EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL: two bytes
            yield attr, data[at:at + 2]
            at += 2


def nvidia_kernel_resources(path):
    """{kernel name: {"registers": n, "static_smem": bytes}} of a cubin."""
    data = open(path, "rb").read()
    sections = _sections(data)
    symbols = _symbol_names(data, sections)
    out = collections.defaultdict(dict)
    for name, _kind, offset, size, _info, _link in sections:
        if name.startswith(".text."):
            out[name[len(".text."):]].setdefault("static_smem", 0)
        elif name.startswith(".nv.shared.") and not name.startswith(".nv.shared.reserved"):
            out[name[len(".nv.shared."):]]["static_smem"] = size
        elif name == ".nv.info":
            for attr, payload in _nv_info_records(data, offset, size):
                if attr == EIATTR_REGCOUNT and len(payload) == 8:
                    index, registers = struct.unpack("<II", payload)
                    out[symbols.get(index, f"#{index}")]["registers"] = registers
    return {k: v for k, v in out.items() if not k.startswith("#")}


def llvm_tool(name):
    for candidate in (f"{name}-19", name, f"/usr/lib/llvm-19/bin/{name}"):
        path = shutil.which(candidate)
        if path:
            return path
    return None


def matrix_instructions(path, objdump=None):
    """{kernel symbol: Counter of its v_mfma* / v_wmma* / v_smfmac* mnemonics},
    or None without llvm-objdump or when it cannot read the target (LLVM 19: gfx950)."""
    objdump = objdump or llvm_tool("llvm-objdump")
    if objdump is None:
        return None
    run = subprocess.run([objdump, "--disassemble", "--no-show-raw-insn", path], capture_output=True, text=True)
    if run.returncode != 0:
        return None
    found, current = {}, None
    for line in run.stdout.splitlines():
        label = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if label:
            current = found.setdefault(label.group(1), collections.Counter())
            continue
        op = re.match(r"^\s+(v_(?:mfma|wmma|smfmac|swmmac)\w*)", line)
        if op and current is not None:
            current[op.group(1)] += 1
    return found
