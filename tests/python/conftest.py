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
