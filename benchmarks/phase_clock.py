"""Shared by the profile_*_phases.py scripts: a kernel built with
-DAITER_PHASE_CLOCK (kernels/common/phase_clock.h: kPhaseStamps %globaltimer
stamps a block) by nvcc on the GPU machine, loaded by the driver API with its
stamps buffer, and the stamps printed as phases."""
import ctypes
import os
import subprocess
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMPS = 8  # kPhaseStamps


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed: CUDA error {result}")


def build(source, arch):
    """kernels/<source> compiled with the phase clock for `arch` (e.g. sm_90a)."""
    cubin = os.path.join(tempfile.mkdtemp(), os.path.basename(source) + ".clock.cubin")
    subprocess.run(["nvcc", "-cubin", f"-gencode=arch=compute_{arch[3:]},code={arch}", "-O3", "-std=c++17",
                    "-DAITER_NVIDIA", "-DAITER_PHASE_CLOCK", f"-I{ROOT}", f"-I{ROOT}/kernels", "-o", cubin,
                    os.path.join(ROOT, "kernels", source)], check=True)
    return cubin


def load(cuda, source, symbol, arch, blocks):
    """(kernel, stamps): `symbol` of kernels/<source> built with the clock, whose
    phase_clock points at `stamps` (STAMPS int64 a block, on the device)."""
    torch.zeros(1, device="cuda")  # the primary context, current
    module, kernel = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda.cuModuleLoad(ctypes.byref(module), build(source, arch).encode()), "cuModuleLoad")
    check(cuda.cuModuleGetFunction(ctypes.byref(kernel), module, symbol.encode()), "cuModuleGetFunction")
    clock_at, clock_bytes = ctypes.c_uint64(), ctypes.c_size_t()
    check(cuda.cuModuleGetGlobal_v2(ctypes.byref(clock_at), ctypes.byref(clock_bytes), module, b"phase_clock"),
          "cuModuleGetGlobal")
    stamps = torch.zeros(blocks * STAMPS, dtype=torch.int64, device="cuda")
    pointer = ctypes.c_uint64(stamps.data_ptr())
    check(cuda.cuMemcpyHtoD_v2(clock_at, ctypes.byref(pointer), 8), "cuMemcpyHtoD")
    return kernel, stamps


def print_phases(stamps, blocks, names):
    """When each phase (stamps 1, 2, ...) ended over the blocks, in us from the first block's start (stamp 0)."""
    t = stamps[: blocks * STAMPS].view(-1, STAMPS).double().cpu()
    start = t[:, 0].min()
    for i, name in enumerate(names, start=1):
        at = (t[:, i] - start) / 1000
        print(f"  {name:24s} first {at.min():7.2f}  median {at.median():7.2f}  last {at.max():7.2f} us")
