"""Matrix products with the weight stored as W[N, K] (the layout of nn.Linear):
``out[M, N] = a[M, K] @ w[N, K].T (+ bias[N])``; the batched forms take a
leading batch dim B on ``a``, ``w`` and ``out``.

``a``, ``w`` and ``out`` have unit stride along their rows; row (and batch)
strides may be larger than the rows (slices of bigger arrays).  When ``out`` is
given, its dtype is the output dtype and ``out_dtype`` is not used.  Each op
has several kernel variants; the library picks one per shape (tuned tables,
else a heuristic).  The wrappers come from the op table (``aiter.spec``).
"""
from ._from_spec import table_op

gemm_a16w16 = table_op("gemm_a16w16", """
    ``a @ w.T + bias`` with fp32 accumulation, rounded once to ``out_dtype``.

    ``a`` and ``w``: float32, float16 or bfloat16 (the same); ``out_dtype``: float32,
    float16 or bfloat16, ``a``'s dtype by default; ``bias``: None or [N] in float32
    or ``out_dtype``.""")

gemm_a8w8 = table_op("gemm_a8w8", """``(a @ w.T) * a_scale * w_scale + bias`` for 8-bit ``a`` and ``w``.

    ``a`` and ``w``: both int8 (exact integer accumulation) or both the same fp8
    format (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2; fp32 accumulation).
    ``a_scale``: float32 [M, 1] (per token) or [1] / [1, 1] (per tensor);
    ``w_scale``: float32 [1, N] (per channel) or [1] / [1, 1].  The scaling and the
    bias (None or [N] in float32 or ``out_dtype``) are applied in fp32, then the
    result is rounded once to ``out_dtype`` (bfloat16, float16 or float32).""")

gemm_a8w8_blockscale = table_op("gemm_a8w8_blockscale", """DeepSeek-V3 style block-scaled fp8 product.

    ``a`` [M, K] and ``w`` [N, K]: both float8_e4m3fn or both float8_e4m3fnuz.
    ``a_scale``: float32 [M, ceil(K / 128)], one per token and 128-wide K group;
    ``w_scale``: float32 [ceil(N / 128), ceil(K / 128)], one per 128 x 128 block
    of ``w``.  ``out[m, n]`` is the sum over K groups g of the group's dot product
    times ``a_scale[m, g] * w_scale[n // 128, g]``, computed in fp32 and rounded
    once to ``out_dtype`` (bfloat16, float16 or float32).""")

batched_gemm_a16w16 = table_op("batched_gemm_a16w16", """
    ``out[b] = a[b] @ w[b].T + bias`` for ``a`` [B, M, K], ``w`` [B, N, K]:
    the dtypes of ``gemm_a16w16``; ``bias`` None or [N], shared by every b.""")

batched_gemm_a8w8 = table_op("batched_gemm_a8w8", """
    ``gemm_a8w8`` on every b of ``a`` [B, M, K] and ``w`` [B, N, K] (int8 or
    the same fp8 format).  ``a_scale``: float32 [B, M, 1] (per token) or [1] /
    [1, 1] (per tensor); ``w_scale``: float32 [B, 1, N] (per channel) or [1] /
    [1, 1]; ``bias``: None or [N], shared by every b.""")
