"""Host time per eager call of libaiter's torch entry points against PyTorch's
own op, in one run: rmsnorm ([1, H] rows) and a GEMM at M = 1.

    python benchmarks/bench_overhead.py [--device cpu|cuda] [--calls 10000] [--loops 7]

Each row times ``--calls`` back-to-back calls, ``--loops`` times, and reports
the median microseconds per call.  On CUDA the calls only queue kernels, so
the figure is host (launch) time; the stream is synchronized once at the end
of each loop.  On the CPU the
figure includes the kernel itself, so compare rows of the same op: the gap
between libaiter's row and PyTorch's is the call overhead plus any kernel
speed difference (the "kernel only" row isolates the C call).
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import aiter
import aiter.torch  # noqa: F401
from aiter._lib import ffi, lib
from aiter.torch import _native
from aiter.torch._dltensor import dltensor


def per_call_us(fn, calls, loops, sync):
    fn()
    sync()
    times = []
    for _ in range(loops):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def rmsnorm_rows(x, w, out):
    out_c, x_c, w_c = dltensor(out, "out"), dltensor(x, "x"), dltensor(w, "weight")
    return [
        ("F.rms_norm", lambda: F.rms_norm(x, (x.shape[-1],), w, 1e-6)),
        ("torch.ops.aiter.rmsnorm", lambda: torch.ops.aiter.rmsnorm(x, w, 1e-6)),
        ("torch.ops.aiter.rmsnorm.out", lambda: torch.ops.aiter.rmsnorm.out(x, w, 1e-6, out=out)),
        ("aiter.rmsnorm(..., out=)", lambda: aiter.rmsnorm(x, w, 1e-6, out=out)),
        ("aiter.rmsnorm (allocating)", lambda: aiter.rmsnorm(x, w, 1e-6)),
        ("C call only (cached DLTensors)", lambda: lib.aiter_rmsnorm(out_c, x_c, w_c, 1e-6, ffi.NULL)),
    ]


def gemm_rows(a, w, out):
    return [
        ("F.linear", lambda: F.linear(a, w)),
        ("torch.ops.aiter.gemm_a16w16", lambda: torch.ops.aiter.gemm_a16w16(a, w)),
        ("aiter.gemm_a16w16(..., out=)", lambda: aiter.gemm_a16w16(a, w, out=out)),
        ("aiter.gemm_a16w16 (allocating)", lambda: aiter.gemm_a16w16(a, w)),
    ]


_KEEP = []


def registration_rows(x):
    """The same empty op (one new_empty) registered both ways: what the
    registration itself costs a call."""
    lib = torch.library.Library("aiter_bench_probe", "DEF")
    lib.define("empty(Tensor x) -> Tensor")
    lib.impl("empty", lambda t: t.new_empty(0), x.device.type.upper())

    @torch.library.custom_op("aiter_bench_probe::empty_custom", mutates_args=())
    def empty_custom(t: torch.Tensor) -> torch.Tensor:
        return t.new_empty(0)

    rows = [("Library.define + impl", lambda: torch.ops.aiter_bench_probe.empty(x)),
            ("torch.library.custom_op", lambda: torch.ops.aiter_bench_probe.empty_custom(x))]
    _KEEP.append(lib)  # dropping the Library would unregister the op
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--calls", type=int, default=10000)
    parser.add_argument("--loops", type=int, default=7)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--gemm-n", type=int, default=None, help="N = K of the GEMM (4096 on CUDA, 256 on the "
                        "CPU, where a 4096 x 4096 product takes milliseconds and hides the call overhead)")
    args = parser.parse_args()
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    n = args.gemm_n or (4096 if device.type == "cuda" else 256)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, args.hidden, generator=gen).to(device, dtype)
    w = torch.randn(args.hidden, generator=gen).to(device, dtype)
    a = torch.randn(1, n, generator=gen).to(device, dtype)
    wg = torch.randn(n, n, generator=gen).to(device, dtype)
    print(f"device {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}), "
          f"torch {torch.__version__}, aiter {aiter.__version__}, {args.calls} calls x {args.loops} loops, "
          "median us per call")
    print("torch.ops.aiter kernels on this device: " +
          ", ".join(f"{q} {_native.kernel_of(q, device.type)}" for q in ("rmsnorm", "rmsnorm.out", "gemm_a16w16")))
    gemm_out = torch.empty(1, n, dtype=dtype, device=device)
    with torch.inference_mode():
        for title, rows in ((f"rmsnorm [1, {args.hidden}] {args.dtype}", rmsnorm_rows(x, w, torch.empty_like(x))),
                            (f"GEMM M=1 N=K={n} {args.dtype}", gemm_rows(a, wg, gemm_out)),
                            ("an empty op, registered two ways", registration_rows(x))):
            print(f"\n{title}")
            for name, fn in rows:
                print(f"  {name:34s} {per_call_us(fn, args.calls, args.loops, sync):9.2f}")


if __name__ == "__main__":
    main()
