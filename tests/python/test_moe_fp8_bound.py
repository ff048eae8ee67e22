"""How far a correct fp8 fused MoE may be from the float64 reference, and the
check the fp8 tests apply (test_moe_fp8.py, the GPU shapes, the Triton
interpreter test), with NumPy-only tests that the check passes legal roundings
and fails real bugs.

Why a bound and not a tolerance.  The fp8 layer quantizes twice: x to codes
per row (or per 1 x 128 group) before stage 1, and stage 1's output h, rounded
to bf16/fp16, to codes again (scale = amax / qmax of its row or group) before
stage 2.  A kernel whose stage-1 sums differ from float64 in the last bits (fp32
sums in another order; Hopper's fp8 wgmma, whose partial sums carry fewer bits)
can round an element of h to the neighbouring bf16 value; when that element is
its row's amax, the row's scale moves by one bf16 step and every code of the row
may round to its other fp8 neighbour.  Both roundings are correct: the kernel
and the reference then differ, in that row, by the fp8 rounding noise of h
carried through w2, up to 2 x 2^-4 of |w2| @ |h| per element (each code is
within half an e4m3 ulp, 2^-4 relative, of its value).  A fixed rtol / atol
pins one of the two roundings: on an H100 the fp8 Triton stages put 1-146
elements in 10^5-10^6 outside 5e-2 (at 0.07-0.1 of the output's rms) and failed
although correct.

The check, computed from the data for every output element (float64):
  worst case (`bound`): each fp8 code of either stage input may round to either
    neighbour (|change| <= 2 half-ulps: U8 |v| + SUB x scale each), sums may be
    off by SUMS of the sum of the terms' magnitudes, bf16/fp16 rounds h, each
    expert's output and the final sum (UNIT each); carried through the
    activation (slope <= SLOPE), the requantization (the row's scale may follow
    a changed amax), |w2| and the routing weights.  |out - ref| <= bound
    everywhere.  It is loose (about 2 x the output's rms at I = 768): it catches
    a lost scale, NaN, a garbage row, not a small error.
  mean error (`var`): the same changes as independent uniform roundings give
    each element a variance, the sum of (2/3) half-ulp^2 x weight^2 terms (the
    difference of two uniform roundings), about (0.05 x rms)^2 when every code of
    both inputs flips; a correct kernel flips few.  The rms of the error must stay
    under sqrt(mean(var)) over the whole output, and each token's row under
    3 x its own: a dropped K tile (0.3-0.7 of the rms with 2-4 tiles), a row
    written to another token (1.4 x), a scale off by 10% fail, as
    test_check_fails_real_bugs shows.
"""
import numpy as np
import pytest

from harness import QMAX, SMALLEST_SUBNORMAL, f64, ml_dtypes, near_tie, np_dtype, quant_reference

U8 = 2.0 ** -4  # e4m3 (3 mantissa bits): half an ulp, relative
SUMS = 2.0 ** -10  # sums' error, of the magnitudes of their terms (fp32 over K <= 16384: <= 2^-10)
SLOPE = 1.13  # largest |act'| of SiLU (1.10), GELU and GELU-tanh (1.13)
UNIT = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}  # round to nearest, relative
ROW_RMS = 3.0  # a token's row: rms of its error <= 3 x its model's (chi-square of H >= 16 terms)


def act64(name, g):
    from test_moe_fused import act64 as act
    return act(name, g)


def quantize_rows(v, qdtype, group=0, scale_tweak=None):
    """Codes (as float64) and scales of each row of v, per group of `group` values
    (0: one scale a row), as the library quantizes stage inputs: scale = fl32(amax /
    qmax), codes = v * fl32(1 / scale) rounded to fp8.  Scales: (rows, groups)."""
    rows, length = v.shape
    parts = v.reshape(rows, length // (group or length), -1)
    amax = np.abs(parts).max(axis=2)
    scale = np.where(amax > 0, f64(np.float32(amax / QMAX[qdtype])), 1.0)
    if scale_tweak is not None:  # tests of the check: another (legal) scale, codes rounded with it
        scale = f64(np.float32(scale_tweak(scale)))
    inv = f64(np.float32(1.0) / np.float32(scale))
    codes = f64(quant_reference(parts * inv[..., None], 1.0, qdtype))
    return codes.reshape(rows, length), scale


def expert_product(xq, xs, w, s, group):
    """Rows of x codes times expert matrix w (codes) with the scales applied:
    per channel, (x . w[n]) * x scale * s[n]; block-scaled, the sum over 128-wide K
    groups of (x_g . w[n]_g) * x scale_g * s[n // 128, g]."""
    if not group:
        return (xq @ w.T) * xs * s[None, :]
    groups = w.shape[1] // group
    xg = xq.reshape(len(xq), groups, group).transpose(1, 0, 2)  # (G, rows, 128)
    wg = w.reshape(len(w), groups, group).transpose(1, 2, 0)  # (G, 128, N)
    block_scale = s[np.arange(len(w)) // group, :].T[:, None, :]  # (G, 1, N)
    return ((xg @ wg) * xs.T[:, :, None] * block_scale).sum(axis=0)


def per_element(scale, length):
    """Row / group scales (rows, groups) repeated over their elements."""
    return np.repeat(scale, length // scale.shape[1], axis=1)


def weighted(v, w, s, group, square=False):
    """sum_i v[., i] x |w[n, i]| x s (|w|^2 s^2 with square): magnitudes through an expert matrix."""
    ones = np.ones((len(v), v.shape[1] // (group or v.shape[1])))
    w, s = (w * w, s * s) if square else (np.abs(w), np.abs(s))
    return expert_product(v, ones, w, s, group)


def half_ulp(v, scale_el, qdtype):
    """A bound on half an fp8 step at v (as a value, scale applied): relative in the
    normal range, half the subnormal step times the scale below it."""
    return U8 * np.abs(v) + 0.5 * SMALLEST_SUBNORMAL[qdtype] * scale_el


class Pairs:
    """One expert's rows through both stages in float64, with what a correct kernel
    may differ by: `dy` (worst case) and `vy` (variance) of each output element.
    `tweak` (tests of the check only) changes the computation like a kernel would."""

    def __init__(self, xin, w1, s1, w2, s2, act, qdtype, dtype, tweak=None):
        tweak = tweak or {}
        group = 128 if np.ndim(s1) == 2 else 0  # (per expert: 2 dims for 128 x 128 blocks)
        inter, unit = w1.shape[0] // 2, UNIT[dtype]
        xq, xs = quantize_rows(xin, qdtype, group)
        gate_up = expert_product(xq, xs, w1, s1, group)
        gate_up = tweak.get("stage1", lambda v: v)(gate_up)
        g, u = gate_up[:, :inter], gate_up[:, inter:]
        a = act64(act, g)
        self.h = f64((a * u).astype(np_dtype(dtype)))
        hq, hs = quantize_rows(self.h, qdtype, group, tweak.get("h_quant_scale"))
        hs = tweak.get("h_scale", lambda v: v)(hs)
        hq = tweak.get("h_codes", lambda v: v)(hq)
        y64 = expert_product(hq, hs, w2, s2, group)
        self.y = f64(y64.astype(np_dtype(dtype)))

        # Stage 1: x's codes are the reference's (the same fp32 recipe) except
        # near a tie, where fp32 and float64 may round apart; the sums' rounding.
        xs_el = per_element(xs, xin.shape[1])
        half_x = half_ulp(xin, xs_el, qdtype)
        tie_x = np.where(near_tie(xin, xs_el, qdtype), half_x, 0.0)
        d1 = weighted(2 * tie_x + SUMS * (np.abs(xin) + half_x), w1, s1, group)
        v1 = (2 / 3) * weighted(tie_x ** 2, w1, s1, group, square=True) if tie_x.any() else 0.0 * d1
        dg, du, vg, vu = d1[:, :inter], d1[:, inter:], v1[:, :inter], v1[:, inter:]
        # h = act(g) u, then rounded to the dtype on both sides.
        dh = SLOPE * dg * (np.abs(u) + du) + np.abs(a) * du
        dh = dh * (1 + unit) + 2 * unit * np.abs(self.h)
        vh = SLOPE ** 2 * u ** 2 * vg + a ** 2 * vu + (2 / 3) * (unit * self.h) ** 2
        # Requantized: each code to either neighbour, the scale after a changed amax.
        hs_el = per_element(hs, inter)
        dh_max = per_element(dh.reshape(len(dh), hs.shape[1], -1).max(axis=2), inter)
        half_h = half_ulp(np.abs(self.h) + dh, hs_el + dh_max / QMAX[qdtype], qdtype)
        dq = dh + 2 * half_h
        vq = vh + (2 / 3) * half_ulp(self.h, hs_el, qdtype) ** 2
        # Stage 2, then each expert's output rounded to the dtype.
        dy = weighted(dq + SUMS * (np.abs(self.h) + dq), w2, s2, group)
        self.dy = dy * (1 + unit) + 2 * unit * np.abs(y64)
        self.vy = weighted(vq, w2, s2, group, square=True) + (2 / 3) * (unit * y64) ** 2


class Reference:
    """The float64 layer (`value`) with each element's worst-case allowance
    (`bound`) and error variance (`var`); see the module docstring."""

    def __init__(self, value, bound, var):
        self.value, self.bound, self.var = value, bound, var


def pairs_by_expert(ids):
    from test_moe_fused import pairs_by_expert as pairs
    return pairs(ids)


def moe_fp8_reference(x, w1q, w2q, s1, s2, weights, ids, qdtype, act="silu", weights_on_input=False, tweak=None):
    """Per-channel scales (2-dim) or 128 x 128 blocks with 1 x 128 activation groups
    (3-dim).  Touches only the experts the tokens route to."""
    from test_moe_fused import weights64
    dtype = x.dtype.name
    x, weights = f64(x), f64(weights)
    out, bound, var, size = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for e, t, j in pairs_by_expert(ids):
        xin = f64(np.float32(x[t] * weights[t, j][:, None])) if weights_on_input else x[t]
        p = Pairs(xin, weights64(w1q[e]), f64(s1[e]), weights64(w2q[e]), f64(s2[e]), act, qdtype, dtype, tweak)
        w = np.ones(len(t)) if weights_on_input else weights[t, j]
        for into, v in ((out, p.y * w[:, None]), (bound, p.dy * np.abs(w)[:, None]),
                        (var, p.vy * (w ** 2)[:, None]), (size, np.abs(p.y * w[:, None]))):
            np.add.at(into, t, v)
    unit = UNIT[dtype]
    # The sum in fp32 (|rounding| <= k 2^-24 of the terms' magnitudes), rounded to the dtype.
    bound = bound * (1 + 2.0 ** -20) + unit * (np.abs(out) + bound) + 2.0 ** -20 * size
    var = var + (unit * out) ** 2 / 3
    return Reference(out, bound, var)


def verdict(out, ref):
    """None if `out` passes the check against `ref` (a Reference), else why not."""
    out = f64(out)
    if np.isnan(out).any():
        return f"{np.isnan(out).sum()} outputs NaN (unwritten?)"
    err = out - ref.value
    over = np.abs(err) > ref.bound
    if over.any():
        at = np.unravel_index(np.argmax(np.abs(err) - ref.bound), err.shape)
        return f"{over.sum()} elements beyond the worst-case bound; at {at}: |error| {abs(err[at]):.4g} > {ref.bound[at]:.4g}"
    rms, allowed = np.sqrt(np.mean(err ** 2)), np.sqrt(np.mean(ref.var))
    if rms > allowed:
        return f"rms error {rms:.4g} > {allowed:.4g} (the model's; output rms {np.sqrt(np.mean(ref.value ** 2)):.4g})"
    row_rms, row_allowed = np.sqrt(np.mean(err ** 2, axis=1)), ROW_RMS * np.sqrt(np.mean(ref.var, axis=1))
    if (row_rms > row_allowed).any():
        r = int(np.argmax(row_rms / np.maximum(row_allowed, 1e-300)))
        return f"row {r}: rms error {row_rms[r]:.4g} > {row_allowed[r]:.4g}"
    return None


def check(out, ref):
    problem = verdict(out, ref)
    assert problem is None, problem


# ---- the check itself, without the library ----------------------------------------
pytestmark = pytest.mark.skipif(ml_dtypes is None, reason="fp8 NumPy arrays need ml_dtypes")
QD = "float8_e4m3fn"


def small_layer(seed, block):
    """Random codes and scales of a layer: T 40, E 4, k 2, H 256, I 256 (two K tiles of 128 a stage)."""
    rng = np.random.default_rng(seed)
    tokens, experts, k, hidden, inter = 40, 4, 2, 256, 256
    x = rng.standard_normal((tokens, hidden)).astype(np_dtype("bfloat16"))

    def codes(rows, cols):
        w = rng.standard_normal((experts, rows, cols))
        if block:
            s = np.abs(w).reshape(experts, rows // 128, 128, cols // 128, 128).max(axis=(2, 4)) / QMAX[QD]
            s_el = np.repeat(np.repeat(s, 128, axis=1), 128, axis=2)
        else:
            s = np.abs(w).max(axis=2) / QMAX[QD]
            s_el = s[..., None]
        return quant_reference(w, s_el, QD), s.astype(np.float32)

    w1q, s1 = codes(2 * inter, hidden)
    w2q, s2 = codes(hidden, inter)
    ids = np.argsort(rng.random((tokens, experts)), axis=1)[:, :k].astype(np.int32)
    return x, w1q, w2q, s1, s2, rng.random((tokens, k)).astype(np.float32), ids


def legal(seed):
    """What correct kernels may do differently: stage-1 sums off in the last bits
    (some h round to the other bf16 value, some rows' scales follow), or every
    row's scale a bf16 step larger (every code of h re-rounded)."""
    noise = np.random.default_rng(seed + 100)
    return {"sums off by 2^-12": {"stage1": lambda v: v * (1 + 2.0 ** -12 * noise.uniform(-1, 1, v.shape))},
            "every h scale a step up": {"h_quant_scale": lambda s: s * (1 + 2.0 ** -7)}}


def real_bugs():
    """Kernel bugs the check must catch."""
    def drop_k_tile(hq):
        hq = hq.copy()
        hq[:, 128:] = 0  # stage 2 skips its second K tile
        return hq

    def lose_row_scale(hs):
        hs = hs.copy()
        hs[0] = 1.0  # one row's activation scale not applied
        return hs

    return {"a K tile dropped": {"h_codes": drop_k_tile}, "a row's scale lost": {"h_scale": lose_row_scale},
            "scales 10% off": {"h_scale": lambda s: s * 1.1}}


@pytest.mark.parametrize("block", [False, True])
@pytest.mark.parametrize("seed", [0])
def test_check_passes_legal_roundings(seed, block):
    layer = small_layer(seed, block)
    ref = moe_fp8_reference(*layer, QD)
    for name, tweak in legal(seed).items():
        other = moe_fp8_reference(*layer, QD, tweak=tweak).value.astype(np_dtype("bfloat16"))
        assert verdict(other, ref) is None, f"{name}: {verdict(other, ref)}"


@pytest.mark.parametrize("block", [False, True])
def test_check_fails_real_bugs(block):
    layer = small_layer(2, block)
    ref = moe_fp8_reference(*layer, QD)
    for name, tweak in real_bugs().items():
        wrong = moe_fp8_reference(*layer, QD, tweak=tweak).value.astype(np_dtype("bfloat16"))
        assert verdict(wrong, ref) is not None, f"{name}: passed the check"
    swapped = ref.value.astype(np_dtype("bfloat16"))
    swapped[[3, 7]] = swapped[[7, 3]]  # two tokens' rows exchanged
    assert verdict(swapped, ref) is not None, "rows exchanged: passed the check"
