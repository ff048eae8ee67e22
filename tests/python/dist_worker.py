"""One rank of the multi-GPU tests of aiter.dist (tests/python/test_dist.py), run
in its own process (multiprocessing spawn), one per GPU.

Every rank makes its inputs from a generator seeded by (seed, rank), so each can
make every peer's inputs too and compute the float64 sum itself: the reference
is independent of the library and of NCCL.  Each check that fails adds a line
to the list the rank sends back; the parent test fails on any line.
"""
import os
import traceback

SIZES = [1, 2, 7, 8, 9, 127, 1000, 4097, 65537, 262147, (1 << 20) + 3, (4 << 20) + 5]
BIG = {"bfloat16": 32 << 20, "float16": 32 << 20, "float32": 16 << 20}  # 64 MB messages
MAX_BYTES = 8 << 20


def _eps(dtype):
    import torch
    return {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}[dtype]


def _inputs(n, dtype, seed, world, device, offset=0):
    """Every rank's input (x of rank r from the generator seeded (seed, r)); a
    view `offset` elements into a larger buffer for unaligned pointers."""
    import torch
    xs = []
    for r in range(world):
        g = torch.Generator(device=device).manual_seed(seed * 1009 + r)
        base = torch.randn(n + offset, generator=g, device=device, dtype=torch.float32).to(dtype)
        xs.append(base[offset:])
    return xs


class Checker:
    def __init__(self, rank):
        self.rank, self.failures, self.count = rank, [], 0

    def expect(self, ok, what):
        self.count += 1
        if not ok:
            self.failures.append(f"rank {self.rank}: {what}")

    def close_to_sum(self, out, xs, what, exact_sum=True):
        """out against the float64 sum of xs: within one rounding of out's dtype
        (the custom kernels sum in fp32 and round once), or W roundings of the
        partial sums (NCCL rounds at every step of its ring)."""
        import torch
        ref = sum(x.double() for x in xs)
        mags = sum(x.double().abs() for x in xs)
        eps = _eps(out.dtype)
        tol = (ref.abs() * eps * 1.01 + mags * 2.0 ** -22) if exact_sum else mags * eps * len(xs)
        err = (out.double() - ref).abs()
        bad = ~(err <= tol)  # NaN (unwritten) fails
        self.expect(not bool(bad.any()), f"{what}: {int(bad.sum())} of {out.numel()} elements off "
                    f"(max err {float(torch.nan_to_num(err, nan=float('inf')).max()):.3g})")

    def same_on_every_rank(self, t, what):
        """Bitwise: every rank's result equals rank 0's."""
        import torch
        import torch.distributed as dist
        flat = t.contiguous().view(-1).view(torch.uint8)
        if flat.numel() > (8 << 20):  # large: a position-weighted checksum of the bytes
            w = torch.arange(flat.numel(), device=flat.device, dtype=torch.int64) % 65521 + 1
            flat = (flat.to(torch.int64) * w).sum().view(1)
        gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, flat)
        self.expect(all(torch.equal(g, gathered[0]) for g in gathered), f"{what}: ranks differ")


def _poisoned(like):
    import torch
    return torch.full_like(like, float("nan"))


def check_all_reduce(ck, ar, comm, rank, world, dev):
    import torch
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        size = torch.tensor([], dtype=dtype).element_size()
        for i, n in enumerate(SIZES + [BIG[str(dtype).split(".")[1]]]):
            offset = 1 if i % 3 == 1 else 0  # unaligned x and out for some sizes
            xs = _inputs(n, dtype, 100 + i, world, dev, offset)
            fits = n * size <= MAX_BYTES
            algos = ["auto", "one_shot", "two_shot", "nccl"] if fits else ["auto"]
            for algo in algos:
                out = _poisoned(torch.empty(n + offset, dtype=dtype, device=dev))[offset:]
                ar.all_reduce(xs[rank], out=out, algo=algo)
                what = f"custom all_reduce {dtype} n={n} offset={offset} algo={algo}"
                ck.close_to_sum(out, xs, what, exact_sum=fits and algo != "nccl")
                ck.same_on_every_rank(out, what)
            if n <= 65537:  # in place, and through the communicator's NCCL
                x = xs[rank].clone()
                ar.all_reduce(x, out=x)
                ck.close_to_sum(x, xs, f"in-place custom all_reduce {dtype} n={n}")
                out = comm.all_reduce(xs[rank], out=_poisoned(xs[rank]))
                ck.close_to_sum(out, xs, f"comm.all_reduce {dtype} n={n}", exact_sum=False)


def check_signed_zeros(ck, ar, rank, world, dev):
    """The push kernel marks empty slots with the word 0x80000000 (-0.0 in fp32, the
    16-bit pair (+0, -0)) and sends such words of x as 0: x full of them must not
    wait for its time limit (10 s) and sums to zero; the call after it is right."""
    import time

    import torch
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        x = torch.zeros(4099, dtype=dtype, device=dev)
        x[1::2] = -0.0  # fp32: every other word; 16-bit: the pairs (+0, -0)
        out = _poisoned(x)
        torch.cuda.synchronize()
        start = time.perf_counter()
        ar.all_reduce(x, out=out, algo="one_shot")
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        what = f"push all_reduce of signed zeros {dtype}"
        ck.expect(seconds < 5.0, f"{what}: took {seconds:.1f} s (waited for its time limit)")
        ck.expect(bool((out == 0).all()), f"{what}: not all zero")
        ck.same_on_every_rank(out, what)
        xs = _inputs(4099, dtype, 1300, world, dev)
        out = ar.all_reduce(xs[rank], algo="one_shot")
        ck.close_to_sum(out, xs, f"{what}: the next call")


def check_gather_scatter(ck, comm, rank, world, dev):
    import torch
    for dtype in (torch.bfloat16, torch.float32):
        for rows in (1, 3, 1000):
            xs = [x.view(rows, 5) for x in _inputs(rows * 5, dtype, 7 + rows, world, dev)]
            out = comm.all_gather(xs[rank], out=_poisoned(torch.empty(rows * world, 5, dtype=dtype, device=dev)))
            ck.expect(torch.equal(out, torch.cat(xs)), f"all_gather {dtype} rows={rows}")
            big = [x.view(rows * world, 5) for x in _inputs(rows * world * 5, dtype, 9 + rows, world, dev)]
            part = comm.reduce_scatter(big[rank], out=_poisoned(torch.empty(rows, 5, dtype=dtype, device=dev)))
            ck.close_to_sum(part, [b[rank * rows:(rank + 1) * rows] for b in big],
                            f"reduce_scatter {dtype} rows={rows}", exact_sum=False)


def _norm_reference(xs, residual, weight, eps):
    """float64: residual_out = sum + residual, out = residual_out / rms * weight;
    and the errors allowed for each.  The library rounds the sum to the dtype,
    then sum + residual: each rounding is relative to its own magnitude, which
    can be far above the result's where the two cancel."""
    total = sum(x.double() for x in xs)
    s = total + residual.double()
    inv_rms = (s.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    out = s * inv_rms * weight.double()
    e = _eps(residual.dtype)
    tol_r = 2 * e * (2 * total.abs() + residual.double().abs()) + 1e-6
    tol_out = 2 * tol_r * inv_rms * weight.double().abs() + 4 * e * out.abs() + 1e-5
    return out, s, tol_out, tol_r


def check_fused(ck, ar, rank, world, dev):
    import torch

    import aiter
    shapes = [(1, 8192), (7, 8192), (64, 4096), (128, 8192), (300, 2048), (5, 1000), (3, 5120), (2, 999)]
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for j, (rows, hidden) in enumerate(shapes):
            if dtype == torch.float32 and hidden > 4096:
                hidden = 4096  # rows of more than 1024 16-byte vectors take the unfused path; 4096 fits
            xs = [x.view(rows, hidden) for x in _inputs(rows * hidden, dtype, 300 + j, world, dev)]
            g = torch.Generator(device=dev).manual_seed(77 + j)  # the same on every rank
            residual = torch.randn(rows, hidden, generator=g, device=dev).to(dtype)
            w_dtype = torch.float32 if j % 2 else dtype
            weight = (torch.rand(hidden, generator=g, device=dev) + 0.5).to(w_dtype)
            what = f"fused add_rmsnorm {dtype} {rows}x{hidden} weight {w_dtype}"
            out, r_out = ar.all_reduce_add_rmsnorm(xs[rank], residual, weight, 1e-6,
                                                   out=_poisoned(residual), residual_out=_poisoned(residual))
            # The unfused sequence: the custom all-reduce, then aiter.add_rmsnorm.
            total = ar.all_reduce(xs[rank])
            ref_out, ref_r = aiter.add_rmsnorm(total, residual, weight, 1e-6)
            ck.expect(torch.equal(r_out, ref_r), f"{what}: residual_out differs from all_reduce + add_rmsnorm")
            few_rows = rows < 2 * torch.cuda.get_device_properties(dev).multi_processor_count
            if few_rows:  # the same kernel shape as the norm's few-rows kernel: bitwise
                ck.expect(torch.equal(out, ref_out), f"{what}: out differs bitwise from all_reduce + add_rmsnorm "
                          f"({int((out != ref_out).sum())} elements)")
            ck.expect(bool(torch.allclose(out.float(), ref_out.float(), rtol=2 * _eps(dtype), atol=1e-3)),
                      f"{what}: out not close to all_reduce + add_rmsnorm")
            f64_out, f64_r, tol_out, tol_r = _norm_reference(xs, residual, weight, 1e-6)
            ck.expect(bool(((r_out.double() - f64_r).abs() <= tol_r).all()), f"{what}: residual_out vs float64")
            ck.expect(bool(((out.double() - f64_out).abs() <= tol_out).all()), f"{what}: out vs float64")
            ck.same_on_every_rank(out, what)
            # In place on the residual, and the quantizing op against its unfused sequence.
            res2 = residual.clone()
            ar.all_reduce_add_rmsnorm(xs[rank], res2, weight, 1e-6, residual_out=res2)
            ck.expect(torch.equal(res2, ref_r), f"{what}: in-place residual")
            for qdtype in ("float8_e4m3fn", "int8"):
                q, scale, r_q = ar.all_reduce_add_rmsnorm_quant(xs[rank], residual, weight, 1e-6, dtype=qdtype)
                q_ref, scale_ref, _ = aiter.add_rmsnorm_quant(total, residual, weight, 1e-6, dtype=qdtype)
                ck.expect(torch.equal(r_q, ref_r), f"{what} quant {qdtype}: residual_out")
                if few_rows:
                    ck.expect(torch.equal(scale, scale_ref) and torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8)),
                              f"{what} quant {qdtype}: differs bitwise from all_reduce + add_rmsnorm_quant")
                deq = q.float() * scale
                ck.expect(bool(((deq.double() - f64_out).abs() <= 0.07 * f64_out.abs().amax(-1, keepdim=True)).all()),
                          f"{what} quant {qdtype}: dequantized vs float64")


def check_graphs(ck, ar, rank, world, dev):
    """Captured once, replayed with new contents: one-shot, two-shot and the fused op."""
    import torch
    dtype = torch.bfloat16
    n_small, n_medium, rows, hidden = 3001, (1 << 20) + 1, 16, 4096
    x1 = torch.empty(n_small, dtype=dtype, device=dev)
    x2 = torch.empty(n_medium, dtype=dtype, device=dev)
    xf = torch.empty(rows, hidden, dtype=dtype, device=dev)
    residual = torch.randn(rows, hidden, device=dev).to(dtype)
    weight = torch.rand(hidden, device=dev).to(dtype) + 0.5
    o1, o2 = torch.empty_like(x1), torch.empty_like(x2)
    of, rf = torch.empty_like(xf), torch.empty_like(xf)
    for t in (x1, x2, xf):
        t.normal_()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm up (loads the kernels) outside the capture
        ar.all_reduce(x1, out=o1, algo="one_shot")
        ar.all_reduce(x2, out=o2, algo="two_shot")
        ar.all_reduce_add_rmsnorm(xf, residual, weight, 1e-6, out=of, residual_out=rf)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ar.all_reduce(x1, out=o1, algo="one_shot")
        ar.all_reduce(x2, out=o2, algo="two_shot")
        ar.all_reduce_add_rmsnorm(xf, residual, weight, 1e-6, out=of, residual_out=rf)
    for replay in range(3):
        seed = 500 + replay
        xs1 = _inputs(n_small, dtype, seed, world, dev)
        xs2 = _inputs(n_medium, dtype, seed + 50, world, dev)
        xsf = [x.view(rows, hidden) for x in _inputs(rows * hidden, dtype, seed + 90, world, dev)]
        x1.copy_(xs1[rank])
        x2.copy_(xs2[rank])
        xf.copy_(xsf[rank])
        for o in (o1, o2, of, rf):
            o.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ck.close_to_sum(o1, xs1, f"graph replay {replay} one-shot")
        ck.close_to_sum(o2, xs2, f"graph replay {replay} two-shot")
        ck.same_on_every_rank(o2, f"graph replay {replay} two-shot")
        f64_out, f64_r, tol_out, tol_r = _norm_reference(xsf, residual, weight, 1e-6)
        ck.expect(bool(((rf.double() - f64_r).abs() <= tol_r).all()), f"graph replay {replay} fused residual_out")
        ck.expect(bool(((of.double() - f64_out).abs() <= tol_out).all()), f"graph replay {replay} fused out")


def check_torch_op(ck, ar, rank, world, dev):
    import torch
    xs = [x.view(4, 1024) for x in _inputs(4096, torch.bfloat16, 900, world, dev)]
    residual = torch.zeros(4, 1024, dtype=torch.bfloat16, device=dev)
    weight = torch.ones(1024, dtype=torch.bfloat16, device=dev)
    out, r = torch.ops.aiter_dist.all_reduce_add_rmsnorm(xs[rank], residual, weight, 1e-6, ar.address)
    ck.close_to_sum(r, xs, "torch.ops.aiter_dist.all_reduce_add_rmsnorm residual_out")


def check_cupy(ck, ar, comm, rank, world, dev):
    """The same ops on CuPy arrays (their own stream handling, through DLPack)."""
    try:
        import cupy
    except ImportError:
        return
    import torch
    xs = _inputs(4099, torch.float32, 1200, world, dev)
    torch.cuda.synchronize()
    with cupy.cuda.Device(rank):
        x = cupy.asarray(xs[rank])
        for what, out in (("custom", ar.all_reduce(x)), ("comm", comm.all_reduce(x))):
            cupy.cuda.Device(rank).synchronize()
            ck.expect(isinstance(out, cupy.ndarray), f"cupy {what} all_reduce returns a CuPy array")
            ck.close_to_sum(torch.as_tensor(out, device=dev), xs, f"cupy {what} all_reduce", exact_sum=what == "custom")


def run_rank(rank, world, port, queue):
    """The body of one rank: every check, its failures sent back on `queue`."""
    ck = Checker(rank)
    try:
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                device_id=dev)
        from aiter.dist import Communicator, CustomAllReduce
        comm = Communicator.from_process_group(device=dev)
        ar = CustomAllReduce(comm, max_bytes=MAX_BYTES)
        for name, check in (("all_reduce", lambda: check_all_reduce(ck, ar, comm, rank, world, dev)),
                            ("signed_zeros", lambda: check_signed_zeros(ck, ar, rank, world, dev)),
                            ("gather_scatter", lambda: check_gather_scatter(ck, comm, rank, world, dev)),
                            ("fused", lambda: check_fused(ck, ar, rank, world, dev)),
                            ("graphs", lambda: check_graphs(ck, ar, rank, world, dev)),
                            ("torch_op", lambda: check_torch_op(ck, ar, rank, world, dev)),
                            ("cupy", lambda: check_cupy(ck, ar, comm, rank, world, dev))):
            before = len(ck.failures)
            check()
            torch.cuda.synchronize()
            if rank == 0:
                print(f"world {world}: {name}: {ck.count} checks so far, {len(ck.failures) - before} failed",
                      flush=True)
        ar.close()
        comm.close()
        dist.destroy_process_group()
    except Exception:
        ck.failures.append(f"rank {rank}: exception:\n{traceback.format_exc()}")
    queue.put((rank, ck.count, ck.failures[:50]))
    queue.close()
    queue.join_thread()  # the result is in the pipe before the process ends (put only queues it)
    os._exit(0)  # no teardown of NCCL/CUDA state at exit: a peer that failed must not hang this one
