"""NVFP4, MXFP4 and RaZeR round trips written from the formats' rules with NumPy and ``ml_dtypes``: an independent
decoder for the kernels of ``jaxwb.pallas_kernels.quant`` (it imports nothing from them).

Rules (OCP MX spec v1.0 for E2M1/E8M0; NVIDIA's NVFP4: E4M3 block scale over 16 values and an FP32 global scale;
RaZeR, NeurIPS 2026: the redundant code -0 of each block remapped to a special value; the rounding and error
conventions that make a choice reproducible are those stated in the module docstring of
``pallas_kernels/quant/reference.py``, here re-derived without its code):

* E2M1 values and round-to-nearest-even with saturation at +-6: ``ml_dtypes.float4_e2m1fn`` (a cast of the exact
  quotient, computed in float64, where it is exact or on the same side of every midpoint);
* E4M3 block scales: ``ml_dtypes.float8_e4m3fn`` (RNE); E8M0: the exponent ``ceil(log2(amax / 6))`` from
  ``np.frexp``; E3M3 (RaZeR weight scales, bias 3, no ml_dtypes type): nearest entry of the table of its 64
  values, ties to the even code;
* global scale ``g = max(fl(amax / denom), 2^-126)``, ``xs = fl(x fl(1/g))``, ``x_hat = fl(fl(v s) g)``;
* RaZeR: an element takes the block's special value ``sv`` iff strictly closer to ``sv s`` than to its E2M1
  rounding; the block's candidate is the one of least error ``sum_i floor(fl(fl((d_i p)^2) 2^14) + 1/2)`` (terms
  capped at 2^26; ``d_i = fl(|xs_i| - |v_i| s)``, ``p = 2^-floor(log2 s)``, of ``s(6)`` for the weight variant),
  the first on ties.

Every function takes ``x`` float (..., K) and returns ``x_hat`` float32 (..., K), the values the format decodes.
"""

from __future__ import annotations

import jax.numpy as jnp  # its float4_e2m1fn / float8_e4m3fn are ml_dtypes' types (jax's dependency)
import numpy as np
from jaxtyping import Float

F32 = np.float32
MIN_NORMAL = F32(2.0**-126)
NVFP4_DENOM = 448.0 * 6.0  # E4M3 max x E2M1 max
RAZER_WEIGHT_DENOM = 6.0 * 28.0  # E2M1 max x the clamp of the E3M3 scales
RAZER_WEIGHT_CANDIDATES = ((5.0, 6.0), (-5.0, 6.0), (8.0, 8.0), (-8.0, 8.0))  # (special value, qmax)


def flushed(x: Float[np.ndarray, "*b K"]) -> Float[np.ndarray, "*b K"]:
    """float32 ``x`` with float32 subnormals (|x| < 2^-126) set to +0."""
    x = np.asarray(x, dtype=F32)
    return np.where(np.abs(x) < MIN_NORMAL, F32(0.0), x)


def e2m1(q: Float[np.ndarray, "*b"]) -> Float[np.ndarray, "*b"]:
    """float64 quotients -> their E2M1 values (float32): RNE, saturating at +-6 (``ml_dtypes``' cast, re-exported
    by jax as ``jnp.float4_e2m1fn``)."""
    return np.clip(np.asarray(q, np.float64), -6.0, 6.0).astype(jnp.float4_e2m1fn).astype(F32)


def e4m3(t: Float[np.ndarray, "*b"]) -> Float[np.ndarray, "*b"]:
    """Positive float32 in [2^-9, 448] -> the nearest E4M3 value (RNE), as float32."""
    return np.asarray(t, F32).astype(jnp.float8_e4m3fn).astype(F32)


def e3m3_values() -> Float[np.ndarray, " codes"]:
    """The 64 values of unsigned E3M3 (3 exponent bits, bias 3, 3 mantissa bits), by code: ``m/8 2^-2`` for
    exponent field 0, ``2^(e-3) (1 + m/8)`` otherwise."""
    code = np.arange(64)
    field, mant = code >> 3, code & 7
    return np.where(field > 0, 2.0 ** (field - 3.0) * (1.0 + mant / 8.0), mant / 8.0 * 2.0**-2)


def e3m3(t: Float[np.ndarray, "*b"]) -> Float[np.ndarray, "*b"]:
    """Positive float32 ``t`` in [2^-5, 28] -> the nearest E3M3 value, ties to the even code (float32)."""
    table = e3m3_values()
    t = np.asarray(t, np.float64)
    hi = np.clip(np.searchsorted(table, t), 1, 63)
    lo = hi - 1
    d_lo, d_hi = t - table[lo], table[hi] - t
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    return table[np.where(pick_hi, hi, lo)].astype(F32)


def global_scaled(x: Float[np.ndarray, "*b K"], denom: float) -> tuple[np.ndarray, np.float32]:
    """(xs = fl(flush(x) fl(1/g)), g) with ``g = max(fl(amax / denom), 2^-126)`` (IEEE float32 division)."""
    x = flushed(x)
    g = max(F32(np.max(np.abs(x))) / F32(denom), MIN_NORMAL)
    return x * (F32(1.0) / g), F32(g)


def error_unit(s: Float[np.ndarray, "*b"]) -> Float[np.ndarray, "*b"]:
    """``p = 2^-floor(log2 s)`` for positive float32 s."""
    _, ex = np.frexp(np.asarray(s, np.float64))
    return np.ldexp(1.0, 1 - ex).astype(F32)


def block_error(xs, v, s, p) -> np.ndarray:
    """Integer block error of the values ``v`` (..., nb, B) at scale ``s`` (..., nb, 1) in units ``p``:
    ``sum_i floor(fl(fl(min(y_i^2, 2^12)) 2^14) + 1/2)``, ``y_i = fl(|xs_i| - |v_i| s) p`` (int64 (..., nb))."""
    d = np.abs(xs) - np.abs(v) * s  # float32: |v| s is exact, the difference rounded once
    e = np.minimum((d * p) ** 2, F32(4096.0))
    return np.floor(e * F32(16384.0) + F32(0.5)).astype(np.int64).sum(-1)


def with_special(xs, s, sv: float) -> tuple[np.ndarray, np.ndarray]:
    """(values, where the special value sv is used) for blocks ``xs`` (..., nb, B) at scale ``s`` (..., nb, 1):
    an element takes sv iff |xs - sv s| < |xs - v s| for its E2M1 value v (float64: exact here)."""
    x64, s64 = xs.astype(np.float64), s.astype(np.float64)
    v = e2m1(x64 / s64)
    use = np.abs(x64 - sv * s64) < np.abs(x64 - v.astype(np.float64) * s64)
    return np.where(use, F32(sv), v), use


def blocks(x, size: int) -> np.ndarray:
    x = np.asarray(x, F32)
    if x.ndim < 1 or x.shape[-1] % size:
        raise ValueError(f"x.shape[-1] must be a multiple of the block size {size}, got shape {x.shape}")
    return x.reshape(*x.shape[:-1], x.shape[-1] // size, size)


def nvfp4_roundtrip(x: Float[np.ndarray, "*b K"]) -> Float[np.ndarray, "*b K"]:
    """NVFP4: blocks of 16, ``s = E4M3(clip(fl(amax_b fl(1/6)), 2^-9, 448))``, E2M1 of xs / s."""
    xs, g = global_scaled(blocks(x, 16), NVFP4_DENOM)
    s = e4m3(np.clip(np.max(np.abs(xs), -1, keepdims=True) * F32(1.0 / 6.0), F32(2.0**-9), F32(448.0)))
    v = e2m1(xs.astype(np.float64) / s.astype(np.float64))
    return ((v * s) * g).reshape(np.shape(x))


def mxfp4_roundtrip(x: Float[np.ndarray, "*b K"]) -> Float[np.ndarray, "*b K"]:
    """MXFP4: blocks of 32, scale ``2^e`` with ``e = ceil(log2(amax_b / 6))`` clamped to [-127, 126] (amax 0:
    -127), E2M1 of ``x 2^-e``; no global scale."""
    xb = flushed(blocks(x, 32)).astype(np.float64)
    amax = np.max(np.abs(xb), -1, keepdims=True)
    m, ex = np.frexp(amax / 6.0)
    e = np.where(amax > 0, np.clip(np.where(m == 0.5, ex - 1, ex), -127, 126), -127)
    return (e2m1(np.ldexp(xb, -e)).astype(np.float64) * np.ldexp(1.0, e)).astype(F32).reshape(np.shape(x))


def razer_activation_roundtrip(x: Float[np.ndarray, "*b K"]) -> Float[np.ndarray, "*b K"]:
    """RaZeR, activation variant: NVFP4's scales; per block the special value +5 or -5 of least block error
    (+5 on ties)."""
    xs, g = global_scaled(blocks(x, 16), NVFP4_DENOM)
    s = e4m3(np.clip(np.max(np.abs(xs), -1, keepdims=True) * F32(1.0 / 6.0), F32(2.0**-9), F32(448.0)))
    p = error_unit(s)
    pos, _ = with_special(xs, s, 5.0)
    neg, _ = with_special(xs, s, -5.0)
    take_neg = (block_error(xs, neg, s, p) < block_error(xs, pos, s, p))[..., None]
    return ((np.where(take_neg, neg, pos) * s) * g).reshape(np.shape(x))


def razer_weight_roundtrip(x: Float[np.ndarray, "*b K"]) -> Float[np.ndarray, "*b K"]:
    """RaZeR, weight variant: global scale amax / 168; per block the candidate (+5, -5 at ``s(6)``; +8, -8 at
    ``s(8)``, ``s(q) = E3M3(clip(fl(amax_b fl(1/q)), 2^-5, 28))``) of least block error in the unit of
    ``s(6)``, the first on ties."""
    xs, g = global_scaled(blocks(x, 16), RAZER_WEIGHT_DENOM)
    bmax = np.max(np.abs(xs), -1, keepdims=True)
    scale = {q: e3m3(np.clip(bmax * F32(1.0 / q), F32(2.0**-5), F32(28.0))) for q in (6.0, 8.0)}
    p = error_unit(scale[6.0])
    vals, errs = [], []
    for sv, q in RAZER_WEIGHT_CANDIDATES:
        v, _ = with_special(xs, scale[q], sv)
        vals.append(v * scale[q])
        errs.append(block_error(xs, v, scale[q], p))
    best = np.argmin(np.stack(errs), axis=0)[None, ..., None]  # the first of equal errors
    return (np.take_along_axis(np.stack(vals), best, 0)[0] * g).reshape(np.shape(x))


# label -> the function's name: :func:`roundtrip` looks it up when called, so a patched module attribute is used
ROUNDTRIPS = {
    "NVFP4": "nvfp4_roundtrip",
    "MXFP4": "mxfp4_roundtrip",
    "RaZeR (act.)": "razer_activation_roundtrip",
    "RaZeR (weight)": "razer_weight_roundtrip",
}


def roundtrip(label: str, x: Float[np.ndarray, "*b K"]) -> Float[np.ndarray, "*b K"]:
    """The round trip of the format ``label`` (a key of :data:`ROUNDTRIPS`)."""
    if label not in ROUNDTRIPS:
        raise ValueError(f"label must be one of {tuple(ROUNDTRIPS)}, got {label!r}")
    return globals()[ROUNDTRIPS[label]](x)
