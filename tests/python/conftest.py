import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # harness.py
# JAX takes 75% of a GPU's memory at its first use unless told otherwise: the GPU
# suite runs in several processes on one GPU (tools/gpu_sanitizer.sh shards), so
# JAX allocates as it goes, like PyTorch's tests beside it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA/HIP GPU (select with -m gpu)")


def pytest_collection_modifyitems(config, items):
    """AITER_TEST_SHARD=i/n keeps every n-th collected test from the i-th: n
    processes, each its own direct child of a tool such as compute-sanitizer, share
    a suite (tools/gpu_sanitizer.sh), with no doubt about which processes it followed."""
    shard = os.environ.get("AITER_TEST_SHARD")
    if not shard:
        return
    index, count = (int(part) for part in shard.split("/"))
    kept = items[index::count]
    kept_ids = set(map(id, kept))
    config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept_ids])
    items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Without ml_dtypes (Debian has none), NumPy has no bfloat16/fp8 arrays: a test
    that stops on aiter's "NumPy needs the ml_dtypes package" error is reported as
    skipped, with that message.  With ml_dtypes installed nothing changes, and any
    other failure still fails."""
    outcome = yield
    report = outcome.get_result()
    import harness
    if harness.ml_dtypes is not None or call.when != "call" or call.excinfo is None:
        return
    from aiter.errors import UnsupportedDtypeError
    if call.excinfo.errisinstance(UnsupportedDtypeError) and "ml_dtypes" in str(call.excinfo.value):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")


@pytest.fixture
def rng(request):
    """A fresh generator per test; its seed is printed when the test fails, and
    AITER_TEST_SEED=<seed> replays it."""
    seed = int(os.environ.get("AITER_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"random seed: {seed}")
    return np.random.default_rng(seed)


def _cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request):
    """Runs a test once on the CPU backend and once on a CUDA GPU (skipped without
    one; `pytest -m gpu` selects the GPU runs).  Move inputs with harness.to_device."""
    if request.param == "cuda" and not _cuda_available():
        pytest.skip("no CUDA GPU")
    return request.param
