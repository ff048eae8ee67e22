"""The Triton MLA decode kernel (kernels/triton/mla.py: the CDNA targets'
matrix-core MLA decode, built for sm_90a too) on the GPU: every GPU test of
test_mla.py (float64 references; bf16 and fp8 caches, page sizes, several new
tokens, splits and their combine, the log-sum-exp output, bad block ids)
rerun with AITER_MLA_KERNEL=triton.  The variable is read once a process, so
the forced run is a child pytest; there, a build without the Triton MLA
kernels fails every call that fits them instead of testing another kernel.
Calls the kernel does not take (f16 queries, fp8 formats this target's build
lacks, unaligned tensors) run their usual kernel in the child too."""
import pytest

from harness import rerun_gpu_tests_forced


@pytest.mark.gpu
def test_gpu_mla_tests_with_triton_forced():
    rerun_gpu_tests_forced("AITER_MLA_KERNEL", "triton", "test_mla.py")
