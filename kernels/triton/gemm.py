"""The GEMM family in Triton: the AMD targets' matrix-core path (MFMA on CDNA,
WMMA on RDNA 3/4), compiled ahead of time by build.py, never at run time.

One kernel serves gemm_a16w16, gemm_a8w8 (int8, fp8), gemm_a8w8_blockscale and
their batched forms, with the arguments of libaiter/ops/gemm.hpp's GemmArgs:
    out[b][m, n] = (sum_k a[b][m, k] * w[b][n, k]) * a_scale * w_scale + bias[n]
The output dtype, the bias and the scale steps are run-time values (a branch in
the epilogue), so one code object per input dtype and tile covers every call;
the tile, the input dtype and the scaling kind are compile-time constants.
Grid: (tiles of M x N, batch).
"""
import triton
import triton.language as tl

OUT_F32, OUT_F16, OUT_BF16 = 0, 1, 2  # kernels/gemm/gemm_params.h's GemmOutKind

# Its run-time arguments, in order, and the tiles built: gemm_aot.py.


@triton.jit
def _tile_of(pid, m, n, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr):
    """Tiles in groups of GROUP_M rows, so neighbouring blocks share W tiles in L2."""
    grid_m = tl.cdiv(m, BM)
    grid_n = tl.cdiv(n, BN)
    in_group = GROUP_M * grid_n
    first_m = (pid // in_group) * GROUP_M
    rows = min(grid_m - first_m, GROUP_M)
    return first_m + (pid % in_group) % rows, (pid % in_group) // rows


@triton.jit
def _store(out, offset, rm, rn, ldo, m, n, value, out_kind):
    """out[offset + rm * ldo + rn] in the output dtype: `out` is typed fp32, so
    it is cast to the output's element type before any offset is added."""
    at = offset + rm.to(tl.int64)[:, None] * ldo + rn[None, :]
    inside = (rm < m)[:, None] & (rn < n)[None, :]
    if out_kind == 0:
        tl.store(out + at, value, mask=inside)
    elif out_kind == 1:
        tl.store(out.to(tl.pointer_type(tl.float16)) + at, value.to(tl.float16), mask=inside)
    else:
        tl.store(out.to(tl.pointer_type(tl.bfloat16)) + at, value.to(tl.bfloat16), mask=inside)


@triton.jit
def gemm_kernel(a, w, out, bias, a_scale, w_scale, m, n, k, lda, ldw, ldo,
                a_batch, w_batch, out_batch, a_scale_batch, w_scale_batch,
                out_kind, has_bias, bias_f32, a_scale_step, w_scale_step, kgroups,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                SCALED: tl.constexpr, BLOCK_SCALED: tl.constexpr, INT8: tl.constexpr):
    pm, pn = _tile_of(tl.program_id(0), m, n, BM, BN, GROUP_M)
    b = tl.program_id(1).to(tl.int64)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_rows = a + b * a_batch + rm.to(tl.int64)[:, None] * lda + rk[None, :]
    w_rows = w + b * w_batch + rn.to(tl.int64)[:, None] * ldw + rk[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.int32 if INT8 else tl.float32)
    for step in range(0, tl.cdiv(k, BK)):
        k_left = k - step * BK
        x = tl.load(a_rows, mask=(rm < m)[:, None] & (rk < k_left)[None, :], other=0.0)
        y = tl.load(w_rows, mask=(rn < n)[:, None] & (rk < k_left)[None, :], other=0.0)
        if BLOCK_SCALED:  # BK == 128: one K group a step, scaled before it is summed
            sa = tl.load(a_scale + b * a_scale_batch + rm * kgroups + step, mask=rm < m, other=0.0)
            sw = tl.load(w_scale + b * w_scale_batch + (rn // 128) * kgroups + step, mask=rn < n, other=0.0)
            acc += tl.dot(x, tl.trans(y)) * sa[:, None] * sw[None, :]
        else:
            acc = tl.dot(x, tl.trans(y), acc, out_dtype=acc.dtype)
        a_rows += BK
        w_rows += BK
    value = acc.to(tl.float32)
    if SCALED:
        sa = tl.load(a_scale + b * a_scale_batch + rm * a_scale_step, mask=rm < m, other=0.0)
        sw = tl.load(w_scale + b * w_scale_batch + rn * w_scale_step, mask=rn < n, other=0.0)
        value = value * sa[:, None] * sw[None, :]
    if has_bias != 0:
        if bias_f32 != 0:
            value += tl.load(bias + rn, mask=rn < n, other=0.0)[None, :]
        elif out_kind == 1:
            value += tl.load(bias.to(tl.pointer_type(tl.float16)) + rn, mask=rn < n, other=0.0).to(tl.float32)[None, :]
        else:
            value += tl.load(bias.to(tl.pointer_type(tl.bfloat16)) + rn, mask=rn < n, other=0.0).to(tl.float32)[None, :]
    _store(out, b * out_batch, rm, rn, ldo, m, n, value, out_kind)
