"""The MoE layer of examples/python/moe_layer.py (gemm_a16w16 router,
topk_softmax, fused_moe in bf16 and fused_moe_fp8 with per-channel fp8 experts)
against its float64 NumPy reference, at a small size on the CPU and with 64
experts, top-8, on the GPU."""
import os
import sys

import pytest

pytest.importorskip("torch")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import moe_layer  # noqa: E402


def test_moe_layer_matches_float64_reference(device, rng):
    size = dict(tokens=13, experts=8, topk=2, hidden=128, inter=64) if device == "cpu" else \
        dict(tokens=100, experts=64, topk=8, hidden=1024, inter=256)
    errors = moe_layer.run(device, seed=int(rng.integers(1 << 30)), **size)
    assert errors["bf16"] < 1.5e-2, errors  # bf16 intermediate and expert outputs
    assert errors["fp8"] < 2e-2, errors  # plus fp8 ties the reference may round the other way
