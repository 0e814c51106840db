"""Pure-jnp reference quantizers: the specification of every format, and the XLA fallback of the public ops.

All functions take a float array ``x`` of shape ``(..., K)`` (``K`` a multiple of the block size ``B``) and
work on blocks of ``B`` consecutive elements along the last axis. Notation (per block ``b``, element ``i``):

NVFP4 (B = 16)
    g        = max(amax(|x|) / (448 * 6), 2^-126)                  FP32 global scale (floor avoids 0 / inf)
    xs_i     = x_i / g                                                 (float32 division)
    s_b      = E4M3( clip(max_i |xs_i| / 6, 2^-9, 448) )                RNE; stored as the E4M3 byte
    v_i      = xs_i / s_b                                               (float32 division)
    c_i      = E2M1(v_i)                                                RNE, saturating at +-6, sign kept
    x_hat_i  = (e2m1(c_i) * s_b) * g
  This is operation for operation the ``jax.nn.get_scaled_dot_general_config("nvfp4", g)`` quantizer (which
  divides by ``g`` first, then takes the block amax), except that jax.nn clamps the block scale at 0
  instead of 2^-9: a block whose scale underflows E4M3 gives 0/0 = NaN there and code 0 with scale 2^-9 here.

MXFP4 (B = 32)
    s_b      = 2^(E8M0 round-up of amax_b / 6)      (the jax.nn ``mxfp4`` rule: the scale is rounded up, so
    v_i      = x_i / s_b                              |v_i| <= 6 and nothing clips)
    c_i      = E2M1(v_i),     x_hat_i = e2m1(c_i) * s_b.          ``global_scale`` is 1.

RaZeR, activation variant (B = 16): NVFP4's g and s_b, plus one special value ``sv_b in {+5, -5}`` per block
  stored in the (always free) sign bit of the E4M3 scale byte and decoded from the (redundant) code 0x8 (-0).
    q_i      = e2m1(E2M1(v_i)),  element i takes sv when |v_i - sv| < |v_i - q_i|  (strictly closer; a tie
               keeps the FP4 value, as the spec sentence "closer to it than to its FP4 rounding" says)
    err(sv)  = sum_i (v_i - chosen_i)^2   (float32, block order); sv = -5 iff err(-5) < err(+5)
  Zeros are coded +0 (0x0) because 0x8 is the special value.

RaZeR, weight variant (B = 16): special values (+5, -5, +8, -8), index in bits 6..7 of the scale byte,
  6-bit E3M3 block scale in bits 0..5, global scale g = max(amax / (6 * 28), 2^-126).  As in the authors' code
  (yc2367/NVFP4-RaZeR, ``quant_nvfp4_razer_e3m3``) the block scale depends on the candidate: it maps the block
  amax onto the candidate's largest magnitude (6 for +-5, 8 for +-8):
    s_b(sv)  = E3M3( clip(max_i |xs_i| / qmax(sv), 2^-5, 28) )
    v_i(sv)  = xs_i / s_b(sv);  chosen_i as above;  err(sv) = s_b(sv)^2 * sum_i (v_i(sv) - chosen_i)^2
  and the candidate with the smallest err wins (first in the order +5, -5, +8, -8 on ties). Difference from
  the authors' simulation: they clamp to [2^-5, 28] and then cast to *E4M3*, which keeps 3 mantissa bits
  below 2^-2; we store a true 6-bit E3M3 (bias 3, subnormals below 2^-2), so 6 + 2 bits fill the byte exactly.

Rounding choice: all formats round to nearest, ties to even (RNE, the ml_dtypes / hardware rule). The RaZeR
authors' code sends ties *down* in magnitude (``<= mid``); the two differ only on exact midpoints
(|v| in {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}); tests pin the RNE choice on every midpoint.

The "by construction" guarantee (tested): for the activation variant each element's error |v_i - chosen_i|
is <= its NVFP4 error |v_i - q_i| (same g and s_b), so RaZeR's block MSE <= NVFP4's exactly. For the weight
variant the +5/-5 candidates share s_b(6) with plain FP4 under the same E3M3 scale, so the chosen err (as
computed here, in float32) is <= plain FP4's err with that scale; it is *not* comparable block by block to
NVFP4 proper, whose g and E4M3 scale differ.
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


# ---------------------------------------------------------------------------------------------------------
# Shared block math (also called from inside the kernels, on 2-D tiles viewed as (rows, nblocks, B))
# ---------------------------------------------------------------------------------------------------------


def nvfp4_block_codes(xb, g):
    """xb: (..., nb, B) float32, g: scalar -> (codes (..., nb, B) uint32, scale codes (..., nb) uint32)."""
    xs = xb / g
    bmax = jnp.max(jnp.abs(xs), axis=-1)
    sc = fp4.e4m3_encode(jnp.clip(bmax / np.float32(6.0), np.float32(fp4.E4M3_MIN), np.float32(fp4.E4M3_MAX)))
    s = fp4.e4m3_decode(sc)
    return fp4.e2m1_encode(xs / s[..., None]), sc


def mxfp4_block_codes(xb):
    """xb: (..., nb, 32) float32 -> (codes, E8M0 scale codes)."""
    bmax = jnp.max(jnp.abs(xb), axis=-1)
    sc = fp4.e8m0_encode_round_up(bmax / np.float32(6.0))
    s = fp4.e8m0_decode(sc)
    return fp4.e2m1_encode(xb / s[..., None]), sc


def _razer_choose(v, sv):
    """Per element: FP4 magnitude code, its value, and whether sv is strictly closer. v: (..., B)."""
    m = fp4.e2m1_magnitude_code(jnp.abs(v))
    q = jnp.where(v < 0, -fp4.e2m1_magnitude_value(m), fp4.e2m1_magnitude_value(m))
    use = jnp.abs(v - np.float32(sv)) < jnp.abs(v - q)
    err = jnp.sum(jnp.where(use, (v - np.float32(sv)) ** 2, (v - q) ** 2), axis=-1)
    return m, use, err


def _razer_codes(v, m, use):
    """Element codes: 0x8 for the special value, +0 for zeros, sign | magnitude otherwise."""
    sign = jnp.where((v < 0) & (m > 0), jnp.uint32(8), jnp.uint32(0))
    return jnp.where(use, jnp.uint32(8), sign | m)


def razer_activation_block_codes(xb, g):
    """RaZeR activation variant on blocks xb (..., nb, 16): (codes uint32, scale bytes uint32)."""
    xs = xb / g
    bmax = jnp.max(jnp.abs(xs), axis=-1)
    sc = fp4.e4m3_encode(jnp.clip(bmax / np.float32(6.0), np.float32(fp4.E4M3_MIN), np.float32(fp4.E4M3_MAX)))
    v = xs / fp4.e4m3_decode(sc)[..., None]
    m, use_p, err_p = _razer_choose(v, 5.0)
    _, use_n, err_n = _razer_choose(v, -5.0)
    neg = err_n < err_p
    use = jnp.where(neg[..., None], use_n, use_p)
    return _razer_codes(v, m, use), sc | (neg.astype(jnp.uint32) << jnp.uint32(7))


def razer_weight_block_codes(xb, g):
    """RaZeR weight variant on blocks xb (..., nb, 16): (codes uint32, scale bytes uint32)."""
    xs = xb / g
    bmax = jnp.max(jnp.abs(xs), axis=-1)
    best = None
    for idx, (sv, qmax) in enumerate(zip(RAZER_WEIGHT_SPECIALS, RAZER_WEIGHT_QMAX, strict=True)):
        clipped = jnp.clip(bmax / np.float32(qmax), np.float32(fp4.E3M3_MIN), np.float32(fp4.E3M3_MAX))
        sc = fp4.e3m3_encode(clipped)
        s = fp4.e3m3_decode(sc)
        v = xs / s[..., None]
        m, use, err = _razer_choose(v, sv)
        err = (s * s) * err
        codes = _razer_codes(v, m, use)
        byte = sc | jnp.uint32(idx << 6)
        if best is None:
            best = (err, codes, byte)
        else:
            better = err < best[0]
            best = (jnp.where(better, err, best[0]), jnp.where(better[..., None], codes, best[1]),
                    jnp.where(better, byte, best[2]))
    return best[1], best[2]


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
    return QuantizedArray(codes=fp4.pack_nibbles(codes), scales=sc.astype(jnp.uint8),
                          global_scale=jnp.asarray(g, jnp.float32), shape=tuple(x.shape), format=fmt,
                          block_size=fp4.BLOCK_SIZE[fmt])


def nvfp4_quantize(x, global_scale=None) -> QuantizedArray:
    """NVFP4 reference. ``global_scale`` defaults to ``max(amax/2688, 2^-126)``."""
    x = jnp.asarray(x)
    if global_scale is None:
        global_scale = global_scale_from_amax(jnp.max(jnp.abs(x)), NVFP4_GLOBAL_MAX)
    g = jnp.asarray(global_scale, jnp.float32)
    codes, sc = nvfp4_block_codes(_blocks(x, 16), g)
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
    codes, sc = fn(_blocks(x, 16), g)
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

    Computed as ``(x_f32 @ (value * s_b).T) * g`` with float32 accumulation (HIGHEST precision)."""
    out_dtype = out_dtype or x.dtype
    wv = dequantized_weight_unscaled(w)
    acc = jnp.einsum("...k,nk->...n", x.astype(jnp.float32), wv, precision="highest")
    return (acc * w.global_scale).astype(out_dtype)
