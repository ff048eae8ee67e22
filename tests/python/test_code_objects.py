"""The GPU code objects the build produced: every target whose toolchain is on
this machine was built, and every manifest row names an ELF of its target that
defines its kernel.  Runs without a GPU."""
import os
import shutil
import subprocess
import sys

import pytest

import aiter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import kernel_manifest  # noqa: E402

NVIDIA = {"sm_80", "sm_90a"}
AMD = {"gfx90a", "gfx942", "gfx1100", "gfx1201"}  # gfx950 needs a newer clang than 19


def expected_targets():
    expected = set()
    if shutil.which("nvcc"):
        expected |= NVIDIA
    clang = shutil.which("clang-19")
    if clang and subprocess.run([clang, "-print-targets"], capture_output=True, text=True).stdout.count("amdgcn"):
        expected |= AMD
    return expected


def test_every_available_toolchain_built_its_targets():
    built = set(aiter.library_info()["gpu_targets"])
    assert expected_targets() <= built, f"built {sorted(built)}, expected at least {sorted(expected_targets())}"


def test_backends_follow_the_targets_built():
    info = aiter.library_info()
    targets = info["gpu_targets"]
    assert ("cuda" in info["backends"]) == any(t.startswith("sm_") for t in targets)
    assert ("hip" in info["backends"]) == any(t.startswith("gfx") for t in targets)


def test_manifest_rows_are_valid_code_objects():
    folder = aiter.library_info()["kernel_dir"]
    if not folder:
        if expected_targets():
            pytest.fail("GPU toolchains are installed but no code objects were found")
        pytest.skip("no GPU toolchain on this machine: nothing was built")
    rows = kernel_manifest.check_manifest(os.path.join(folder, "manifest.tsv"))
    assert rows >= len(aiter.library_info()["gpu_targets"])


def test_a_corrupted_code_object_is_caught(tmp_path):
    folder = aiter.library_info()["kernel_dir"]
    if not folder:
        pytest.skip("no code objects built")
    for name in os.listdir(folder):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    victim = next((name for name in os.listdir(tmp_path) if name.endswith((".cubin", ".hsaco"))), None)
    if victim is None:
        pytest.skip("the manifest lists no code object (a CPU-only build)")
    data = bytearray((tmp_path / victim).read_bytes())
    data[18] ^= 0xFF  # e_machine
    (tmp_path / victim).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="expected"):
        kernel_manifest.check_manifest(str(tmp_path / "manifest.tsv"))


import check_amd_isa  # noqa: E402


def amd_manifest():
    """The manifest, when it has AMD rows and the LLVM tools to read them are here."""
    folder = aiter.library_info()["kernel_dir"]
    if not folder or not any(t.startswith("gfx") for t in aiter.library_info()["gpu_targets"]):
        pytest.skip("no AMD code objects built")
    if not check_amd_isa.tool("llvm-objdump"):
        pytest.skip("llvm-objdump-19 not installed")
    return os.path.join(folder, "manifest.tsv")


def test_amd_matrix_kernels_use_the_matrix_cores():
    """Every AMD GEMM / attention / MLA / MoE-GEMM kernel has v_mfma (CDNA) or
    v_wmma (RDNA 3/4) instructions, but the known gaps (portable kernels), which
    are reported; every kernel's resources come from its metadata."""
    failures, gaps, table = check_amd_isa.check(amd_manifest())
    assert not failures, "\n".join(failures)
    assert all(r.get("wavefront_size") in (32, 64) and "vgpr_count" in r for *_, r in table)
    triton = [row for row in table if row[2].startswith("triton_") and row[3] is not None]
    assert all(row[3] > 0 for row in triton)
    print(f"{len(triton)} Triton kernels with matrix instructions; known gaps: {dict(gaps)}")


def test_isa_check_catches_a_lost_matrix_path(tmp_path):
    """A GEMM kernel without matrix instructions that is not a known gap (here a
    portable code object listed under another family name) fails the check."""
    manifest = amd_manifest()
    folder = os.path.dirname(manifest)
    rows = [line.split("\t") for line in open(manifest, encoding="utf-8") if line.startswith("gfx")]
    target, op, variant, file, symbol, *rest = next(r for r in rows if r[3].startswith("gemm_generic."))
    renamed = file.replace("gemm_generic.", "gemm_matrix.")
    shutil.copy(os.path.join(folder, file), tmp_path / renamed)
    (tmp_path / "manifest.tsv").write_text("\t".join([target, op, variant, renamed, symbol] + rest))
    failures, _, _ = check_amd_isa.check(str(tmp_path / "manifest.tsv"))
    assert len(failures) == 1 and "no v_mfma/v_wmma instruction" in failures[0]


def test_info_kernels_lists_every_kernel_with_its_resources(monkeypatch, capsys):
    """`python -m aiter info --kernels`: each manifest row with resources read
    from its code object (pure Python: AMD metadata notes, cubin .nv.info)."""
    from aiter.cli import code_objects
    folder = aiter.library_info()["kernel_dir"]
    if not folder:
        pytest.skip("no code objects built")
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(folder, "manifest.tsv"), encoding="utf-8")
            if not line.startswith("#")]
    for target, op, variant, file, symbol, *_ in rows:
        path = os.path.join(folder, file)
        if target.startswith("gfx"):
            r = code_objects.amd_kernel_resources(path)[symbol]
            assert r["wavefront_size"] in (32, 64) and 0 < r["vgpr_count"] <= 512 and r["sgpr_count"] > 0, (file, r)
        else:
            r = code_objects.nvidia_kernel_resources(path)[symbol]
            assert 0 < r["registers"] <= 255 and r["static_smem"] >= 0, (file, r)

    from aiter.cli import kernels
    # The listing itself, without disassembling again (test_amd_matrix_kernels_use_the_matrix_cores does).
    monkeypatch.setattr(code_objects, "matrix_instructions", lambda path, objdump=None: None)
    assert kernels.run(folder) == 0
    out = capsys.readouterr().out
    assert all(f"{op}/{variant} ({symbol}," in out for _t, op, variant, _f, symbol, *_ in rows)
    assert out.count("registers ") + out.count("vgpr ") == len(rows)
    assert all("matrix: ?" in line for line in out.splitlines() if " gemm/" in line and "vgpr" in line)


def test_triton_kernels_and_gemm_variants_agree():
    """Every Triton kernel kernels/triton/build.py compiles for a target is a
    GEMM variant the library lists (before the portable kernels), and every
    listed Triton variant is built for some target: no kernel built but never
    reachable, no variant that no build provides."""
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "triton", "build.py")
    if not os.path.exists(path):
        pytest.skip("kernels/triton/build.py is not in this test tree")
    spec = importlib.util.spec_from_file_location("aiter_triton_build", path)
    triton_build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(triton_build)  # kernels_for() needs no triton
    built = {k.variant for target in triton_build.TARGETS for k in triton_build.kernels_for(target) if k.op == "gemm"}
    listed = set()
    for op in ("gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale", "batched_gemm_a16w16", "batched_gemm_a8w8"):
        names = aiter.tuning.variants(op, device="cuda")
        triton = [i for i, v in enumerate(names) if v.startswith("triton_")]
        assert triton and max(triton) < min(i for i, v in enumerate(names) if v.startswith("generic.")), names
        listed |= {names[i] for i in triton}
    assert built == listed, f"built only: {sorted(built - listed)}; listed only: {sorted(listed - built)}"


@pytest.mark.parametrize("args, loads", [("a:ptr,m:i32,lda:i64,scratch:ptr", True), ("-", True),
                                         ("a:ptr,s:f32", True), ("a:f64", False), ("a:ptr,,m:i32", False), (":ptr", False)])
def test_manifest_args_column(tmp_path, args, loads):
    """The runtime reads a row's args column (a Triton kernel's parameters, or
    "-"); a malformed one makes the whole manifest unusable, not a misplaced
    argument at launch."""
    (tmp_path / "manifest.tsv").write_text(
        f"# target\top\tvariant\tfile\tsymbol\tblock\tsmem\targs\ngfx942\tgemm\tv\tk.hsaco\tk\t256\t0\t{args}\n")
    env = dict(os.environ, AITER_KERNEL_PATH=str(tmp_path))
    code = "import aiter; print(aiter.library_info()['gpu_targets'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == ("['gfx942']" if loads else "[]")
