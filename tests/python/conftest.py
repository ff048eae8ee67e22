import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # harness.py


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA/HIP GPU (select with -m gpu)")


@pytest.fixture
def rng(request):
    """A fresh generator per test; its seed is printed when the test fails."""
    seed = int.from_bytes(os.urandom(4), "little")
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
