"""Pure-jnp reference quantizers: the specification of every format, and the XLA fallback of the public ops
(RaZeR's XLA path is ``razer_xla.py``: these rules, bit for bit, in a layout XLA:CPU compiles well).

All functions take a float array ``x`` of shape ``(..., K)`` (``K`` a multiple of the block size ``B``) and
work on blocks of ``B`` consecutive elements along the last axis. Inputs are cast to float32; float32
subnormals (|x| < 2^-126) are flushed to +0 first (``fp4.flush_subnormals``: XLA runs float32 flush-to-zero
on CPU and GPU, so this pins one behaviour everywhere).

The arithmetic is chosen to be *the same on every backend*: only IEEE multiplies, comparisons and integer
ops run per element (no per-element division: XLA turns ``x / g`` into ``x * fl(1/g)`` and a GPU kernel's
float division need not be correctly rounded). Notation per block b, element i; fl() = float32 rounding.

NVFP4 (B = 16)
    g        = max(amax(|x|) / (448 * 6), 2^-126)        FP32 global scale (floor: all-zero / tiny inputs)
    xs_i     = fl(x_i * fl(1 / g))
    s_b      = E4M3( clip(fl(max_i |xs_i| * fl(1/6)), 2^-9, 448) )     RNE; stored as the E4M3 byte
    c_i      = E2M1(xs_i / s_b)   RNE of the *exact* quotient (|xs_i| compared with t * s_b for the seven
               midpoints t, products exact), saturating at +-6, sign kept (-0 possible)
    x_hat_i  = fl(fl(e2m1(c_i) * s_b) * g)
  Relation to ``jax.nn.get_scaled_dot_general_config("nvfp4", g)``: its quantizer computes the same g-scaling
  and block scale (XLA evaluates its ``x / g`` and ``amax / 6`` exactly as above), then casts the *rounded*
  quotient fl(xs * fl(1/s)) to E2M1; the two agree except when that double rounding crosses a midpoint, and
  except for blocks whose scale underflows E4M3: jax.nn clamps the scale at 0, its quotients are NaN or inf
  and its E2M1 cast (no NaN/inf in E2M1) turns them into -0 or +-6 times a zero scale, so such a block
  (all-zero blocks included) decodes to 0; here the scale is clamped at 2^-9 and a tiny nonzero block keeps
  a coarse approximation of its values (an all-zero block gives codes +0).

MXFP4 (B = 32, no global scale: ``global_scale`` = 1)
    e_b      = ceil(log2(amax_b / 6)) exactly (from the bits of amax_b), clamped to [-127, 126]; stored + 127
    c_i      = E2M1(x_i * 2^-e_b)  (exact product), x_hat_i = e2m1(c_i) * 2^e_b
  The scale is rounded up, as in jax.nn's ``mxfp4`` rule, so nothing clips (jax.nn rounds fl(amax * fl(1/6))
  up instead of the exact quotient: they differ only if that product rounds onto a power of two).

RaZeR, activation variant (B = 16): NVFP4's g and s_b, plus one special value ``sv_b in {+5, -5}`` per block
  stored in the (always free) sign bit of the E4M3 scale byte and decoded from the redundant code 0x8 (-0).
    element i takes sv when |xs_i - sv s_b| < |xs_i - q_i s_b| (q_i its E2M1 value; strictly closer: a tie
    keeps the FP4 value, as the spec sentence "closer to it than to its FP4 rounding" says); decided exactly
    by comparing xs_i with the midpoint ((sv + q_i) / 2) s_b
    err(sv)  = sum_i round(2^14 fl((d_i p_b)^2)) as int32, d_i = fl(|xs_i| - |chosen_i| s_b), p_b = the
               power of two 2^-floor(log2 s_b) (fp4.block_sq_err: integer terms, so the sum and the choice
               are the same on every backend whatever the reduction order); sv = -5 iff err(-5) < err(+5)
  Zeros are coded +0 (0x0) because 0x8 is the special value.

RaZeR, weight variant (B = 16): special values (+5, -5, +8, -8), index in bits 6..7 of the scale byte,
  6-bit E3M3 block scale in bits 0..5, global scale g = max(amax / (6 * 28), 2^-126). As in the authors' code
  (yc2367/NVFP4-RaZeR, ``quant_nvfp4_razer_e3m3``) the block scale depends on the candidate: it maps the block
  amax onto the candidate's largest magnitude qmax (6 for +-5, 8 for +-8):
    s_b(sv)  = E3M3( clip(fl(max_i |xs_i| * fl(1/qmax)), 2^-5, 28) )
    err(sv)  = as above with d_i = fl(|xs_i| - |chosen_i(sv)| s_b(sv)) and the common unit p_b of s_b(6); the
               smallest wins (first of +5, -5, +8, -8 on ties).
  Difference from the authors' simulation: they clamp to [2^-5, 28] and then cast to *E4M3*, which keeps 3
  mantissa bits below 2^-2; we store a true 6-bit E3M3 (bias 3, subnormals below 2^-2), so 6 + 2 bits fill
  the byte exactly.

Rounding choice: all formats round to nearest, ties to even (RNE, the ml_dtypes / hardware rule). The RaZeR
authors' code sends ties *down* in magnitude (``<= mid``); the two differ only on exact midpoints
(|v| in {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5} times the scale); tests pin the RNE choice on every midpoint.

The "by construction" guarantee (tested): the special-value decision compares exact products, so for the
activation variant each element's error is <= its NVFP4 error (same g and s_b): RaZeR's block squared error
is <= NVFP4's exactly (in real arithmetic, on every block). For the weight variant the +5/-5 candidates share
the E3M3 scale s_b(6) with plain FP4 under the weight variant's own g, so the chosen integer err is <= plain
FP4's err with that scale (each term is monotone in |d_i| and the integer sum is exact); it is *not*
comparable block by block to NVFP4 proper, whose g and E4M3 scale differ.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels.quant import fp4
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray

NVFP4_GLOBAL_MAX = 448.0 * 6.0
RAZER_WEIGHT_GLOBAL_MAX = 6.0 * 28.0
RAZER_WEIGHT_SPECIALS = (5.0, -5.0, 8.0, -8.0)
RAZER_WEIGHT_QMAX = (6.0, 6.0, 8.0, 8.0)


def _blocks(x, block: int):
    x = jnp.asarray(x).astype(jnp.float32)
    return x.reshape(*x.shape[:-1], x.shape[-1] // block, block)


def global_scale_from_amax(amax, denom: float):
    """FP32 global scale ``max(fl(amax / denom), 2^-126)`` (the floor keeps all-zero and tiny inputs finite);
    the quotient correctly rounded on every backend (:func:`fp4.div_rn`)."""
    return jnp.maximum(fp4.div_rn(amax, np.float32(denom)), np.float32(fp4.F32_MIN_NORMAL))


def reciprocal(g):
    """fl32(1/g), correctly rounded on every backend (:func:`fp4.div_rn`): the quantizers multiply by it (one
    IEEE multiply per element). Not a float division: XLA:GPU's is not correctly rounded (one ulp off on an
    H200, which flipped exact ties), and a Triton division need not be either."""
    return fp4.div_rn(np.float32(1.0), g)


# ---------------------------------------------------------------------------------------------------------
# Shared block math (also called from inside the kernels, on 2-D tiles viewed as (rows, nblocks, B))
# ---------------------------------------------------------------------------------------------------------


SIXTH = np.float32(1.0 / 6.0)  # fl32(1/6): the block scale is bmax * fl(1/6), a single IEEE multiply


def fence_tree(tree, fence: bool):
    """``fence=True`` (the XLA path; the block functions' ``fence`` flag also picks :func:`_block_sums`'s
    variadic form): materialize the per-block values ``tree`` before the per-element pass.

    Without it XLA CPU fuses the block-scale encode/decode into the element loop and recomputes it for every
    element (a 16x waste that dominated RaZeR's cost). An optimization barrier changes no value; the Pallas
    kernels call the block functions with ``fence=False`` (a barrier has no kernel lowering, and a tile's
    block values live in registers anyway)."""
    return jax.lax.optimization_barrier(tree) if fence else tree


def scaled_block_amax(braw, inv_g):
    """Block amax of ``xs = flush(x) * fl(1/g)`` from the raw block amax ``braw = max_i |x_i|``:
    ``fl(flush(braw) * fl(1/g))``. Equal to ``max_i |fl(flush(x_i) * fl(1/g))|`` bit for bit (flushing and
    a rounded multiply by a positive constant are monotone, so they commute with max); lets the XLA path
    read x once for both the global amax (= max of the block maxima) and the block scales."""
    return fp4.flush_subnormals(braw) * inv_g


def nvfp4_scale_code(bmax):
    """Block amax (of x * r) -> E4M3 scale code: RNE( clip(bmax * fl(1/6), 2^-9, 448) )."""
    return fp4.e4m3_encode(jnp.clip(bmax * SIXTH, np.float32(fp4.E4M3_MIN), np.float32(fp4.E4M3_MAX)))


def nvfp4_block_codes(xb, inv_g, bmax=None, *, fence: bool = False):
    """xb: (..., nb, 16) float, inv_g = fl(1/g) -> (codes (..., nb, 16), scale codes (..., nb)), uint32.
    ``bmax`` (..., nb): the block amax of ``xs`` if already known (:func:`scaled_block_amax`)."""
    xs = fp4.flush_subnormals(xb) * inv_g
    if bmax is None:
        bmax = jnp.max(jnp.abs(xs), axis=-1)
    sc = nvfp4_scale_code(bmax)
    s = fence_tree(fp4.e4m3_decode(sc), fence)
    return fp4.e2m1_encode_scaled(xs, s[..., None]), sc


def mxfp4_block_codes(xb, bmax=None, *, fence: bool = False):
    """xb: (..., nb, 32) float -> (codes, E8M0 scale codes); v = x * 2^(127 - code) is exact.
    ``bmax`` (..., nb): the block amax of ``flush(x)`` if already known (the XLA path passes
    ``flush(max(max x, -min x))`` from :func:`_raw_block_amax`, which reads x once and writes no |x|)."""
    xb = fp4.flush_subnormals(xb)
    if bmax is None:
        bmax = jnp.max(jnp.abs(xb), axis=-1)
    sc = fp4.e8m0_code_for_amax(bmax)
    r = fence_tree(fp4.e8m0_reciprocal(sc), fence)
    # e2m1_encode_scaled(v, 1) makes e2m1_encode's seven threshold comparisons as a three-compare search
    return fp4.e2m1_encode_scaled(xb * r[..., None], np.float32(1.0)), sc


def _razer_choose(xs, s, sv, p):
    """Per element of xs (..., B) with block scale s (..., 1): FP4 magnitude code m, whether the special value
    sv is strictly closer than the FP4 value q (|xs - sv s| < |xs - q s|, decided exactly by comparing xs with
    the midpoint (sv + q) / 2 times s, an exact product), and the block error
    ``fp4.block_sq_err(fl(xs - chosen s), p)`` (int32, in units of (1/p)^2 2^-14). ``sv=None``: plain FP4."""
    m = fp4.e2m1_magnitude_code_scaled(jnp.abs(xs), s)
    mag = fp4.e2m1_magnitude_value(m)
    q = jnp.where(xs < 0, -mag, mag)
    if sv is None:
        use = jnp.zeros(xs.shape, bool)
        chosen = q
    else:
        mid = (np.float32(sv) + q) * np.float32(0.5) * s  # (sv + q) / 2 has <= 5 significant bits: exact
        use = jnp.where(q < np.float32(sv), xs > mid, xs < mid)  # sv is never an E2M1 value
        chosen = jnp.where(use, np.float32(sv), q)
    # chosen has the sign of xs (or is 0), so |d| = ||xs| - |chosen| s|; going through |xs| (a fabs between
    # the multiply xs = x * fl(1/g) and this subtract) keeps a GPU compiler from fusing them into an FMA
    return m, use, fp4.block_sq_err(jnp.abs(xs) - jnp.abs(chosen) * s, p)


def razer_codes(xs, m, use):
    """Element codes: 0x8 for the special value, +0 for zeros, sign | magnitude otherwise."""
    sign = jnp.where((xs < 0) & (m > 0), jnp.uint32(8), jnp.uint32(0))
    return jnp.where(use, jnp.uint32(8), sign | m)


def sq_term(y):
    """``y = fl(d p)`` -> the per-element integer error terms of :func:`fp4.block_sq_err` (before the block
    sum), with the factor 2^14 folded into the power of two: ``p = 2^7 * pow2_reciprocal(s)`` and ``k =
    int(fl(min(fl(y^2), 2^26) + 1/2))``. Bit-identical to ``block_sq_err``'s terms: ``fl(d p 2^7) = fl(d p)
    2^7`` and ``fl(y^2) = fl((d p)^2) 2^14`` exactly (powers of two; where a square underflows both terms are
    0), ``e >= 2^26`` iff ``block_sq_err``'s ``e >= 2^12`` (both give the cap 2^26, as ``fl(2^26 + 1/2) =
    2^26``), and the ``min`` between the square and the add keeps a compiler from contracting them into an
    FMA (which would round ``y^2 + 1/2`` once instead of twice)."""
    e = jnp.minimum(y * y, np.float32(fp4.ERR_TERM_MAX))
    return (e + np.float32(0.5)).astype(jnp.int32)


def err_unit(s):
    """The error unit of a block with scale s (..., nb): ``2^7 * pow2_reciprocal(s)`` (exact)."""
    return fp4.pow2_reciprocal(s) * np.float32(1 << (fp4.ERR_FRACTION_BITS // 2))


def _e2m1_value_scaled(a, s):
    """``e2m1(RNE(a / s)) * s`` for a >= 0: the three comparisons of :func:`fp4.e2m1_magnitude_code_scaled`
    and a select tree over the eight products ``v * s`` (exact) instead of building the code's float."""
    f = np.float32
    b2 = a >= f(1.75) * s
    b1 = a >= jnp.where(b2, f(3.5), f(0.75)) * s
    t0 = jnp.where(b2, jnp.where(b1, f(5.0), f(2.5)), jnp.where(b1, f(1.25), f(0.25)))
    b0 = a > t0 * s
    hi = jnp.where(b1, jnp.where(b0, f(6.0), f(4.0)), jnp.where(b0, f(3.0), f(2.0)))
    lo = jnp.where(b1, jnp.where(b0, f(1.5), f(1.0)), jnp.where(b0, f(0.5), f(0.0)))
    return jnp.where(b2, hi, lo) * s


def _block_sums(terms, variadic: bool):
    """Block sums (last axis) of several int32 arrays. ``variadic=True`` (the XLA path): one variadic
    reduction, so XLA computes the shared per-element work once for all sums (separate ``jnp.sum`` calls
    each recompute it in their own loop); the Pallas kernels (Triton and Mosaic lower no variadic reduce)
    sum each array. Integer sums are exact, so both give the same integers."""
    if not variadic:
        return tuple(jnp.sum(t, axis=-1) for t in terms)
    return jax.lax.reduce(
        tuple(terms),
        tuple(jnp.int32(0) for _ in terms),
        lambda acc, t: tuple(u + v for u, v in zip(acc, t, strict=True)),
        (terms[0].ndim - 1,),
    )


def first_min_index(errs):
    """Index (uint32) of the smallest of the block errors ``errs`` (the first one on ties)."""
    best, idx = errs[0], jnp.zeros(errs[0].shape, jnp.uint32)
    for i in range(1, len(errs)):
        better = errs[i] < best
        best, idx = jnp.where(better, errs[i], best), jnp.where(better, jnp.uint32(i), idx)
    return idx


def _abs_flushed(x):
    """``|flush_subnormals(x)|`` (float32): one abs shared by the flush test and the magnitude."""
    ax = jnp.abs(x.astype(jnp.float32))
    return jnp.where(ax < np.float32(fp4.F32_MIN_NORMAL), np.float32(0.0), ax)


def _special_delta(a, s, p, sv: float):
    """Per element: whether ``|xs| = a`` is strictly closer to ``sv s`` than to its FP4 rounding, and
    ``delta = k(special) - k(FP4)`` (int32, <= 0 where near), the change of its :func:`sq_term` term.

    ``sv`` = 5: near iff ``4.5 s < a < 5.5 s`` (RNE sends 5 s to 4 s), FP4 value 4 s (a <= 5 s) or 6 s.
    ``sv`` = 8: near iff ``a > 7 s`` (FP4 saturates at 6 s). With ``ap = fl(a p)`` = a p exactly (p a power of
    two) and the exact ``c = s p``, ``fl(ap - v c) = fl(a - v s) p``: the very ``y = fl(d p)`` of ``d = a - v
    s``, so the terms are bit-identical. For 5 the FP4 difference of a near element is ``c - |t|`` (t = ap -
    5 c): a - 5 s and a - 4 s or a - 6 s are exact there (Sterbenz: a / (5 s) in (0.9, 1.1)), so that real
    number is representable and the subtraction exact. The near tests are the same comparisons on exact
    differences wherever the outcome is not already forced (|a - 5 s| >= 2.5 s, or a < 4 s for 8), where
    monotone rounding keeps the side."""
    c = s * p
    t = a * p - np.float32(sv) * c
    if sv == 5.0:
        at = jnp.abs(t)
        return at < np.float32(0.5) * c, sq_term(t) - sq_term(c - at)
    return t > np.float32(-1.0) * c, sq_term(t) - sq_term(a * p - np.float32(6.0) * c)


def razer_activation_block_codes(xb, inv_g, bmax=None, *, fence: bool = False):
    """RaZeR activation variant on blocks xb (..., nb, 16): (codes uint32, scale bytes uint32).

    Fast form of two :func:`_razer_choose` calls (bit-identical). An element can only take the special value
    of its own sign (0 is an FP4 value, so one of the other sign is always farther than its FP4 rounding),
    and for it both candidates are the same test (:func:`_special_delta`). Every other element keeps its FP4
    term under both candidates, so with ``delta_i = k_sv,i - k_fp4,i``

        err(-5) - err(+5) = sum_{near, xs < 0} delta_i - sum_{near, xs > 0} delta_i

    and ``err(-5) < err(+5)`` iff ``sum_i [near_i] sign(xs_i) delta_i > 0``: one integer block sum of one
    per-element term instead of two block errors (exact: near terms are < 2^17, the sum < 2^21)."""
    xb = xb.astype(jnp.float32)
    a = _abs_flushed(xb) * inv_g  # = |flush(x) * fl(1/g)| (rounding is symmetric)
    if bmax is None:
        bmax = jnp.max(a, axis=-1)
    sc = nvfp4_scale_code(bmax)
    # only s and the choice are materialized (fenced) per block: p, the thresholds 4.5 s / 5.5 s are a few
    # per-element ops, cheaper on CPU than more block-sized temporaries (each a fresh, page-faulted buffer)
    s = fence_tree(fp4.e4m3_decode(sc), fence)[..., None]
    near, delta = _special_delta(a, s, err_unit(s), 5.0)
    signed = jnp.where(near, jnp.where(xb > 0, delta, -delta), jnp.int32(0))  # near => xs != 0, sign of x
    neg = fence_tree(jnp.sum(signed, axis=-1) > 0, fence)  # err(-5) < err(+5): +5 wins ties
    m = fp4.e2m1_magnitude_code_scaled(a, s)
    # the same nearness as _special_delta's, written as the comparisons with the exact products 4.5 s, 5.5 s:
    # a different expression, so XLA recomputes it here instead of writing a full-size mask for both passes
    use = (a > np.float32(4.5) * s) & (a < np.float32(5.5) * s) & jnp.where(neg[..., None], xb < 0, xb > 0)
    return razer_codes(xb, m, use), sc | (neg.astype(jnp.uint32) << jnp.uint32(7))


def e3m3_scale_code(bmax, qmax: float):
    """RaZeR weight block-scale code (uint8, shape of ``bmax``): E3M3 of ``bmax / qmax`` clipped to its range."""
    return fp4.e3m3_encode(jnp.clip(bmax * np.float32(1.0 / qmax), np.float32(fp4.E3M3_MIN), np.float32(fp4.E3M3_MAX)))


def razer_weight_candidate(xs, bmax, idx: int, allow_special: bool = True):
    """One weight-variant candidate (special value RAZER_WEIGHT_SPECIALS[idx]) -> (err, codes, scale byte).
    Errors of all candidates share the unit p = pow2_reciprocal(s_b(6)) so they compare across scales.
    ``allow_special=False`` gives plain FP4 with the same E3M3 scale (the baseline of the guarantee)."""
    sv, qmax = RAZER_WEIGHT_SPECIALS[idx], RAZER_WEIGHT_QMAX[idx]
    p = fp4.pow2_reciprocal(fp4.e3m3_decode(e3m3_scale_code(bmax, 6.0)))[..., None]
    sc = e3m3_scale_code(bmax, qmax)
    m, use, err = _razer_choose(xs, fp4.e3m3_decode(sc)[..., None], sv if allow_special else None, p)
    return err, razer_codes(xs, m, use), sc | jnp.uint32(idx << 6)


def razer_weight_block_codes(xb, inv_g, bmax=None, *, fence: bool = False):
    """RaZeR weight variant on blocks xb (..., nb, 16): (codes uint32, scale bytes uint32).

    The four candidates of :func:`razer_weight_candidate` (first wins ties), bit-identical, in two passes
    over the elements: (1) the FP4 terms at both scales s_b(6) and s_b(8) (select trees, no code-to-float
    decode), the special values' terms (:func:`_special_delta`: +-5 at s_b(6), +-8 at s_b(8)) and the four
    candidates' block sums in one variadic reduction; (2) the codes at the chosen scale only."""
    xb = xb.astype(jnp.float32)
    a = _abs_flushed(xb) * inv_g
    if bmax is None:
        bmax = jnp.max(a, axis=-1)
    sc6, sc8 = e3m3_scale_code(bmax, 6.0), e3m3_scale_code(bmax, 8.0)
    # fenced per block: the two scales and the choice only (p and the chosen scale are per-element ops)
    s6, s8 = (v[..., None] for v in fence_tree((fp4.e3m3_decode(sc6), fp4.e3m3_decode(sc8)), fence))
    p = err_unit(s6)
    ap = a * p
    k6 = sq_term(ap - _e2m1_value_scaled(a, s6) * p)  # fl(a - q s6) p: p a power of two
    k8 = sq_term(ap - _e2m1_value_scaled(a, s8) * p)
    near5, d5 = _special_delta(a, s6, p, 5.0)
    near8, d8 = _special_delta(a, s8, p, 8.0)
    pos, neg = xb > 0, xb < 0  # near => xs != 0 with the sign of x
    terms = (
        jnp.where(near5 & pos, k6 + d5, k6),
        jnp.where(near5 & neg, k6 + d5, k6),
        jnp.where(near8 & pos, k8 + d8, k8),
        jnp.where(near8 & neg, k8 + d8, k8),
    )
    idx = fence_tree(first_min_index(_block_sums(terms, fence)), fence)
    wide = idx >= jnp.uint32(2)
    w = wide[..., None]
    s = jnp.where(w, s8, s6)
    m = fp4.e2m1_magnitude_code_scaled(a, s)
    near = jnp.where(w, a > np.float32(7.0) * s, (a > np.float32(4.5) * s) & (a < np.float32(5.5) * s))
    want_neg = ((idx & jnp.uint32(1)) == jnp.uint32(1))[..., None]
    use = near & jnp.where(want_neg, neg, pos)
    return razer_codes(xb, m, use), jnp.where(wide, sc8, sc6) | (idx << jnp.uint32(6))


def razer_special_value(byte, fmt: str):
    """Scale byte -> the block's special value (float32)."""
    byte = byte.astype(jnp.uint32)
    if fmt == "razer_activation":
        return jnp.where((byte >> jnp.uint32(7)) == jnp.uint32(1), np.float32(-5.0), np.float32(5.0))
    idx = byte >> jnp.uint32(6)
    mag = jnp.where(idx >= jnp.uint32(2), np.float32(8.0), np.float32(5.0))
    return jnp.where((idx & jnp.uint32(1)) == jnp.uint32(1), -mag, mag)


def block_scale_value(byte, fmt: str):
    """Scale byte -> the block scale (float32) for any format."""
    if fmt in ("nvfp4", "razer_activation"):
        return fp4.e4m3_decode(byte)
    if fmt == "mxfp4":
        return fp4.e8m0_decode(byte)
    return fp4.e3m3_decode(byte)


def element_values(codes, byte, fmt: str):
    """Codes (..., nb, B) and scale bytes (..., nb) -> the E2M1 (or special) values, *before* scaling."""
    val = fp4.e2m1_decode(codes)
    if fmt.startswith("razer"):
        sv = razer_special_value(byte, fmt)[..., None]
        val = jnp.where(codes.astype(jnp.uint32) == jnp.uint32(8), sv, val)
    return val


def dequantize_blocks(codes, byte, g, fmt: str):
    """Blocks of codes (..., nb, B) -> float32 values ``(value * s_b) * g``."""
    return (element_values(codes, byte, fmt) * block_scale_value(byte, fmt)[..., None]) * g


# ---------------------------------------------------------------------------------------------------------
# Whole-tensor references
# ---------------------------------------------------------------------------------------------------------


def _pack(x, codes, sc, g, fmt: str) -> QuantizedArray:
    codes = codes.reshape(*x.shape[:-1], x.shape[-1])
    return QuantizedArray(
        codes=fp4.pack_nibbles(codes),
        scales=sc.astype(jnp.uint8),
        global_scale=jnp.asarray(g, jnp.float32),
        shape=tuple(x.shape),
        format=fmt,
        block_size=fp4.BLOCK_SIZE[fmt],
    )


def _raw_block_amax(xb):
    """max_i |x_i| per block as ``max(max_i x_i, -min_i x_i)`` from one variadic max/min reduction: exact (a
    zero amax may come out as -0, which every use clamps or maxes away), and XLA CPU then reads x once
    instead of writing |x| to memory for its reduction library (2x faster). The global amax is the max of
    these."""
    hi, lo = jax.lax.reduce(
        (xb, xb),
        (np.float32(-np.inf), np.float32(np.inf)),
        lambda a, b: (jnp.maximum(a[0], b[0]), jnp.minimum(a[1], b[1])),
        (xb.ndim - 1,),
    )
    return jnp.maximum(hi, -lo)


def _global_and_blocks(x, global_scale, denom: float):
    """(xb, g, fl(1/g), block amax of xs): the shared first pass of the global-scale formats."""
    xb = _blocks(x, 16)
    # fenced: otherwise XLA folds max(max(|x|, -1)) into a second full reduction and materializes |x| for both
    braw = fence_tree(_raw_block_amax(xb), True)
    if global_scale is None:
        global_scale = global_scale_from_amax(jnp.max(braw), denom)
    g = jnp.asarray(global_scale, jnp.float32)
    inv_g = reciprocal(g)
    return xb, g, inv_g, scaled_block_amax(braw, inv_g)


def nvfp4_quantize(x, global_scale=None) -> QuantizedArray:
    """NVFP4 reference. ``global_scale`` defaults to ``max(amax/2688, 2^-126)``."""
    x = jnp.asarray(x)
    xb, g, inv_g, bmax = _global_and_blocks(x, global_scale, NVFP4_GLOBAL_MAX)
    codes, sc = nvfp4_block_codes(xb, inv_g, bmax, fence=True)
    return _pack(x, codes, sc, g, "nvfp4")


def mxfp4_quantize(x) -> QuantizedArray:
    x = jnp.asarray(x)
    xb = _blocks(x, 32)
    bmax = fp4.flush_subnormals(fence_tree(_raw_block_amax(xb), True))  # flush commutes with max |.|
    codes, sc = mxfp4_block_codes(xb, bmax, fence=True)
    return _pack(x, codes, sc, 1.0, "mxfp4")


def razer_quantize(x, variant: str = "activation", global_scale=None) -> QuantizedArray:
    x = jnp.asarray(x)
    if variant == "activation":
        denom, fn, fmt = NVFP4_GLOBAL_MAX, razer_activation_block_codes, "razer_activation"
    else:
        denom, fn, fmt = RAZER_WEIGHT_GLOBAL_MAX, razer_weight_block_codes, "razer_weight"
    xb, g, inv_g, bmax = _global_and_blocks(x, global_scale, denom)
    codes, sc = fn(xb, inv_g, bmax, fence=True)
    return _pack(x, codes, sc, g, fmt)


def dequantize(q: QuantizedArray, dtype=jnp.float32):
    """Any format's reference dequantizer -> array of shape ``q.shape``."""
    codes = fp4.unpack_nibbles(q.codes)
    codes = codes.reshape(*q.shape[:-1], q.shape[-1] // q.block_size, q.block_size)
    out = dequantize_blocks(codes, q.scales, q.global_scale, q.format)
    return out.reshape(q.shape).astype(dtype)


def dequantized_weight_unscaled(q: QuantizedArray):
    """``value * s_b`` without the global scale (float32, shape q.shape): exact in bfloat16 for every format
    (<= 3 significant bits times <= 4), which is what the fused matmul feeds to the MXU / tensor cores."""
    codes = fp4.unpack_nibbles(q.codes).reshape(*q.shape[:-1], q.shape[-1] // q.block_size, q.block_size)
    v = element_values(codes, q.scales, q.format) * block_scale_value(q.scales, q.format)[..., None]
    return v.reshape(q.shape)


def fp4_matmul(x, w: QuantizedArray, out_dtype=None):
    """Reference W4A16 matmul: ``x @ dequantize(w).T`` for a weight ``w`` of logical shape (N, K).

    W4A16 numerics: ``x`` is rounded to bfloat16, then ``(x @ (value * s_b).T) * g`` is computed with float32
    accumulation (HIGHEST precision); every product is exact in float32. The rounding is a ``reduce_precision``
    (bfloat16's 8 exponent and 7 mantissa bits): XLA:GPU elides a bfloat16 round trip of float32 values
    (excess precision allowed), which on an H200 (2026-12-04) left x unrounded, 2e-3 off the W4A16 result."""
    out_dtype = out_dtype or x.dtype
    wv = dequantized_weight_unscaled(w)
    xb = jax.lax.reduce_precision(jnp.asarray(x).astype(jnp.float32), exponent_bits=8, mantissa_bits=7)
    acc = jnp.einsum("...k,nk->...n", xb, wv, precision="highest")
    return (acc * w.global_scale).astype(out_dtype)
