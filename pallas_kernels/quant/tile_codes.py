"""The block quantizers' per-tile encode and decode in the form the GPU kernels (Triton, and the interpreter that
runs that form) execute: the rules of ``reference.py`` bit for bit, with fewer instructions per element.

A tile ``(bm, bk)`` is split once into the even and the odd element of every pair, ``lo`` and ``hi`` of shape
``(bm, bk / B, B / 2)`` (a reshape to pairs and a ``lax.unstack``: one register split, no gather). Each half is
encoded to its nibble and the packed byte is ``lo | hi << 4``: no per-element iota, shift-by-parity and pair
sum. Everything per block (the amax, the scale code, thresholds) is computed once per block and broadcast once
to the half shape, where both halves use it.

NVFP4 (and RaZeR's activation variant): the E2M1 magnitude of the exact quotient ``a / s`` (``a = |x| fl(1/g)``)
is a binary search over thresholds ``t s`` precomputed per block (exact products: ``t`` has <= 3 significant
bits, ``s`` <= 4), so an element costs three comparisons and four selects of per-block values instead of
multiplying ``t * s`` per element. The float32 flush of subnormal ``x`` (``fp4.flush_subnormals``) is folded into
the thresholds: with ``F = fl(2^-126 fl(1/g))``, ``|x| >= 2^-126`` iff ``fl(|x| fl(1/g)) >= F`` (monotone
rounding; the largest subnormal maps at least one ulp below ``F`` whenever ``F`` is normal, and when it is not,
every threshold is above both), so every threshold becomes ``max(T, F)``, and the exclusive ones (``a > T``,
ties to the even code) ``max(next(T), F)`` with ``next`` the following float. The sign bit is ``x <= -2^-126``
(a flushed or zero ``x`` is coded +0).

MXFP4: the scale is a power of two, so ``v = flush(|x|) 2^-e`` is exact and its E2M1 code is a round to
nearest even by one float add of a binade-dependent magic constant (``fl(v + C)`` with ``C ~ 2^22`` below 2,
``2^23`` in [2, 4), ``2^24`` in [4, 8): the spacing of E2M1 there), whose low bits are tagged so that the sum's
low four bits are the code nibble, sign included.

Dequantize: the code nibble ``q`` decodes to ``e2m1(q)`` by placing its bits in a float16 (sign to bit 15,
exponent and mantissa to bits 11..9: ``e2m1(q) 2^-14`` exactly, codes +-0.5 a float16 subnormal, which the
float16 -> float32 conversion keeps) and multiplying by ``s_b 2^14`` (exact: a power of two times the scale);
RaZeR's special values replace code 8 by one select.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxwb.pallas_kernels.quant import fp4
from jaxwb.pallas_kernels.quant import reference as ref

F32 = np.float32
TINY = F32(fp4.F32_MIN_NORMAL)


def e4m3_code(x):
    """``fp4.e4m3_encode`` for positive float32 ``x`` in [2^-9, 448] (the clipped block scales), per block in
    ten ops: a normal (``x >= 2^-6``) rounds its 23-bit mantissa to 3 bits by the integer round-to-nearest-even
    ``(b + 0x7FFFF + lsb) >> 20`` (a carry moves into the exponent, as it must), less the bias difference
    ``120 << 3``; a subnormal rounds to the step 2^-9 by one float add of 2^14 (whose ulp is 2^-9)."""
    u = jnp.uint32
    b = fp4.f32_bits(x)
    normal = ((b + u(0x7FFFF) + ((b >> u(20)) & u(1))) >> u(20)) - u(120 << 3)
    sub = fp4.f32_bits(x + F32(2.0**14)) - u(0x46800000)
    return jnp.where(x >= F32(2.0**-6), normal, sub)


def _minifloat_value(c, bias: int):
    """A 3-mantissa-bit unsigned minifloat code ``c`` (uint32) -> float32, exact, no conversion: a normal code's
    fields placed in float32 bits (``(c << 20) + ((127 - bias) << 23)``), a subnormal's ``c 2^(-2 - bias)`` as
    ``fl(2^(21 - bias) + c 2^(-2 - bias)) - 2^(21 - bias)`` (the ulp of ``2^(21 - bias)`` is the step)."""
    u = jnp.uint32
    normal = fp4.f32_from_bits((c << u(20)) + u((127 - bias) << 23))
    sub = fp4.f32_from_bits(c + u((127 + 21 - bias) << 23)) - F32(2.0 ** (21 - bias))
    return jnp.where(c >= u(8), normal, sub)


def e4m3_value(code):
    """``fp4.e4m3_decode`` (bit 7 ignored) in six ops (:func:`_minifloat_value`)."""
    return _minifloat_value(code.astype(jnp.uint32) & jnp.uint32(0x7F), 7)


def e3m3_value(code):
    """``fp4.e3m3_decode`` (bits 6..7 ignored) in six ops (:func:`_minifloat_value`)."""
    return _minifloat_value(code.astype(jnp.uint32) & jnp.uint32(0x3F), 3)


def halves(x, block: int):
    """``(bm, bk)`` -> ``(lo, hi)``, each ``(bm, bk / block, block / 2)``: the elements ``2j`` and ``2j + 1``."""
    bm, bk = x.shape
    pairs = x.reshape(bm, bk // block, block // 2, 2)
    if hasattr(jax.lax, "unstack"):  # one register split (tt.split) in the Triton lowering
        return jax.lax.unstack(pairs, axis=-1)
    lo, hi = jnp.split(pairs, 2, axis=-1)  # a jax without lax.unstack: the same halves
    return lo[..., 0], hi[..., 0]


def _next_up(t):
    """The float after ``t > 0`` (``a > t`` iff ``a >= next(t)`` for a float ``a``)."""
    return fp4.f32_from_bits(fp4.f32_bits(t) + jnp.uint32(1))


def _wide(v, shape):
    """A per-block ``(bm, nb)`` value broadcast once to the half shape ``(bm, nb, B / 2)``."""
    return jnp.broadcast_to(v[..., None], shape)


def e2m1_thresholds(s, floor, shape):
    """The seven E2M1 rounding thresholds of a block with scale ``s`` (bm, nb) as inclusive thresholds on
    ``a = fl(|x| fl(1/g))``, broadcast to ``shape``: (t175, t35, t075, t5, t25, t125, t025). The exclusive ones
    (``a > t s``: a tie goes to the even code below) are the float after ``t s``. The flush floor ``floor =
    fl(2^-126 fl(1/g))`` (module docstring) is folded into the three thresholds a flushed element meets, the
    ones of the all-below path (t175, t075, t025): it fails them, so it never reaches the others; a normal
    element is at or above the floor, so the fold changes none of its comparisons."""
    inc = lambda t: F32(t) * s  # a >= t s (ties up: the even code above)
    exc = lambda t: _next_up(F32(t) * s)  # a > t s
    w = lambda v: _wide(v, shape)
    lo = lambda v: w(jnp.maximum(v, floor))
    return lo(inc(1.75)), w(inc(3.5)), lo(inc(0.75)), w(exc(5.0)), w(exc(2.5)), w(exc(1.25)), lo(exc(0.25))


def e2m1_nibble(a, x, th, shift: int):
    """The NVFP4 code nibble (int32, at bit ``shift``) of elements with ``a = fl(|x| fl(1/g))``: the three
    comparisons of the binary search over the block's thresholds ``th`` (:func:`e2m1_thresholds`) and the sign
    ``x <= -2^-126``."""
    t175, t35, t075, t5, t25, t125, t025 = th
    b2 = a >= t175
    b1 = a >= jnp.where(b2, t35, t075)
    b0 = a >= jnp.where(b2, jnp.where(b1, t5, t25), jnp.where(b1, t125, t025))
    i = lambda c, v: jnp.where(c, jnp.int32(v << shift), jnp.int32(0))
    low = b0.astype(jnp.int32) if shift == 0 else i(b0, 1)
    return i(x <= -TINY, 8) | i(b2, 4) | i(b1, 2) | low


def nvfp4_tile(x, inv_g):
    """NVFP4 codes of a float32 tile ``(bm, bk)`` -> (packed bytes ``(bm, bk / 2)`` int32, scale codes
    ``(bm, bk / 16)`` uint32); ``inv_g = fl(1/g)`` a scalar. Bit-identical to ``reference.nvfp4_block_codes``."""
    lo, hi = halves(x, 16)
    alo, ahi = jnp.abs(lo), jnp.abs(hi)
    bmax = ref.scaled_block_amax(jnp.max(jnp.maximum(alo, ahi), axis=-1), inv_g)
    sc = e4m3_code(jnp.clip(bmax * ref.SIXTH, F32(fp4.E4M3_MIN), F32(fp4.E4M3_MAX)))  # ref.nvfp4_scale_code
    th = e2m1_thresholds(e4m3_value(sc), TINY * inv_g, lo.shape)
    byte = e2m1_nibble(alo * inv_g, lo, th, 0) | e2m1_nibble(ahi * inv_g, hi, th, 4)
    return byte.reshape(x.shape[0], x.shape[1] // 2), sc


# fl(v + C) with C = 2^(22 + k) + (2k + 8 sign) ulps rounds v in [2^k, 2^(k+1)) (k = 0 below 2) to the E2M1
# spacing there (ulp(C) = 2^(k-1)); C's tag keeps C / ulp even (ties stay to even) and makes the sum's low four
# bits the code: steps + 2k is the magnitude code (< 8), plus 8 for the sign
_MAGIC = tuple((149 + k) << 23 | 2 * k for k in range(3))


def e2m1_exact_nibble(v, x, shift: int):
    """The E2M1 code nibble (int32, at bit ``shift``) of an exact ``v = |x| 2^-e`` in [0, 6] (MXFP4): one add of
    a magic constant chosen by two comparisons (``_MAGIC``), the code read from the sum's low bits. Sign
    ``x <= -2^-126`` (a flushed or zero ``x`` is coded +0). Bit-identical to ``fp4.e2m1_encode_scaled(v, 1)``
    on ``v`` with its sign. ``shift=4``: the nibble at bits 4..7 with the sum's higher bits above it (the caller
    truncates to a byte)."""
    u = jnp.uint32
    c = jnp.where(v >= F32(4.0), u(_MAGIC[2]), jnp.where(v >= F32(2.0), u(_MAGIC[1]), u(_MAGIC[0])))
    c = c | jnp.where(x <= -TINY, u(8), u(0))
    nib = fp4.f32_bits(v + fp4.f32_from_bits(c)).astype(jnp.int32)
    # the low nibble is masked; the high one is shifted and left unmasked: the packed byte's uint8 store drops
    # the bits above 7 (:func:`mxfp4_tile`)
    return nib & jnp.int32(15) if shift == 0 else nib << jnp.int32(shift)


def mxfp4_tile(x):
    """MXFP4 codes of a float32 tile ``(bm, bk)`` -> (packed bytes ``(bm, bk / 2)`` int32, in the low 8 bits: the
    caller stores them as uint8, E8M0 codes ``(bm, bk / 32)`` uint32). Bit-identical to
    ``reference.mxfp4_block_codes``."""
    lo, hi = halves(x, 32)
    alo, ahi = jnp.abs(lo), jnp.abs(hi)
    sc = fp4.e8m0_code_for_amax(fp4.flush_subnormals(jnp.max(jnp.maximum(alo, ahi), axis=-1)))
    r = _wide(fp4.e8m0_reciprocal(sc), lo.shape)
    flush = lambda a: jnp.where(a < TINY, F32(0.0), a)
    byte = e2m1_exact_nibble(flush(alo) * r, lo, 0) | e2m1_exact_nibble(flush(ahi) * r, hi, 4)
    return byte.reshape(x.shape[0], x.shape[1] // 2), sc


def _flushed_scaled(x, inv_g):
    """``fl(flush(x) fl(1/g))`` (signed): the RaZeR tiles flush explicitly (their special-value windows and
    error sums would otherwise need the flush folded in several more places)."""
    return jnp.where(jnp.abs(x) < TINY, F32(0.0), x) * inv_g


def _search_nibble(a, th, shift: int):
    """(b2, b1, b0) of the E2M1 binary search of ``a`` over a block's thresholds ``th`` (:func:`e2m1_thresholds`)
    as the magnitude bits of a nibble at ``shift`` (int32)."""
    t175, t35, t075, t5, t25, t125, t025 = th
    b2 = a >= t175
    b1 = a >= jnp.where(b2, t35, t075)
    b0 = a >= jnp.where(b2, jnp.where(b1, t5, t25), jnp.where(b1, t125, t025))
    i = lambda c, v: jnp.where(c, jnp.int32(v << shift), jnp.int32(0))
    return i(b2, 4) | i(b1, 2) | (b0.astype(jnp.int32) if shift == 0 else i(b0, 1))


def _sq_term_float(y):
    """``reference.sq_term(y)`` as an integer-valued float32: ``floor(fl(min(fl(y^2), 2^26)) + 1/2)`` (the
    ``min`` also keeps a compiler from contracting the square and the add into an FMA)."""
    return jnp.floor(jnp.minimum(y * y, F32(fp4.ERR_TERM_MAX)) + F32(0.5))


def razer_activation_tile(x, inv_g):
    """RaZeR activation codes of a float32 tile ``(bm, bk)`` -> (packed bytes ``(bm, bk / 2)`` int32, scale
    bytes ``(bm, bk / 16)`` uint32). Bit-identical to ``reference.razer_activation_block_codes``: NVFP4's scale
    and code search (thresholds per block, the flush explicit), the block's special value -5 where
    ``sum_near sign(x) (k(-5) - k(FP4)) > 0`` (``reference._special_delta``'s integer terms), and the special
    code 8 where ``xs`` lies in the block's signed window ``(4.5 s, 5.5 s)`` or ``(-5.5 s, -4.5 s)``; the sign
    bit only on a nonzero magnitude (``xs < -0.25 s``), code 0x8 being the special value."""
    lo, hi = halves(x, 16)
    xs = (_flushed_scaled(lo, inv_g), _flushed_scaled(hi, inv_g))
    a = tuple(jnp.abs(v) for v in xs)
    bmax = jnp.max(jnp.maximum(*a), axis=-1)
    sc = e4m3_code(jnp.clip(bmax * ref.SIXTH, F32(fp4.E4M3_MIN), F32(fp4.E4M3_MAX)))
    s = e4m3_value(sc)
    shape = lo.shape
    p = ref.err_unit(s)
    c = s * p
    cw, c5w, chw, pw = (_wide(v, shape) for v in (c, F32(5.0) * c, F32(0.5) * c, p))

    def signed_delta(av, xv):
        """sign(x) (k(-5) - k(FP4)) where near, else 0, as float32: the terms are integers below 2^16 and
        16 of them sum below 2^21, so float sums are exact (razer_xla's argument) and the integer term is a
        float ``floor`` (no saturating float -> int conversion)."""
        t = av * pw - c5w
        at = jnp.abs(t)
        delta = _sq_term_float(t) - _sq_term_float(cw - at)
        signed = fp4.f32_from_bits(fp4.f32_bits(delta) ^ (fp4.f32_bits(xv) & jnp.uint32(0x80000000)))
        return jnp.where(at < chw, signed, F32(0.0))

    score = jnp.sum(signed_delta(a[0], xs[0]), axis=-1) + jnp.sum(signed_delta(a[1], xs[1]), axis=-1)
    neg = score > F32(0.0)  # err(-5) < err(+5); +5 wins ties
    window_lo = _wide(jnp.where(neg, F32(-5.5) * s, F32(4.5) * s), shape)
    window_hi = _wide(jnp.where(neg, F32(-4.5) * s, F32(5.5) * s), shape)
    th = e2m1_thresholds(s, F32(0.0), shape)  # x is flushed: no floor
    minus_t025 = _wide(F32(-0.25) * s, shape)

    def nibble(xv, av, shift):
        use = (xv > window_lo) & (xv < window_hi)
        sign = jnp.where(xv < minus_t025, jnp.int32(8 << shift), jnp.int32(0))  # negative, magnitude > 0
        return jnp.where(use, jnp.int32(8 << shift), sign | _search_nibble(av, th, shift))

    byte = nibble(xs[0], a[0], 0) | nibble(xs[1], a[1], 4)
    return byte.reshape(x.shape[0], x.shape[1] // 2), sc | (neg.astype(jnp.uint32) << jnp.uint32(7))


def _search_bits(a, th):
    """(b2, b1, b0): the three comparisons of the E2M1 binary search over a block's thresholds."""
    t175, t35, t075, t5, t25, t125, t025 = th
    b2 = a >= t175
    b1 = a >= jnp.where(b2, t35, t075)
    b0 = a >= jnp.where(b2, jnp.where(b1, t5, t25), jnp.where(b1, t125, t025))
    return b2, b1, b0


def _magnitude(bits):
    b2, b1, b0 = bits
    i = jnp.int32
    return jnp.where(b2, i(4), i(0)) | jnp.where(b1, i(2), i(0)) | b0.astype(i)


def razer_weight_tile(x, inv_g):
    """RaZeR weight codes of a float32 tile ``(bm, bk)`` -> (packed bytes, scale bytes), bit-identical to
    ``reference.razer_weight_block_codes``. Per element: the E2M1 search at both candidate scales ``s6`` and
    ``s8`` (thresholds per block), each magnitude's value (:func:`e2m1_bits`) for the FP4 error term; a
    special-value candidate's term is ``k(t)`` of its own difference ``t = ap - v c`` where the element is near
    it (its FP4 term there is ``k(c - |t|)`` for +-5 and ``k(ap - 6 c)`` for +-8, so ``k + delta = k(t)``:
    ``reference._special_delta``), else the FP4 term; four int32 block sums, the first smallest wins; the codes
    reuse the chosen scale's search, and the special code 8 is a signed window per block."""
    lo, hi = halves(x, 16)
    xs = (_flushed_scaled(lo, inv_g), _flushed_scaled(hi, inv_g))
    a = tuple(jnp.abs(v) for v in xs)
    bmax = jnp.max(jnp.maximum(*a), axis=-1)
    sc6, sc8 = ref.e3m3_scale_code(bmax, 6.0), ref.e3m3_scale_code(bmax, 8.0)
    s6, s8 = e3m3_value(sc6), e3m3_value(sc8)
    shape = lo.shape
    p = ref.err_unit(s6)
    c6, c8 = s6 * p, s8 * p
    w = lambda v: _wide(v, shape)
    pw, c6w, c8w = w(p), w(c6), w(c8)
    c5w, chw, c8x8, mc8 = w(F32(5.0) * c6), w(F32(0.5) * c6), w(F32(8.0) * c8), w(-c8)
    th6, th8 = e2m1_thresholds(s6, F32(0.0), shape), e2m1_thresholds(s8, F32(0.0), shape)
    i = jnp.int32

    def fp4_term(ap, m, cw):
        return ref.sq_term(ap - fp4.f32_from_bits(e2m1_bits(m, None)) * cw)  # value * c = value * s * p, exact

    def half(av, xv):
        ap = av * pw
        m6, m8 = _magnitude(_search_bits(av, th6)), _magnitude(_search_bits(av, th8))
        k6, k8 = fp4_term(ap, m6, c6w), fp4_term(ap, m8, c8w)
        t5, t8 = ap - c5w, ap - c8x8
        near5, near8 = jnp.abs(t5) < chw, t8 > mc8
        pos = xv > F32(0.0)  # near => x is nonzero (and normal): its sign
        n5p, n8p = near5 & pos, near8 & pos
        q5, q8 = ref.sq_term(t5), ref.sq_term(t8)
        terms = (
            jnp.where(n5p, q5, k6),
            jnp.where(near5 ^ n5p, q5, k6),
            jnp.where(n8p, q8, k8),
            jnp.where(near8 ^ n8p, q8, k8),
        )
        return terms, m6, m8

    (t_lo, m6_lo, m8_lo), (t_hi, m6_hi, m8_hi) = half(a[0], xs[0]), half(a[1], xs[1])
    sums = [jnp.sum(u, axis=-1) + jnp.sum(v, axis=-1) for u, v in zip(t_lo, t_hi, strict=True)]
    idx = ref.first_min_index(sums)
    wide = idx >= jnp.uint32(2)
    s = jnp.where(wide, s8, s6)
    minus = (idx & jnp.uint32(1)) == jnp.uint32(1)
    inf = F32(np.inf)
    window_lo = w(jnp.where(wide, jnp.where(minus, -inf, F32(7.0) * s), jnp.where(minus, F32(-5.5) * s, F32(4.5) * s)))
    window_hi = w(jnp.where(wide, jnp.where(minus, F32(-7.0) * s, inf), jnp.where(minus, F32(-4.5) * s, F32(5.5) * s)))
    minus_t025, ww = w(F32(-0.25) * s), w(wide)

    def nibble(xv, m6, m8, shift):
        use = (xv > window_lo) & (xv < window_hi)
        code = jnp.where(xv < minus_t025, i(8), i(0)) | jnp.where(ww, m8, m6)  # sign only for magnitude > 0
        code = jnp.where(use, i(8), code)
        return code if shift == 0 else code << i(shift)

    byte = nibble(xs[0], m6_lo, m8_lo, 0) | nibble(xs[1], m6_hi, m8_hi, 4)
    return byte.reshape(x.shape[0], x.shape[1] // 2), jnp.where(wide, sc8, sc6) | (idx << jnp.uint32(6))


# ---------------------------------------------------------------------------------------------------------
# Dequantize
# ---------------------------------------------------------------------------------------------------------


def e2m1_bits(m, sign):
    """float32 bits of ``+-e2m1(m)`` for magnitude codes ``m`` (int32, 0..7) and ``sign`` (0 or bit 31; None:
    positive): a
    normal code (``m >= 2``) places its exponent and mantissa bits, ``(m << 22) + (126 << 23)``; codes 0 and 1
    are 0 and 0.5 (``m * bits(0.5)``). Five ops and the sign's or; no subnormal, no conversion."""
    i = jnp.int32
    normal = (m << i(22)) + i(0x3F000000)
    bits = jnp.where(m >= i(2), normal, m * i(0x3F000000))
    return bits if sign is None else bits | sign


def _scale_and_special(byte, fmt: str):
    """Per block: the scale (float32) and, for RaZeR, the bits of the special value that code 8 decodes to."""
    if fmt in ("nvfp4", "razer_activation"):
        s = e4m3_value(byte)
    elif fmt == "razer_weight":
        s = e3m3_value(byte)
    else:
        s = fp4.e8m0_decode(byte)
    sv = fp4.f32_bits(ref.razer_special_value(byte, fmt)).astype(jnp.int32) if fmt.startswith("razer") else None
    return s, sv


def dequantize_tile(p, byte, g, fmt: str):
    """Packed codes ``p`` (bm, bk / 2) uint8, scale bytes ``byte`` (bm, nb), global scale ``g`` (scalar; None:
    none, the W4A16 kernel's ``value * s_b``) -> float32 values (bm, bk) ``(value * s_b) * g``, bit-identical to
    ``reference.dequantize_blocks``: each
    packed byte's two nibbles are decoded apart (:func:`e2m1_bits`), RaZeR's code 8 (whose bits are -0.0)
    replaced by the block's special value, scaled (exact) and multiplied by g; the two halves are joined back
    in element order."""
    block = fp4.BLOCK_SIZE[fmt]
    bm, h = p.shape
    p = p.astype(jnp.int32).reshape(bm, 2 * h // block, block // 2)
    i = jnp.int32
    s, sv = _scale_and_special(byte, fmt)
    sw = _wide(s, p.shape)
    svw = None if sv is None else _wide(sv, p.shape)

    def value(m, sign):
        b = e2m1_bits(m, sign)
        if svw is not None:
            b = jnp.where(b == i(-(2**31)), svw, b)  # code 8 = -0.0: the special value
        v = fp4.f32_from_bits(b) * sw  # exact: <= 3 significant bits times <= 4
        return v if g is None else v * g

    lo = value(p & i(7), (p << i(28)) & i(-(2**31)))
    hi = value((p >> i(4)) & i(7), (p << i(24)) & i(-(2**31)))
    return jnp.stack([lo, hi], axis=-1).reshape(bm, 2 * h)
