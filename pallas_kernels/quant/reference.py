"""Pure-jnp reference quantizers: the specification of every format, and the XLA fallback of the public ops.

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

import jax.numpy as jnp
import numpy as np

from pallas_kernels.quant import fp4
from pallas_kernels.quant.fp4 import QuantizedArray

NVFP4_GLOBAL_MAX = 448.0 * 6.0
RAZER_WEIGHT_GLOBAL_MAX = 6.0 * 28.0
RAZER_WEIGHT_SPECIALS = (5.0, -5.0, 8.0, -8.0)
RAZER_WEIGHT_QMAX = (6.0, 6.0, 8.0, 8.0)


def _blocks(x, block: int):
    x = jnp.asarray(x).astype(jnp.float32)
    return x.reshape(*x.shape[:-1], x.shape[-1] // block, block)


def global_scale_from_amax(amax, denom: float):
    """FP32 global scale ``max(amax / denom, 2^-126)`` (the floor keeps all-zero and tiny inputs finite)."""
    return jnp.maximum(jnp.asarray(amax, jnp.float32) / np.float32(denom), np.float32(fp4.F32_MIN_NORMAL))


def reciprocal(g):
    """fl32(1/g): the quantizers multiply by it (one IEEE multiply per element, identical on every backend;
    XLA would rewrite ``x / g`` into exactly this anyway, and a Triton division need not be correctly
    rounded)."""
    return np.float32(1.0) / jnp.asarray(g, jnp.float32)


# ---------------------------------------------------------------------------------------------------------
# Shared block math (also called from inside the kernels, on 2-D tiles viewed as (rows, nblocks, B))
# ---------------------------------------------------------------------------------------------------------


SIXTH = np.float32(1.0 / 6.0)  # fl32(1/6): the block scale is bmax * fl(1/6), a single IEEE multiply


def nvfp4_scale_code(bmax):
    """Block amax (of x * r) -> E4M3 scale code: RNE( clip(bmax * fl(1/6), 2^-9, 448) )."""
    return fp4.e4m3_encode(jnp.clip(bmax * SIXTH, np.float32(fp4.E4M3_MIN), np.float32(fp4.E4M3_MAX)))


def nvfp4_block_codes(xb, inv_g):
    """xb: (..., nb, 16) float, inv_g = fl(1/g) -> (codes (..., nb, 16), scale codes (..., nb)), uint32."""
    xs = fp4.flush_subnormals(xb) * inv_g
    sc = nvfp4_scale_code(jnp.max(jnp.abs(xs), axis=-1))
    return fp4.e2m1_encode_scaled(xs, fp4.e4m3_decode(sc)[..., None]), sc


def mxfp4_block_codes(xb):
    """xb: (..., nb, 32) float -> (codes, E8M0 scale codes); v = x * 2^(127 - code) is exact."""
    xb = fp4.flush_subnormals(xb)
    sc = fp4.e8m0_code_for_amax(jnp.max(jnp.abs(xb), axis=-1))
    return fp4.e2m1_encode(xb * fp4.e8m0_reciprocal(sc)[..., None]), sc


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


def _razer_codes(xs, m, use):
    """Element codes: 0x8 for the special value, +0 for zeros, sign | magnitude otherwise."""
    sign = jnp.where((xs < 0) & (m > 0), jnp.uint32(8), jnp.uint32(0))
    return jnp.where(use, jnp.uint32(8), sign | m)


def _err_terms(d, p, *, cap: bool = True):
    """Per-element integer error terms of :func:`fp4.block_sq_err` (before the block sum). ``cap=False``
    skips the saturation, valid where ``|d p| < 2^6`` (elements within a few scale units of their value)."""
    e = jnp.square(d.astype(jnp.float32) * p)
    k = (e * np.float32(1 << fp4.ERR_FRACTION_BITS) + np.float32(0.5)).astype(jnp.int32)
    if not cap:
        return k
    k = jnp.where(e >= np.float32(fp4.ERR_TERM_MAX >> fp4.ERR_FRACTION_BITS), jnp.int32(fp4.ERR_TERM_MAX), k)
    return jnp.minimum(k, jnp.int32(fp4.ERR_TERM_MAX))


def _special_gains(xs, a, near, k0, sv: float, s, p):
    """Block sums of ``k(fp4) - k(special)`` over the ``near`` elements of each sign (see
    :func:`razer_activation_block_codes`). ``k0``: the FP4 terms (or None: computed here for near elements,
    whose FP4 value is 4 s if |xs| <= 5 s else 6 s)."""
    if k0 is None:
        four_or_six = jnp.where(a > np.float32(5.0) * s, np.float32(6.0), np.float32(4.0))
        k0 = _err_terms(a - four_or_six * s, p, cap=False)
    gain = jnp.where(near, k0 - _err_terms(a - np.float32(sv) * s, p, cap=False), 0)
    gp = jnp.sum(jnp.where(xs > 0, gain, 0), axis=-1)
    gn = jnp.sum(jnp.where(xs < 0, gain, 0), axis=-1)
    return gp, gn


def razer_activation_block_codes(xb, inv_g):
    """RaZeR activation variant on blocks xb (..., nb, 16): (codes uint32, scale bytes uint32).

    Fast form of two :func:`_razer_choose` calls (bit-identical). An element can only take the special value
    of its own sign (0 is an FP4 value, so one of the other sign is always farther than its FP4 rounding),
    and for it both candidates are the same test: |xs| strictly closer to 5 s than to its FP4 rounding |q| s,
    which (RNE, 5 s rounds to 4 s) is exactly ``4.5 s < |xs| < 5.5 s``, with the same special-value term
    ``|xs| - 5 s``. So ``err(+5) - err(-5) = gain(xs < 0) - gain(xs > 0)``, gain = k(fp4) - k(special) summed
    over the near elements of that sign (exact integer sums, same choice as comparing the block errors)."""
    xs = fp4.flush_subnormals(xb) * inv_g
    a = jnp.abs(xs)
    sc = nvfp4_scale_code(jnp.max(a, axis=-1))
    s = fp4.e4m3_decode(sc)[..., None]
    p = fp4.pow2_reciprocal(s)
    m = fp4.e2m1_magnitude_code_scaled(a, s)
    near = (a > np.float32(4.5) * s) & (a < np.float32(5.5) * s)
    gp, gn = _special_gains(xs, a, near, None, 5.0, s, p)
    neg = gn > gp  # err(-5) < err(+5)
    use = near & jnp.where(neg[..., None], xs < 0, xs > 0)
    return _razer_codes(xs, m, use), sc | (neg.astype(jnp.uint32) << jnp.uint32(7))


def _e3m3_scale_code(bmax, qmax: float):
    return fp4.e3m3_encode(jnp.clip(bmax * np.float32(1.0 / qmax), np.float32(fp4.E3M3_MIN), np.float32(fp4.E3M3_MAX)))


def razer_weight_candidate(xs, bmax, idx: int, allow_special: bool = True):
    """One weight-variant candidate (special value RAZER_WEIGHT_SPECIALS[idx]) -> (err, codes, scale byte).
    Errors of all candidates share the unit p = pow2_reciprocal(s_b(6)) so they compare across scales.
    ``allow_special=False`` gives plain FP4 with the same E3M3 scale (the baseline of the guarantee)."""
    sv, qmax = RAZER_WEIGHT_SPECIALS[idx], RAZER_WEIGHT_QMAX[idx]
    p = fp4.pow2_reciprocal(fp4.e3m3_decode(_e3m3_scale_code(bmax, 6.0)))[..., None]
    sc = _e3m3_scale_code(bmax, qmax)
    m, use, err = _razer_choose(xs, fp4.e3m3_decode(sc)[..., None], sv if allow_special else None, p)
    return err, _razer_codes(xs, m, use), sc | jnp.uint32(idx << 6)


def razer_weight_block_codes(xb, inv_g):
    """RaZeR weight variant on blocks xb (..., nb, 16): (codes uint32, scale bytes uint32).

    The four candidates of :func:`razer_weight_candidate` (first wins ties) in the fast form of
    :func:`razer_activation_block_codes` (bit-identical): +-5 at s_b(6) (near: ``4.5 s < |xs| < 5.5 s``), +-8
    at s_b(8) (FP4 values are <= 6 < 8, so near: ``|xs| > 7 s``); err = plain-FP4 block error minus the gain."""
    xs = fp4.flush_subnormals(xb) * inv_g
    a = jnp.abs(xs)
    bmax = jnp.max(a, axis=-1)
    sc6, sc8 = _e3m3_scale_code(bmax, 6.0), _e3m3_scale_code(bmax, 8.0)
    s6, s8 = fp4.e3m3_decode(sc6)[..., None], fp4.e3m3_decode(sc8)[..., None]
    p = fp4.pow2_reciprocal(s6)
    m6 = fp4.e2m1_magnitude_code_scaled(a, s6)
    m8 = fp4.e2m1_magnitude_code_scaled(a, s8)
    k6 = _err_terms(a - fp4.e2m1_magnitude_value(m6) * s6, p)
    k8 = _err_terms(a - fp4.e2m1_magnitude_value(m8) * s8, p)
    near6 = (a > np.float32(4.5) * s6) & (a < np.float32(5.5) * s6)
    near8 = a > np.float32(7.0) * s8
    gp6, gn6 = _special_gains(xs, a, near6, k6, 5.0, s6, p)
    gp8, gn8 = _special_gains(xs, a, near8, k8, 8.0, s8, p)
    z6, z8 = jnp.sum(k6, axis=-1), jnp.sum(k8, axis=-1)
    errs = (z6 - gp6, z6 - gn6, z8 - gp8, z8 - gn8)
    best, idx = errs[0], jnp.zeros(bmax.shape, jnp.uint32)
    for i in (1, 2, 3):
        better = errs[i] < best
        best, idx = jnp.where(better, errs[i], best), jnp.where(better, jnp.uint32(i), idx)
    wide = (idx >= jnp.uint32(2))[..., None]
    want_neg = ((idx & jnp.uint32(1)) == jnp.uint32(1))[..., None]
    use = jnp.where(wide, near8, near6) & jnp.where(want_neg, xs < 0, xs > 0)
    codes = _razer_codes(xs, jnp.where(wide, m8, m6), use)
    return codes, jnp.where(wide[..., 0], sc8, sc6) | (idx << jnp.uint32(6))


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


def nvfp4_quantize(x, global_scale=None) -> QuantizedArray:
    """NVFP4 reference. ``global_scale`` defaults to ``max(amax/2688, 2^-126)``."""
    x = jnp.asarray(x)
    if global_scale is None:
        global_scale = global_scale_from_amax(jnp.max(jnp.abs(x)), NVFP4_GLOBAL_MAX)
    g = jnp.asarray(global_scale, jnp.float32)
    codes, sc = nvfp4_block_codes(_blocks(x, 16), reciprocal(g))
    return _pack(x, codes, sc, g, "nvfp4")


def mxfp4_quantize(x) -> QuantizedArray:
    x = jnp.asarray(x)
    codes, sc = mxfp4_block_codes(_blocks(x, 32))
    return _pack(x, codes, sc, 1.0, "mxfp4")


def razer_quantize(x, variant: str = "activation", global_scale=None) -> QuantizedArray:
    x = jnp.asarray(x)
    if variant == "activation":
        denom, fn, fmt = NVFP4_GLOBAL_MAX, razer_activation_block_codes, "razer_activation"
    else:
        denom, fn, fmt = RAZER_WEIGHT_GLOBAL_MAX, razer_weight_block_codes, "razer_weight"
    g = global_scale_from_amax(jnp.max(jnp.abs(x)), denom) if global_scale is None else global_scale
    g = jnp.asarray(g, jnp.float32)
    codes, sc = fn(_blocks(x, 16), reciprocal(g))
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
    accumulation (HIGHEST precision); every product is exact in float32."""
    out_dtype = out_dtype or x.dtype
    wv = dequantized_weight_unscaled(w)
    xb = x.astype(jnp.bfloat16).astype(jnp.float32)
    acc = jnp.einsum("...k,nk->...n", xb, wv, precision="highest")
    return (acc * w.global_scale).astype(out_dtype)
