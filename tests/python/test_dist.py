"""aiter.dist: the communicator, the custom all-reduce and the fused all-reduce +
add + RMSNorm.  On the CPU (CI): argument checks and a clear "no NCCL".  On a
machine with 2 or more GPUs (marked gpu): one process per GPU
(tests/python/dist_worker.py) for 2 and 4 ranks, every op against a float64
reference, bitwise identical across ranks, under CUDA-graph replay."""
import os
import queue as queue_module
import socket
import subprocess
import sys
import textwrap

import pytest

import aiter
from aiter.errors import InvalidArgumentError, NoDeviceError

HERE = os.path.dirname(os.path.abspath(__file__))


def _run_python(code, **env):
    """`code` in a fresh interpreter (the collective library is opened once a process)."""
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)


def test_no_nccl_is_a_clear_status():
    r = _run_python("""
        import aiter.dist
        from aiter.errors import NoDeviceError
        try:
            aiter.dist.unique_id()
        except NoDeviceError as e:
            print("NoDeviceError:", e)
        """, AITER_NCCL_LIBRARY="/nonexistent/libnccl.so.2")
    assert r.returncode == 0, r.stderr
    assert "NoDeviceError: aiter_comm_unique_id: no NCCL: dlopen(/nonexistent/libnccl.so.2) failed" in r.stdout


def test_communicator_checks_its_arguments():
    from aiter.dist import Communicator
    with pytest.raises(ValueError, match="128 bytes"):
        Communicator(b"short", 0, 2, 0)
    with pytest.raises(InvalidArgumentError, match="rank: expected 0..1"):
        Communicator(bytes(128), 2, 2, 0)
    with pytest.raises(InvalidArgumentError, match="world_size: expected 1..1024"):
        Communicator(bytes(128), 0, 0, 0)
    with pytest.raises(ValueError, match="device: expected a GPU"):
        Communicator(bytes(128), 0, 1, "cpu")


def test_no_gpu_is_a_clear_status():
    from aiter.dist import Communicator
    if _gpu_count() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(NoDeviceError):
        Communicator(bytes(128), 0, 1, 0)


def test_custom_all_reduce_needs_an_open_buffer():
    import numpy as np
    from aiter._call import Call
    from aiter._lib import ffi
    x = np.full(8, np.nan, np.float32)
    for symbol, args in (("aiter_custom_all_reduce", 2), ("aiter_custom_all_reduce_add_rmsnorm", 5)):
        c = Call(symbol, like=x)
        x_ = c.input(x, "x")
        extra = (0,) if symbol == "aiter_custom_all_reduce" else (1e-6,)
        with pytest.raises(InvalidArgumentError, match="ar: expected a custom all-reduce, got NULL"):
            c.run(*([x_.c] * args), *extra, ffi.NULL)
    assert np.isnan(x).all()


def _gpu_count():
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.gpu
@pytest.mark.parametrize("world", [2, 4])
def test_multi_gpu(world):
    if _gpu_count() < world:
        pytest.skip(f"needs {world} GPUs, found {_gpu_count()}")
    import multiprocessing as mp
    sys.path.insert(0, HERE)
    import dist_worker
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off
    ctx = mp.get_context("spawn")
    queue, port = ctx.Queue(), _free_port()
    procs = [ctx.Process(target=dist_worker.run_rank, args=(r, world, port, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results = []
    try:
        while len(results) < world:  # until every rank has reported, or one died without
            try:
                results.append(queue.get(timeout=2))
            except queue_module.Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                assert not dead, f"a rank died: exit codes {[p.exitcode for p in procs]}"
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    failures = [line for _, _, lines in results for line in lines]
    checks = sum(count for _, count, _ in results)
    print(f"{world} ranks: {checks} checks, {len(failures)} failed")
    assert not failures, "\n".join(failures[:40])
    assert checks > 100 * world
