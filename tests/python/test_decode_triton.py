"""The Triton paged decode kernel (kernels/triton/decode.py: AMD's matrix-core
decode, built for sm_90a too) on the GPU: every GPU decode test of
test_attention.py and test_attention_split.py (float64 references; caches of
q's dtype and fp8, pages of 1 to 64 positions, GQA groups of 1 to 16, several
new tokens, window, soft-cap, split-KV and its merge, CUDA-graph replay, bad
block ids) rerun with AITER_DECODE_KERNEL=triton.  The variable is read once a
process, so the forced run is a child pytest; there, a build without the
Triton decode kernels fails every 16-bit call instead of testing another
kernel.  Calls the kernel does not take (fp32 queries, fp8 formats this
target's build lacks) run their usual kernel in the child too."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _cuda_available():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
def test_gpu_decode_tests_with_triton_forced():
    if not _cuda_available():
        pytest.skip("no CUDA GPU")
    env = dict(os.environ, AITER_DECODE_KERNEL="triton")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-k", "decode", "-p", "no:cacheprovider",
                          os.path.join(HERE, "test_attention.py"), os.path.join(HERE, "test_attention_split.py")],
                         capture_output=True, text=True, env=env, cwd=HERE, timeout=1800)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
