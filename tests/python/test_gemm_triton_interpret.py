"""The Triton GEMM kernel's source (kernels/triton/gemm.py) run by Triton's CPU
interpreter, against float64 NumPy: its masks (ragged M, N and K), output kinds,
bias, per-token / per-channel scales, block scales and batch strides, without a
GPU.  Needs triton and torch (skips without them: CI and Debian have neither).
The interpreter has no bf16 or fp8 arithmetic, so fp16 stands for the 16-bit
inputs and for the block-scaled path; the compiled code objects are tested on
the GPU by test_gemm_triton.py."""
import os

import numpy as np

from triton_interpret import run_or_collect

if __name__ != "__main__":  # under pytest: the cases run in a child process (see interpreted_results)
    import pytest
    pytest.importorskip("torch")
    pytest.importorskip("triton")
else:
    import torch
    import triton

KERNEL = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "triton", "gemm.py")


def as_fp32_pointer(t):
    """The tensor's memory as an fp32 tensor: the compiled kernel types `out` and
    `bias` as *fp32 whatever their dtype (triton_gemm.cpp passes raw pointers), so
    the interpreted kernel must see them typed so too, or a 16-bit output's
    addressing would be tested with a pointer the compiled code never gets."""
    if t.dtype == torch.float32:
        return t
    storage = t.untyped_storage()
    return torch.empty(0, dtype=torch.float32).set_(storage, 0, (storage.nbytes() // 4,))


def launch(gemm, a, w, out, bias=None, a_scale=None, w_scale=None, tile=(64, 64, 32), scaled=False,
           block_scaled=False):
    """The arguments libaiter/gpu/triton_gemm.cpp passes, from torch tensors."""
    bm, bn, bk = tile
    out_kind = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}[out.dtype]
    m, k = a.shape[-2:]
    n = w.shape[-2]
    batch = a.shape[0] if a.dim() == 3 else 1
    unused = torch.zeros(1, dtype=torch.float32)
    step = lambda s: int(s is not None and s.numel() > 1 and not block_scaled)  # noqa: E731
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), batch)
    gemm.gemm_kernel[grid](
        a, w, as_fp32_pointer(out), unused if bias is None else as_fp32_pointer(bias), unused if a_scale is None else a_scale,
        unused if w_scale is None else w_scale, m, n, k, a.stride(-2), w.stride(-2), out.stride(-2),
        a.stride(0) if a.dim() == 3 else 0, w.stride(0) if w.dim() == 3 and w.stride(0) else 0,
        out.stride(0) if out.dim() == 3 else 0,
        a_scale.stride(0) if a_scale is not None and a_scale.dim() == 3 else 0,
        w_scale.stride(0) if w_scale is not None and w_scale.dim() == 3 else 0,
        out_kind, int(bias is not None), int(bias is not None and bias.dtype == torch.float32),
        step(a_scale), step(w_scale), (k + 127) // 128,
        BM=bm, BN=bn, BK=bk, GROUP_M=8, SCALED=scaled, BLOCK_SCALED=block_scaled, INT8=a.dtype == torch.int8)


def f64(t):
    return t.double().numpy()


def poisoned(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype)


def assert_close(out, ref, rtol, atol):
    got = f64(out)
    assert not np.isnan(got).any(), "elements unwritten"
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def sixteen_bit(gemm, out_dtype, bias_dtype):
    g = torch.Generator().manual_seed(1)
    m, n, k = 70, 33, 80  # two M tiles, a ragged N tile, K past a 32-wide step
    a, w = torch.randn(m, k, generator=g).half(), torch.randn(n, k, generator=g).half()
    bias = None if bias_dtype is None else torch.randn(n, generator=g).to(bias_dtype)
    out = poisoned((m, n), out_dtype)
    launch(gemm, a, w, out, bias)
    ref = f64(a) @ f64(w).T + (0 if bias is None else f64(bias))
    rtol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[out_dtype]
    assert_close(out, ref, rtol, rtol * np.sqrt(k))


def int8_scaled(gemm, per_token):
    g = torch.Generator().manual_seed(2)
    m, n, k = 37, 70, 160
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8, generator=g)
    w = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=g)
    a_scale = torch.rand(m if per_token else 1, generator=g) + 0.5
    w_scale = torch.rand(n if per_token else 1, generator=g) + 0.5
    out = poisoned((m, n), torch.float32)
    launch(gemm, a, w, out, None, a_scale, w_scale, tile=(32, 64, 64), scaled=True)
    ref = (f64(a) @ f64(w).T) * f64(a_scale).reshape(-1, 1) * f64(w_scale).reshape(1, -1)
    assert_close(out, ref, 1e-6, 1e-3)  # exact int32 sums, one fp32 scaling


def block_scaled(gemm):
    """One scale per token and 128-wide K group, one per 128 x 128 block of W,
    applied to each group's sum (fp16 inputs stand for fp8)."""
    g = torch.Generator().manual_seed(3)
    m, n, k = 20, 150, 300  # 3 K groups, the last partial; 2 W row blocks
    a, w = torch.randn(m, k, generator=g).half(), torch.randn(n, k, generator=g).half()
    groups = -(-k // 128)
    a_scale = torch.rand(m, groups, generator=g) + 0.5
    w_scale = torch.rand(-(-n // 128), groups, generator=g) + 0.5
    out = poisoned((m, n), torch.float32)
    launch(gemm, a, w, out, None, a_scale, w_scale, tile=(32, 64, 128), block_scaled=True)
    ref = np.zeros((m, n))
    for q in range(groups):
        part = f64(a)[:, q * 128:(q + 1) * 128] @ f64(w)[:, q * 128:(q + 1) * 128].T
        ref += part * f64(a_scale)[:, q:q + 1] * np.repeat(f64(w_scale)[:, q], 128)[:n][None, :]
    assert_close(out, ref, 1e-5, 1e-4 * np.sqrt(k))


def batched(gemm, shared_weight):
    g = torch.Generator().manual_seed(4)
    b, m, n, k = 3, 17, 40, 48
    a = torch.randn(b, m, k, generator=g).half()
    w = torch.randn(n, k, generator=g).half()
    w_batch = w.expand(b, n, k) if shared_weight else torch.randn(b, n, k, generator=g).half()
    out = poisoned((b, m, n), torch.float32)
    launch(gemm, a, w_batch, out, tile=(16, 32, 32))
    ref = np.einsum("bmk,bnk->bmn", f64(a), f64(w_batch))
    assert_close(out, ref, 1e-5, 1e-5 * np.sqrt(k))


def cases():
    return {
        "f16 in, fp32 out, fp32 bias": lambda g: sixteen_bit(g, torch.float32, torch.float32),
        "f16 in, f16 out, f16 bias": lambda g: sixteen_bit(g, torch.float16, torch.float16),
        "f16 in, bf16 out": lambda g: sixteen_bit(g, torch.bfloat16, None),
        "int8 per token": lambda g: int8_scaled(g, True),
        "int8 per tensor": lambda g: int8_scaled(g, False),
        "block scaled": block_scaled,
        "batched": lambda g: batched(g, False),
        "batched, shared weight": lambda g: batched(g, True),
    }


CASES = ["f16 in, fp32 out, fp32 bias", "f16 in, f16 out, f16 bias", "f16 in, bf16 out", "int8 per token",
         "int8 per tensor", "block scaled", "batched", "batched, shared weight"]


run_or_collect(globals(), KERNEL, "aiter_triton_gemm_interpreted", cases, CASES)
