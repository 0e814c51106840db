"""Independent numpy + ml_dtypes models of the FP4 block formats, used by the quant kernel tests.

They follow the formulas in ``pallas_kernels/quant/reference.py`` but use ml_dtypes' float8/float4 casts for
every rounding step (instead of the integer-op codecs under test)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

F4 = ml_dtypes.float4_e2m1fn
F8 = ml_dtypes.float8_e4m3fn
TINY = np.float32(2.0**-126)


def flush(x):
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < TINY, np.float32(0), x).astype(np.float32)


def blocks(x, b):
    x = np.asarray(x, np.float32)
    return x.reshape(*x.shape[:-1], x.shape[-1] // b, b)


def f4_codes(v):
    return v.astype(F4).view(np.uint8) & 0xF


def f4_values(c):
    return np.asarray(c, np.uint8).view(F4).astype(np.float32)


def unpack(packed):
    p = np.asarray(packed, np.uint8)
    out = np.empty((*p.shape[:-1], p.shape[-1] * 2), np.uint8)
    out[..., 0::2] = p & 0xF
    out[..., 1::2] = p >> 4
    return out


def global_scale(x, denom):
    amax = np.float32(np.abs(np.asarray(x, np.float32)).max()) if np.size(x) else np.float32(0)
    return max(np.float32(amax / np.float32(denom)), TINY)


def exact_codes(xs, s):
    """E2M1 codes of the exact quotient xs / s: the float64 quotient of two float32 numbers is never within
    float64 rounding of an E2M1 midpoint unless it is on it, and ml_dtypes rounds float64 directly (RNE)."""
    return f4_codes(np.asarray(xs, np.float64) / np.asarray(s, np.float64))


def nvfp4_scales(xs):
    sf = np.clip(np.abs(xs).max(-1) * np.float32(1 / 6), np.float32(2.0**-9), np.float32(448))
    sf = sf.astype(np.float32)
    s8 = sf.astype(F8)
    return s8.view(np.uint8), s8.astype(np.float32)


def nvfp4(x, g=None):
    """-> (codes (..., nb, 16) uint8, scale bytes (..., nb) uint8, dequantized (..., nb, 16), g, xs)."""
    g = np.float32(global_scale(x, 448 * 6) if g is None else g)
    xs = (blocks(flush(x), 16) * (np.float32(1) / g)).astype(np.float32)
    sbyte, s = nvfp4_scales(xs)
    c = exact_codes(xs, s[..., None])
    deq = flush((f4_values(c) * s[..., None]) * g)
    return c, sbyte, deq, g, xs


def mxfp4(x):
    """-> (codes, E8M0 bytes, dequantized)."""
    xb = blocks(flush(x), 32)
    amax6 = np.abs(xb).max(-1).astype(np.float64) / 6
    m, e = np.frexp(amax6)  # amax6 = m 2^e, m in [0.5, 1): ceil(log2) = e, or e - 1 when m == 0.5
    code = np.where(amax6 == 0, 0, np.clip(np.where(m == 0.5, e - 1, e) + 127, 0, 253))
    c = f4_codes(xb * np.ldexp(np.float32(1), 127 - code)[..., None].astype(np.float32))
    deq = flush(f4_values(c) * np.ldexp(1.0, code - 127)[..., None])
    return c, code.astype(np.uint8), deq


def pow2_reciprocal(s):
    _, e = np.frexp(np.asarray(s, np.float64))  # s = m 2^e, m in [0.5, 1): floor(log2 s) = e - 1
    return np.ldexp(np.float32(1), 1 - e).astype(np.float32)


def block_err(xs, chosen, s, p):
    """The RaZeR block error as specified (reference.py): integer terms round(2^14 (d p)^2), capped."""
    cs = (np.abs(np.asarray(chosen, np.float32)) * np.asarray(s, np.float32)).astype(np.float32)
    d = (np.abs(np.asarray(xs, np.float32)) - cs).astype(np.float32)
    e = np.square((d * np.float32(p)).astype(np.float32)).astype(np.float32)
    k = np.floor((e * np.float32(2**14)).astype(np.float32) + np.float32(0.5)).astype(np.float64)
    k = np.where(e >= np.float32(2**12), 2**26, np.minimum(k, 2**26))
    return k.sum(-1).astype(np.int64)


def adversarial(kind: str, shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "zeros":
        return np.zeros(shape, np.float32)
    if kind == "mixed_zero_blocks":
        x = rng.standard_normal(shape).astype(np.float32)
        x[..., :16] = 0.0
        return x
    if kind == "subnormal":  # float32 subnormals mixed with tiny normals
        return (rng.standard_normal(shape) * 1e-39).astype(np.float32)
    if kind == "tiny":
        return (rng.standard_normal(shape) * 1e-36).astype(np.float32)
    if kind == "huge_range":  # 60 decades in one tensor, +-
        mag = 10.0 ** rng.uniform(-30, 30, shape)
        return (mag * rng.choice([-1, 1], shape)).astype(np.float32)
    if kind == "near_max":
        return (rng.uniform(-1, 1, shape) * 3e38).astype(np.float32)
    if kind == "ties":  # values on E2M1 midpoints after scaling by an exact power of two
        v = rng.choice([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0], shape) * rng.choice([-1, 1], shape)
        return (v * 2.0**-3).astype(np.float32)
    if kind == "razer_boundary":  # around RaZeR's decision points (4.5, 5, 5.5, 7, 8 scales), +-a few ulps
        base = rng.choice([4.5, 5.0, 5.5, 7.0, 8.0, 4.0, 6.0, 3.5], shape) * rng.choice([-1, 1], shape)
        x = base * (1 + rng.integers(-3, 4, shape) * 2.0**-23)
        x[..., ::16] = rng.choice([6.0, 8.0, -6.0, -8.0], x[..., ::16].shape)  # block maxima: scale ~ 1 or 4/3
        return (x * 2.0**-3).astype(np.float32)
    raise ValueError(kind)


KINDS = ["normal", "zeros", "mixed_zero_blocks", "subnormal", "tiny", "huge_range", "near_max", "ties"]


def e3m3_table() -> np.ndarray:
    """All 64 E3M3 values by the definition: bias 3, field 0 = subnormal m/8 * 2^-2."""
    out = []
    for c in range(64):
        f, m = c >> 3, c & 7
        out.append(m / 8 * 2.0**-2 if f == 0 else (1 + m / 8) * 2.0 ** (f - 3))
    return np.array(out, np.float64)
