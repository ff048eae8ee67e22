#!/usr/bin/env python3
"""Where the resident per-tensor quantization kernel (kernels/quant/quant_resident.cu)
spends its time: builds it with -DAITER_PHASE_CLOCK (benchmarks/phase_clock.py, nvcc on the GPU machine;
libaiter itself never compiles at run time), launches it as libaiter does
(bf16 -> fp8 e4m3fn, one block an SM, cooperatively, L2 flushed before), and
prints, over the blocks, when each phase ended, in µs from the first block's
start (%globaltimer):
  python3 benchmarks/profile_resident_phases.py 2048x4096,4096x4096 [sm_90a]"""
import ctypes
import sys

import torch

from phase_clock import check, load, print_phases

PHASES = ["own amax", "all arrived", "amaxes read", "quantized", "done"]
THREADS, PIECE, STEP = 1024, 16, 1024 * 16
E4M3FN = 2  # kernels/common/quant_kind.h


class QuantParams(ctypes.Structure):  # kernels/quant/quant_params.h
    _fields_ = [("x", ctypes.c_void_p), ("out", ctypes.c_void_p), ("scale", ctypes.c_void_p),
                ("scale_in", ctypes.c_void_p), ("rows", ctypes.c_longlong), ("cols", ctypes.c_longlong),
                ("x_stride", ctypes.c_longlong), ("out_stride", ctypes.c_longlong), ("grid_cols", ctypes.c_uint),
                ("grid_rows", ctypes.c_uint), ("quant", ctypes.c_int), ("scale_is_amax", ctypes.c_int),
                ("pieces", ctypes.c_longlong), ("block_pieces", ctypes.c_longlong), ("held_steps", ctypes.c_int)]


def main():
    sizes = sys.argv[1].split(",")
    arch = sys.argv[2] if len(sys.argv) > 2 else "sm_90a"
    torch.zeros(1, device="cuda")  # the primary context, current
    cuda = ctypes.CDLL("libcuda.so.1")
    device, optin = ctypes.c_int(), ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), torch.cuda.current_device()), "cuDeviceGet")
    check(cuda.cuDeviceGetAttribute(ctypes.byref(optin), 97, device), "cuDeviceGetAttribute")  # smem opt-in
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    kernel, stamps = load(cuda, "quant/quant_resident.cu", "aiter_quant_resident_bf16", arch, sms)
    flush = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    for size in sizes:
        tokens, hidden = (int(n) for n in size.split("x"))
        x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device="cuda")
        out = torch.empty(tokens, hidden, dtype=torch.uint8, device="cuda")
        scale = torch.empty(1, dtype=torch.float32, device="cuda")
        stamps.zero_()
        # As libaiter/gpu/quant.cpp plans it.
        p = QuantParams(x=x.data_ptr(), out=out.data_ptr(), scale=scale.data_ptr(), rows=1, cols=tokens * hidden,
                        x_stride=tokens * hidden, out_stride=tokens * hidden, grid_rows=1, quant=E4M3FN)
        p.pieces = tokens * hidden * 2 // PIECE
        p.block_pieces = (p.pieces + sms - 1) // sms
        p.grid_cols = (p.pieces + p.block_pieces - 1) // p.block_pieces
        steps = (p.block_pieces + THREADS - 1) // THREADS
        p.held_steps = min(steps, (optin.value - 1024) // STEP)
        smem = p.held_steps * STEP
        check(cuda.cuFuncSetAttribute(kernel, 8, smem), "cuFuncSetAttribute")  # max dynamic smem
        args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(p), ctypes.c_void_p))
        for _ in range(3):  # the last run's stamps are printed
            flush.zero_()
            scale.fill_(float("nan"))  # the kernel zeroes it itself
            check(cuda.cuLaunchCooperativeKernel(kernel, p.grid_cols, 1, 1, THREADS, 1, 1, smem,
                                                 ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), args),
                  "cuLaunchCooperativeKernel")
            torch.cuda.synchronize()
        expected = x.float().abs().max().item() / 448.0
        print(f"{size}: {p.grid_cols} blocks, {p.held_steps} of {steps} steps held; "
              f"scale {'right' if abs(scale.item() - expected) <= 1e-6 * expected else 'WRONG'}")
        print_phases(stamps, p.grid_cols, PHASES)


if __name__ == "__main__":
    main()
