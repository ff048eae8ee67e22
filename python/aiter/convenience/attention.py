"""``aiter.attention``: scaled dot-product attention in SDPA's [B, H, S, D]
layout over libaiter's prefill attention (packed sequences)."""
from ..errors import InvalidArgumentError
from ..ops.attention import prefill_attention
from ._arrays import arange_int32, check_array, swap_dims_1_2


def attention(q, k, v, causal=False, attn_mask=None, scale=None):
    """``softmax(q @ k.T * scale) @ v`` per batch and head, like
    ``torch.nn.functional.scaled_dot_product_attention``: q [B, Hq, Sq, D],
    k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] (Hq a multiple of Hkv: GQA is built
    in; D 64, 128 or 256, or 192 with Dv 128); returns [B, Hq, Sq, Dv].
    ``scale`` None means 1/sqrt(D).  ``causal`` masks keys after the query
    (Sq == Sk, where SDPA's top-left and libaiter's bottom-right alignments
    agree).  Only the causal mask is built in: ``attn_mask`` must be None.
    The inputs are copied to the packed [B*S, H, D] layout the kernel reads."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        check_array(a, "attention", name)
        if a.ndim != 4:
            raise InvalidArgumentError(f"aiter.attention: {name}: expected [B, H, S, D], got {a.ndim} dims")
    if attn_mask is not None:
        raise InvalidArgumentError("aiter.attention: attn_mask: only None is supported (use causal=True for a "
                                   "causal mask)")
    batch, sq, sk = q.shape[0], q.shape[2], k.shape[2]
    if causal and sq != sk:
        raise InvalidArgumentError(f"aiter.attention: causal=True needs Sq == Sk (got {sq} and {sk}): SDPA aligns "
                                   "the mask top-left, libaiter bottom-right")
    packed = [swap_dims_1_2(a).reshape(a.shape[0] * a.shape[2], a.shape[1], a.shape[3]) for a in (q, k, v)]
    out = prefill_attention(*packed, arange_int32(q, batch, sq), arange_int32(q, batch, sk), softmax_scale=scale,
                            causal=causal)
    return swap_dims_1_2(out.reshape(batch, sq, q.shape[1], v.shape[3]))
