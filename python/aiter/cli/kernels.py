"""python -m aiter info --kernels: every kernel of the manifest with its
resources, read from the code objects themselves (code_objects.py).

AMD rows: VGPRs, AGPRs, SGPRs, spilled VGPRs/SGPRs, LDS bytes (static, plus the
dynamic bytes a launch gives: the manifest's smem), scratch bytes, wavefront
size, and, for kernels that multiply matrices, their matrix instructions
(v_mfma / v_wmma) when llvm-objdump is installed ("?" without it, or where it
does not know the target).
NVIDIA rows: registers, static shared memory plus the dynamic bytes.
"""
import collections
import os

from . import code_objects


def _rows(folder):
    path = os.path.join(folder, "manifest.tsv")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]


def _amd_line(resources, matrix, smem):
    r = resources
    get = lambda key: r.get(key, "-")  # noqa: E731 (no AGPRs on RDNA)
    text = (f"vgpr {get('vgpr_count')} agpr {get('agpr_count')} sgpr {get('sgpr_count')} "
            f"spill {get('vgpr_spill_count')}/{get('sgpr_spill_count')} lds {get('group_segment_fixed_size')}+{smem} "
            f"scratch {get('private_segment_fixed_size')} wave{get('wavefront_size')}")
    if matrix == "":  # not a matrix product: not disassembled
        return text
    matrix_text = "?" if matrix is None else (", ".join(f"{n} {op}" for op, n in sorted(matrix.items())) or "none")
    return f"{text} | matrix: {matrix_text}"


def _nvidia_line(resources, smem):
    return f"registers {resources.get('registers', '?')} smem {resources.get('static_smem', '?')}+{smem}"


def run(folder):
    if not folder or not os.path.exists(os.path.join(folder, "manifest.tsv")):
        print("no code objects (CPU-only build, or AITER_KERNEL_PATH names no manifest)")
        return 0
    print(f"code objects: {folder}/manifest.tsv")
    by_file = collections.defaultdict(list)
    for row in _rows(folder):
        by_file[(row[0], row[3])].append(row)
    for (target, file), rows in sorted(by_file.items()):
        path = os.path.join(folder, file)
        amd = target.startswith("gfx")
        try:
            resources = code_objects.amd_kernel_resources(path) if amd else code_objects.nvidia_kernel_resources(path)
        except (OSError, ValueError) as e:
            print(f"{target} {file}: cannot be read: {e}")
            continue
        # Disassembled (llvm-objdump) only where kernels multiply matrices.
        matrix = None
        if amd and any(code_objects.MATRIX_OPS.match(r[1]) for r in rows):
            matrix = code_objects.matrix_instructions(path)
        print(f"{target} {file}")
        for _target, op, variant, _file, symbol, block, smem, *_ in rows:
            r = resources.get(symbol, {})
            if not amd:
                detail = _nvidia_line(r, smem)
            elif not code_objects.MATRIX_OPS.match(op):
                detail = _amd_line(r, "", smem)
            else:
                detail = _amd_line(r, None if matrix is None else matrix.get(symbol, {}), smem)
            print(f"  {op}/{variant} ({symbol}, block {block}): {detail}")
    return 0
