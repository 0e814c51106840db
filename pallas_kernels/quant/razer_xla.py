"""RaZeR's XLA path (the public ops' ``implementation="xla"``): the rules of ``reference.py``, bit for bit, in a
layout that XLA:CPU compiles well. The Pallas kernels keep the reference's block functions.

Two passes over ``x`` after the global amax (the same count as NVFP4's block amax + codes passes):

A. *Scale pass*, vectorized across blocks: ``x`` viewed as (..., nb, 16) is read as 16 strided columns of shape
   (..., nb), so every per-block quantity (block amax, scale encode/decode, thresholds, the candidates' block
   errors, the choice) is an elementwise op over blocks and the "block sums" are 15 adds. One output: the
   scale byte (uint32; for the weight variant bit 8 flags a block outside the fast path's exact range).
   The reference instead sums over the last axis in a reduction fusion, which XLA:CPU neither fuses with the
   block amax nor vectorizes well once the per-element work is large (the weight variant: 3.5x NVFP4's time).
B. *Code pass*: NVFP4's code pass plus the special-value test, at the scale and sign decoded from the byte.

Exactness (why the bits equal the reference's). Error terms are the reference's integers ``k = int(fl(min(y^2,
2^26) + 1/2))`` kept as floats ``floor(...)`` (the ``min`` also stops FMA contraction of the square into the add,
as in ``reference._sq_term``). Float sums of integer-valued floats are exact while every partial sum stays below
2^24: activation terms enter only for elements near +-5 s (|t| < s p / 2 <= 128, terms < 2^16, 16 of them
< 2^20); weight terms are < 2^20 on every block with ``bmax p - 6 c8 < 1024`` (c = s p < 256; the farthest
element from its candidate's grid is at most max(c6, bmax p - 6 c8) away), which holds whenever the global
scale is the default ``amax / 168`` (bmax <= 168 (1 + 2^-23) < 8.5 s8 + ...; see :func:`weight_scale_words`).
A block outside that range (a caller's tiny ``global_scale``) sets bit 8 of its word and the whole tensor then
takes the reference path (``lax.cond``: paid only then). The FP4 values, thresholds and the near tests are the
reference's exact products and comparisons.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pallas_kernels.quant import fp4
from pallas_kernels.quant import reference as ref
from pallas_kernels.quant.fp4 import QuantizedArray

f32, u32 = np.float32, jnp.uint32
_CAP = f32(fp4.ERR_TERM_MAX)
_SAFE_RANGE = f32(1024.0)  # weight fast path: every element within 1024 error units of its candidates' grids


def _abs(v):
    """|v| by clearing the sign bit: not CSE-able with the global amax pass's ``jnp.abs(x)`` (XLA would then
    write |x| to memory for both consumers)."""
    return jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(v, u32) & u32(0x7FFFFFFF), jnp.float32)


def _scaled_abs(v, inv_g):
    """``|flush_subnormals(v)| * fl(1/g)``: the reference's ``a`` (``_abs_flushed(x) * inv_g``)."""
    av = _abs(v)
    return jnp.where(av < f32(fp4.F32_MIN_NORMAL), f32(0.0), av) * inv_g


def _columns(x):
    """x (..., K) -> 16 arrays (..., K/16): element i of every block."""
    xb = x.astype(jnp.float32).reshape(*x.shape[:-1], x.shape[-1] // 16, 16)
    return [xb[..., i] for i in range(16)]


def _block_amax(a):
    m = a[0]
    for v in a[1:]:
        m = jnp.maximum(m, v)
    return m


def _sq(t):
    """The reference's error term of a difference ``t`` (in error units) as an integer-valued float."""
    return jnp.floor(jnp.minimum(t * t, _CAP) + f32(0.5))


def _fp4_term(u, c):
    """Error term of ``u`` (>= 0, error units) rounded to the E2M1 grid of unit ``c``, in two comparisons with
    exact midpoint products: ``u >= 1.75 c`` picks the upper grid {2, 3, 4, 6} c, shifted by 2 c to {0, 1, 2, 4} c
    (``u - 2 c`` exact: Sterbenz below 4 c, above it 2 c is a multiple of ulp(u) in the fast path's range), or
    the lower grid {0, .5, 1, 1.5} c, doubled to {0, 1, 2, 3} c (exact); ``v >= 1.5 c`` then leaves two
    neighbours L < H, and the nearer one's difference (a tie: equal magnitudes, the same term) is the
    reference's ``fl(u - q c)`` times 1 or 2."""
    b2 = u >= f32(1.75) * c
    v = jnp.where(b2, u - f32(2.0) * c, u + u)
    b1 = v >= f32(1.5) * c
    lo = jnp.where(b1, f32(2.0) * c, f32(0.0))
    hi = jnp.where(b1, jnp.where(b2, f32(4.0) * c, f32(3.0) * c), c)
    d_lo, d_hi = v - lo, v - hi
    d = jnp.where(jnp.abs(d_lo) <= jnp.abs(d_hi), d_lo, d_hi)
    return _sq(d * jnp.where(b2, f32(1.0), f32(0.5)))


def activation_scale_bytes(x, inv_g):
    """Pass A of the activation variant: x (..., K) -> scale bytes (..., K/16) uint32 (E4M3 | (-5 chosen) << 7).

    Per block: ``err(-5) < err(+5)`` iff ``sum_near sign(x_i) (k_5,i - k_fp4,i) > 0``
    (``reference.razer_activation_block_codes``)."""
    cols = _columns(x)
    a = [_scaled_abs(v, inv_g) for v in cols]
    sc = ref.nvfp4_scale_code(_block_amax(a))
    s = fp4.e4m3_decode(sc)
    p = ref._err_unit(s)
    c = s * p
    acc = f32(0.0)
    for v, av in zip(cols, a, strict=True):
        t = av * p - f32(5.0) * c
        at = jnp.abs(t)
        delta = _sq(t) - _sq(c - at)
        acc = acc + jnp.where(at < f32(0.5) * c, jnp.where(v > f32(0.0), delta, -delta), f32(0.0))
    return sc | ((acc > f32(0.0)).astype(u32) << u32(7))


def weight_scale_words(x, inv_g):
    """Pass A of the weight variant: x (..., K) -> uint32 (..., K/16): the scale byte (E3M3 | index << 6) and
    bit 8 set where the block is outside the fast path's exact range.

    The four candidates' block errors (+5, -5 at s6; +8, -8 at s8) as the FP4 terms at both scales with the
    special value's term swapped in for the near elements of its sign (``reference.razer_weight_block_codes``);
    the first smallest wins."""
    cols = _columns(x)
    a = [_scaled_abs(v, inv_g) for v in cols]
    bmax = _block_amax(a)
    sc6, sc8 = ref._e3m3_scale_code(bmax, 6.0), ref._e3m3_scale_code(bmax, 8.0)
    s6, s8 = fp4.e3m3_decode(sc6), fp4.e3m3_decode(sc8)
    p = ref._err_unit(s6)
    c6, c8 = s6 * p, s8 * p
    # s8 <= s6, so c8 <= c6 < 256: every term < 1024^2 = 2^20 below this bound (the float sums are exact)
    unsafe = bmax * p - f32(6.0) * c8 >= _SAFE_RANGE
    err = [f32(0.0)] * 4
    for v, av in zip(cols, a, strict=True):
        u = av * p
        k6, k8 = _fp4_term(u, c6), _fp4_term(u, c8)
        t5, t8 = u - f32(5.0) * c6, u - f32(8.0) * c8
        near5, near8 = jnp.abs(t5) < f32(0.5) * c6, t8 > -c8
        s5, s8v = _sq(t5), _sq(t8)
        pos, neg = v > f32(0.0), v < f32(0.0)
        err[0] = err[0] + jnp.where(near5 & pos, s5, k6)
        err[1] = err[1] + jnp.where(near5 & neg, s5, k6)
        err[2] = err[2] + jnp.where(near8 & pos, s8v, k8)
        err[3] = err[3] + jnp.where(near8 & neg, s8v, k8)
    idx = ref._first_min_index(err)
    byte = jnp.where(idx >= u32(2), sc8, sc6) | (idx << u32(6))
    return byte | (unsafe.astype(u32) << u32(8))


def _codes(x, inv_g, s, lo, hi, sgn):
    """Pass B: packed codes (..., K/2) uint8. Per block (..., nb): scale s, the special value's window
    ``lo < a < hi`` and its sign ``sgn`` (+-1). Per-block values enter only through arithmetic (a select on a
    per-block flag becomes a branch in XLA:CPU's loop, mispredicted on random data)."""
    xb = x.astype(jnp.float32).reshape(*x.shape[:-1], x.shape[-1] // 16, 16)
    s, lo, hi, sgn = (v[..., None] for v in (s, lo, hi, sgn))
    a = _scaled_abs(xb, inv_g)
    m = fp4.e2m1_magnitude_code_scaled(a, s)
    use = (a > lo) & (a < hi) & (xb * sgn > f32(0.0))
    return fp4.pack_nibbles(ref._razer_codes(xb, m, use).reshape(x.shape))


def _sign_of(bit):
    return f32(1.0) - f32(2.0) * bit.astype(jnp.float32)


def activation_codes(x, inv_g, byte):
    """Pass B of the activation variant: the codes for the scale bytes ``byte``."""
    s = fp4.e4m3_decode(byte)
    return _codes(x, inv_g, s, f32(4.5) * s, f32(5.5) * s, _sign_of(byte >> u32(7)))


def weight_codes(x, inv_g, byte):
    """Pass B of the weight variant (fast path only: every a is finite and far below 2^100 s)."""
    s = fp4.e3m3_decode(byte)
    idx = (byte >> u32(6)) & u32(3)
    wide = (idx >> u32(1)).astype(jnp.float32)  # +-8: near iff a > 7 s; +-5: 4.5 s < a < 5.5 s
    lo = s * (f32(4.5) + f32(2.5) * wide)
    hi = s * (f32(5.5) + f32(2.0**100) * wide)
    return _codes(x, inv_g, s, lo, hi, _sign_of(idx & u32(1)))


def _packed(x, codes, byte, g, fmt: str) -> QuantizedArray:
    return QuantizedArray(
        codes=codes,
        scales=(byte & u32(0xFF)).astype(jnp.uint8),
        global_scale=g,
        shape=tuple(x.shape),
        format=fmt,
        block_size=16,
    )


def razer_quantize(x, variant: str = "activation", global_scale=None) -> QuantizedArray:
    """Same result as :func:`reference.razer_quantize`, bit for bit (see the module docstring)."""
    x = jnp.asarray(x)
    denom = ref.NVFP4_GLOBAL_MAX if variant == "activation" else ref.RAZER_WEIGHT_GLOBAL_MAX
    if global_scale is None:
        global_scale = ref.global_scale_from_amax(jnp.max(_abs(x.astype(jnp.float32))), denom)
    g = jnp.asarray(global_scale, jnp.float32)
    inv_g = ref.reciprocal(g)
    if variant == "activation":
        byte = jax.lax.optimization_barrier(activation_scale_bytes(x, inv_g))
        return _packed(x, activation_codes(x, inv_g, byte), byte, g, "razer_activation")
    words = jax.lax.optimization_barrier(weight_scale_words(x, inv_g))
    return jax.lax.cond(
        jnp.any(words > u32(0xFF)),
        lambda: ref.razer_quantize(x, "weight", g),
        lambda: _packed(x, weight_codes(x, inv_g, words), words, g, "razer_weight"),
    )
