"""The DeepSeek-V3-shaped MLA decode step of examples/python/mla_decode_step.py
(absorbed projections through libaiter's GEMMs, mla_decode over the paged
latent cache) against its float64 unabsorbed reference, at a small size on the
CPU and at DeepSeek-V3's hidden size on the GPU."""
import os
import sys

import pytest

pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import mla_decode_step  # noqa: E402


def test_decode_step_matches_unabsorbed_reference(device):
    size = dict(batch=3, heads=4, hidden=256, context=70) if device == "cpu" else \
        dict(batch=4, heads=16, hidden=7168, context=1000)
    assert mla_decode_step.run(device, **size) < 2e-2
