"""The Triton MLA decode kernel (kernels/triton/mla.py: the CDNA targets'
matrix-core MLA decode, built for sm_90a too) on the GPU: every GPU test of
test_mla.py (float64 references; bf16 and fp8 caches, page sizes, several new
tokens, splits and their combine, the log-sum-exp output, bad block ids)
rerun with AITER_MLA_KERNEL=triton.  The variable is read once a process, so
the forced run is a child pytest; there, a build without the Triton MLA
kernels fails every call that fits them instead of testing another kernel.
Calls the kernel does not take (f16 queries, fp8 formats this target's build
lacks, unaligned tensors) run their usual kernel in the child too."""
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
def test_gpu_mla_tests_with_triton_forced():
    if not _cuda_available():
        pytest.skip("no CUDA GPU")
    env = dict(os.environ, AITER_MLA_KERNEL="triton")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                          os.path.join(HERE, "test_mla.py")],
                         capture_output=True, text=True, env=env, cwd=HERE, timeout=1800)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
