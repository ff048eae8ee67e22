"""The Triton paged-prefill kernel (kernels/triton/paged_prefill.py: AMD's
matrix-core prefill over a paged cache, built for sm_90a too) on the GPU: every
GPU test of test_attention_paged_prefill.py (float64 references; pages of 1,
16 and 64 positions, odd and empty lengths, GQA 1/4/8/16, head dims 64 and
128, causal or not, window, soft-cap, lse, long sequences, strided q and out,
bad indices, CUDA-graph replay) rerun with AITER_PAGED_PREFILL_KERNEL=triton
in a child pytest; there, a build without the Triton paged-prefill kernels
fails every call that fits them instead of testing another kernel.  Calls the
kernel does not take (fp32 q, fp8 caches) run their usual kernel in the child."""
import pytest

from harness import rerun_gpu_tests_forced


@pytest.mark.gpu
def test_gpu_paged_prefill_tests_with_triton_forced():
    rerun_gpu_tests_forced("AITER_PAGED_PREFILL_KERNEL", "triton", "-k", "not portable_kernel_on_nvidia",
                           "test_attention_paged_prefill.py")
