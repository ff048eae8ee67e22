#!/usr/bin/env python3
"""libaiter's all-reduce and fused all-reduce + add + RMSNorm against NCCL, in one run.

usage: python3 benchmarks/bench_allreduce.py --world 2 [--world 4] [--fused-forced] [--json results.json]

One process per GPU (multiprocessing spawn).  Every op is captured in a CUDA
graph of `--calls` calls back to back, and the graph's replays are timed with
CUDA events (no Python or launch overhead; the same for every op); a case's time
is the slowest rank's median over `--rounds` replays, per call.  Peers, in the
same run: NCCL through torch.distributed.all_reduce (in the graph as well), and
for the fused op NCCL all-reduce followed by libaiter's add_rmsnorm.
Columns: message bytes, µs of NCCL and of ours (auto: one-shot, two-shot or NCCL
by size), ours over NCCL (< 1: ours faster), and the bus bandwidth
bytes * 2 (W - 1) / W / time.  One-shot (the push kernel up to its 2 MiB, the
pull kernel past it) and two-shot forced are listed where they fit the buffers,
to show where each wins.  --fused-forced times the fused op again with each of
its kernels forced (AITER_AR_FUSED=one_shot / two_shot, in fresh processes).
NCCL_NVLS_ENABLE=0 is set: NVLink multicast stays off.
"""
import argparse
import json
import os
import socket
import statistics
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

SIZES = [1 << k for k in range(10, 30, 1)]  # 1 KB .. 512 MB
SIZES = [s for s in SIZES if s <= (256 << 20)]
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128]
HIDDEN = 8192
MAX_BYTES = 16 << 20


def time_graph(fn, calls, rounds):
    """Per-call µs of `fn` captured `calls` times in one graph (median of replays)."""
    import torch
    import torch.distributed as dist
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        run = graph.replay
    except RuntimeError as e:  # timed eagerly instead, and said so
        print(f"graph capture failed ({str(e)[:80]}); timing eagerly", flush=True)
        torch.cuda.synchronize()

        def run():
            for _ in range(calls):
                fn()
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / calls)
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank's
    del graph
    return float(t.item())


def bench_all_reduce(ar, world, args):
    import torch
    import torch.distributed as dist
    rows = []
    for size in SIZES:
        n = size // 2
        x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        out = torch.empty_like(x)
        y = x.clone()
        calls = args.calls if size <= (4 << 20) else max(2, args.calls // 10)
        row = {"bytes": size,
               "nccl": time_graph(lambda: dist.all_reduce(y), calls, args.rounds),
               "ours": time_graph(lambda: ar.all_reduce(x, out=out), calls, args.rounds)}
        if size <= ar.max_bytes:
            row["one_shot"] = time_graph(lambda: ar.all_reduce(x, out=out, algo="one_shot"), calls, args.rounds)
            row["two_shot"] = time_graph(lambda: ar.all_reduce(x, out=out, algo="two_shot"), calls, args.rounds)
        rows.append(row)
        del x, out, y
    return rows


def bench_fused(ar, world, args):
    import torch
    import torch.distributed as dist

    import aiter
    rows = []
    for tokens in TOKENS:
        x = torch.randn(tokens, HIDDEN, device="cuda", dtype=torch.bfloat16)
        residual = torch.randn_like(x)
        weight = torch.rand(HIDDEN, device="cuda", dtype=torch.bfloat16) + 0.5
        out, r_out, y = torch.empty_like(x), torch.empty_like(x), x.clone()

        def nccl_then_norm():
            dist.all_reduce(y)
            aiter.add_rmsnorm(y, residual, weight, 1e-6, out=out, residual_out=r_out)

        def custom_then_norm():
            ar.all_reduce(x, out=y)
            aiter.add_rmsnorm(y, residual, weight, 1e-6, out=out, residual_out=r_out)

        rows.append({"tokens": tokens, "bytes": x.numel() * 2,
                     "nccl_norm": time_graph(nccl_then_norm, args.calls, args.rounds),
                     "custom_norm": time_graph(custom_then_norm, args.calls, args.rounds),
                     "fused": time_graph(lambda: ar.all_reduce_add_rmsnorm(x, residual, weight, 1e-6, out=out,
                                                                           residual_out=r_out),
                                         args.calls, args.rounds)})
    return rows


def bench_fused_only(ar, world, args):
    """The fused op alone (its kernel forced by AITER_AR_FUSED in this process)."""
    import torch
    rows = []
    for tokens in TOKENS:
        x = torch.randn(tokens, HIDDEN, device="cuda", dtype=torch.bfloat16)
        residual, out, r_out = torch.randn_like(x), torch.empty_like(x), torch.empty_like(x)
        weight = torch.rand(HIDDEN, device="cuda", dtype=torch.bfloat16) + 0.5
        rows.append({"tokens": tokens, "fused": time_graph(
            lambda: ar.all_reduce_add_rmsnorm(x, residual, weight, 1e-6, out=out, residual_out=r_out),
            args.calls, args.rounds)})
    return rows


def run_rank(rank, world, port, args, queue, fused_only=False):
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    from aiter.dist import Communicator, CustomAllReduce
    comm = Communicator.from_process_group()
    ar = CustomAllReduce(comm, max_bytes=MAX_BYTES)
    result = {"world": world, "gpu": torch.cuda.get_device_name(rank)}
    if fused_only:
        result["fused_forced"] = bench_fused_only(ar, world, args)
    else:
        result["all_reduce"] = bench_all_reduce(ar, world, args)
        result["fused"] = bench_fused(ar, world, args)
    if rank == 0:
        queue.put(result)
        queue.close()
        queue.join_thread()  # in the pipe before os._exit
    dist.barrier()
    torch.cuda.synchronize()
    os._exit(0)


def print_tables(r):
    w = r["world"]
    print(f"\n## {w} x {r['gpu']}: all-reduce, bf16 (µs a call, CUDA graphs; busbw GB/s)")
    print("| bytes | NCCL | ours (auto) | ours / NCCL | one-shot | two-shot | busbw NCCL | busbw ours |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in r["all_reduce"]:
        bus = lambda t: row["bytes"] * 2 * (w - 1) / w / (t * 1e-6) / 1e9
        fmt = lambda k: f"{row[k]:.2f}" if k in row else "-"
        print(f"| {row['bytes']} | {row['nccl']:.2f} | {row['ours']:.2f} | {row['ours'] / row['nccl']:.2f} | "
              f"{fmt('one_shot')} | {fmt('two_shot')} | {bus(row['nccl']):.1f} | {bus(row['ours']):.1f} |")
    print(f"\n## {w} x {r['gpu']}: all-reduce + add + RMSNorm, hidden {HIDDEN} bf16 (µs a call, CUDA graphs)")
    print("| tokens | NCCL + add_rmsnorm | custom all-reduce + add_rmsnorm | fused | fused / NCCL+norm |")
    print("|---:|---:|---:|---:|---:|")
    for row in r["fused"]:
        print(f"| {row['tokens']} | {row['nccl_norm']:.2f} | {row['custom_norm']:.2f} | {row['fused']:.2f} | "
              f"{row['fused'] / row['nccl_norm']:.2f} |")
    sys.stdout.flush()


def print_forced(world, gpu, forced):
    """forced: {algo: rows} of bench_fused_only."""
    algos = list(forced)
    print(f"\n## {world} x {gpu}: the fused op's kernels forced (AITER_AR_FUSED), hidden {HIDDEN} bf16 (µs a call)")
    print("| tokens | " + " | ".join(algos) + " |")
    print("|---:|" + "---:|" * len(algos))
    for i, tokens in enumerate(TOKENS):
        print(f"| {tokens} | " + " | ".join(f"{forced[a][i]['fused']:.2f}" for a in algos) + " |")
    sys.stdout.flush()


def run_world(world, args, fused_only=False):
    """Rank 0's result of one process per GPU, or None once a rank has died."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [ctx.Process(target=run_rank, args=(r, world, port, args, queue, fused_only)) for r in range(world)]
    for p in procs:
        p.start()
    result = wait_for_result(queue, procs)
    for p in procs:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
    if result is None:
        print(f"world {world}: a rank died (exit codes {[p.exitcode for p in procs]}); no table")
    return result


def wait_for_result(queue, procs):
    """Rank 0's result, or None once a rank has died without it."""
    import queue as queues
    while True:
        try:
            return queue.get(timeout=2)
        except queues.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--world", type=int, action="append", help="ranks (GPUs); repeatable")
    parser.add_argument("--calls", type=int, default=50, help="calls captured in one graph")
    parser.add_argument("--rounds", type=int, default=10, help="timed replays")
    parser.add_argument("--fused-forced", action="store_true",
                        help="also time the fused op with each of its kernels forced")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    results = []
    for world in args.world or [2]:
        result = run_world(world, args)
        if result is None:
            continue
        print_tables(result)
        if args.fused_forced:
            forced = {}
            for algo in ("one_shot", "two_shot"):
                os.environ["AITER_AR_FUSED"] = algo  # read by the spawned ranks' library
                r = run_world(world, args, fused_only=True)
                if r is not None:
                    forced[algo] = r["fused_forced"]
            os.environ.pop("AITER_AR_FUSED", None)
            if forced:
                print_forced(world, result["gpu"], forced)
                result["fused_forced"] = forced
        results.append(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
