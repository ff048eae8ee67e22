"""The Triton paged-prefill kernel (kernels/triton/paged_prefill.py: AMD's
matrix-core prefill over a paged cache, built for sm_90a too) on the GPU: every
GPU test of test_attention_paged_prefill.py (float64 references; pages of 1,
16 and 64 positions, odd and empty lengths, GQA 1/4/8/16, head dims 64 and
128, causal or not, window, soft-cap, lse, long sequences, strided q and out,
bad indices, CUDA-graph replay) rerun with AITER_PAGED_PREFILL_KERNEL=triton
in a child pytest; there, a build without the Triton paged-prefill kernels
fails every call that fits them instead of testing another kernel.  Calls the
kernel does not take (fp32 q, fp8 caches) run their usual kernel in the child."""
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
def test_gpu_paged_prefill_tests_with_triton_forced():
    if not _cuda_available():
        pytest.skip("no CUDA GPU")
    env = dict(os.environ, AITER_PAGED_PREFILL_KERNEL="triton")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                          "-k", "not portable_kernel_on_nvidia", os.path.join(HERE, "test_attention_paged_prefill.py")],
                         capture_output=True, text=True, env=env, cwd=HERE, timeout=1800)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary, summary
