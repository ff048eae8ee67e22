"""``aiter.matmul`` and ``aiter.linear`` over the a16w16 GEMMs (weights stored
[N, K], as nn.Linear keeps them)."""
from ..errors import InvalidArgumentError
from ..ops.gemm import batched_gemm_a16w16, gemm_a16w16
from ._arrays import check_array, compact, swap_last_two


def matmul(a, b, *, out_dtype=None):
    """``a @ b`` for ``a`` [M, K] and ``b`` [K, N], or batched [B, M, K] @ [B, K, N];
    float32, float16 or bfloat16, fp32 accumulation.  The library's GEMM reads
    the weight as [N, K], so ``b`` is copied transposed on each call: for a
    fixed weight, keep it as [N, K] and call :func:`linear`."""
    check_array(a, "matmul", "a")
    check_array(b, "matmul", "b")
    if a.ndim != b.ndim or a.ndim not in (2, 3):
        raise InvalidArgumentError(f"aiter.matmul: expected a and b both 2-dim or both 3-dim, got {a.ndim} and "
                                   f"{b.ndim} dims")
    gemm = gemm_a16w16 if a.ndim == 2 else batched_gemm_a16w16
    return gemm(compact(a), swap_last_two(b), out_dtype=out_dtype)


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` (``torch.nn.functional.linear``): ``x`` [..., K],
    ``weight`` [N, K], ``bias`` None or [N]; returns [..., N] in ``x``'s dtype."""
    check_array(x, "linear", "x")
    check_array(weight, "linear", "weight")
    if x.ndim < 1:
        raise InvalidArgumentError("aiter.linear: x: expected at least 1 dim")
    rows = compact(x).reshape(-1, x.shape[-1])
    out = gemm_a16w16(rows, weight, bias)
    return out.reshape(tuple(x.shape[:-1]) + (weight.shape[0],))
