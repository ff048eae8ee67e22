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
import pytest

from harness import rerun_gpu_tests_forced


@pytest.mark.gpu
def test_gpu_decode_tests_with_triton_forced():
    rerun_gpu_tests_forced("AITER_DECODE_KERNEL", "triton", "-k", "decode", "test_attention.py", "test_attention_split.py")
