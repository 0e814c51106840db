"""Bit-level codecs for 4-bit floating-point block formats, written with integer ops only.

Everything here is pure ``jnp`` on ``float32``/``uint32`` arrays and uses only comparisons, selects, shifts,
masks, integer adds and bitcasts, so the same functions run in the XLA reference and inside Pallas kernels
(Triton and Mosaic lower none of the fp4/fp8 dtype casts reliably; see DESIGN.md, "Kernels").

Formats
-------
* **E2M1** (FP4, OCP ``float4_e2m1fn``): sign bit 3, magnitude code ``m`` in bits 0..2 with values
  ``(0, 0.5, 1, 1.5, 2, 3, 4, 6)[m]``. Encoding rounds to nearest, **ties to even** (the even code: 0.25 -> 0,
  0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4), exactly like ``ml_dtypes``'s cast, and
  saturates at +-6. The sign of a value that rounds to zero is kept (``-0.1 -> 0x8``, as the cast does).
* **E4M3** (``float8_e4m3fn``, bias 7, subnormals down to 2^-9, max 448): used unsigned for block scales.
* **E3M3** (6-bit, bias 3, subnormals ``m/8 * 2^-2`` down to 2^-5, normals up to ``1.875 * 2^4``; RaZeR clamps
  its weight scales to [2^-5, 28] so the top mantissa of the top binade is never produced).
* **E8M0** (power of two ``2^(c-127)``, OCP MX scale): encoded by rounding ``amax/6`` *up* to a power of two,
  exactly as ``jax.nn``'s ``mxfp4`` configuration does (no element then needs clipping).

Packing: two FP4 codes per ``uint8``, element ``2i`` in the low nibble, ``2i+1`` in the high nibble (PyTorch
``float4_e2m1fn_x2`` order).

The container :class:`QuantizedArray` (a pytree) is shared by NVFP4, MXFP4 and both RaZeR variants.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

E2M1_MAX = 6.0
E4M3_MAX = 448.0
E4M3_MIN = 2.0**-9  # smallest positive E4M3 (subnormal): the clamp floor of NVFP4 block scales
E3M3_MIN = 2.0**-5
E3M3_MAX = 28.0
F32_MIN_NORMAL = 2.0**-126

FORMATS = ("nvfp4", "mxfp4", "razer_activation", "razer_weight")
BLOCK_SIZE = {"nvfp4": 16, "mxfp4": 32, "razer_activation": 16, "razer_weight": 16}


# ---------------------------------------------------------------------------------------------------------
# The container
# ---------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class QuantizedArray:
    """A block-quantized FP4 tensor (a pytree).

    Children (arrays):
      codes:        uint8 ``(..., K // 2)``: packed E2M1 codes, element ``2i`` in the low nibble.
      scales:       uint8 ``(..., K // block_size)``: the block-scale byte (format dependent, see ``format``).
      global_scale: float32 ``()``: the per-tensor FP32 scale (1.0 for MXFP4, which has none).
    Static metadata (aux data; part of the jit cache key):
      shape:      the logical shape ``(..., K)`` of the quantized tensor (blocks run along the last axis).
      format:     one of ``"nvfp4"`` (E4M3 scale byte), ``"mxfp4"`` (E8M0 byte), ``"razer_activation"``
                  (bits 0..6 E4M3, bit 7 = special value sign: 0 -> +5, 1 -> -5), ``"razer_weight"``
                  (bits 0..5 E3M3, bits 6..7 index into the special values (+5, -5, +8, -8)).
      block_size: 16 (NVFP4, RaZeR) or 32 (MXFP4).
    """

    codes: jax.Array
    scales: jax.Array
    global_scale: jax.Array
    shape: tuple[int, ...]
    format: str
    block_size: int

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the packed representation (codes + scales + the 4-byte global scale)."""
        return int(np.prod(self.codes.shape)) + int(np.prod(self.scales.shape)) + 4


jax.tree_util.register_dataclass(
    QuantizedArray, data_fields=["codes", "scales", "global_scale"],
    meta_fields=["shape", "format", "block_size"],
)


# ---------------------------------------------------------------------------------------------------------
# Eager input checks (skipped for tracers)
# ---------------------------------------------------------------------------------------------------------


def check_input(x, block_size: int, name: str = "x") -> None:
    """Raise ``ValueError`` for a bad concrete input: non-float, scalar, last axis not a multiple of the
    block, or any inf/nan. Tracers (inside ``jit``) only get the static shape/dtype checks."""
    if not jnp.issubdtype(jnp.result_type(x), jnp.floating):
        raise ValueError(f"{name} must be a floating-point array, got dtype {jnp.result_type(x)}")
    shape = jnp.shape(x)
    if len(shape) == 0:
        raise ValueError(f"{name} must have at least one axis (blocks run along the last axis), got a scalar")
    if shape[-1] % block_size:
        raise ValueError(f"{name}.shape[-1] must be a multiple of the block size {block_size}, "
                         f"got shape {shape}")
    if not isinstance(x, jax.core.Tracer):
        bad = ~np.isfinite(np.asarray(x, dtype=np.float32))
        if bad.any():
            raise ValueError(
                f"{name} contains {int(bad.sum())} non-finite value(s) (inf/nan) at e.g. index "
                f"{tuple(int(i) for i in np.argwhere(bad)[0])}; FP4 block formats cannot represent them"
            )


def check_format(q: QuantizedArray, allowed: tuple[str, ...], name: str = "q") -> None:
    if not isinstance(q, QuantizedArray):
        raise ValueError(f"{name} must be a QuantizedArray, got {type(q).__name__}")
    if q.format not in allowed:
        raise ValueError(f"{name}.format must be one of {allowed}, got {q.format!r}")


# ---------------------------------------------------------------------------------------------------------
# Bit helpers
# ---------------------------------------------------------------------------------------------------------


def _bits(x):
    return jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.uint32)


def _from_bits(b):
    return jax.lax.bitcast_convert_type(b.astype(jnp.uint32), jnp.float32)


def _u32(v):
    return jnp.uint32(v)


# ---------------------------------------------------------------------------------------------------------
# E2M1
# ---------------------------------------------------------------------------------------------------------

# Rounding thresholds on |v|. ">" sends a tie down, ">=" sends it up; the choice below sends every tie to the
# even code (round to nearest even), which is what ml_dtypes' float4_e2m1fn cast does.
_E2M1_THRESHOLDS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True),
                    (5.0, False))


def e2m1_magnitude_code(a):
    """|v| (float32, >= 0) -> E2M1 magnitude code 0..7 (uint32): RNE, saturating at 6 (code 7)."""
    a = a.astype(jnp.float32)
    m = jnp.zeros(a.shape, jnp.uint32)
    for t, inclusive in _E2M1_THRESHOLDS:
        hit = (a >= t) if inclusive else (a > t)
        m = m + hit.astype(jnp.uint32)
    return m


def e2m1_encode(v):
    """float32 -> E2M1 code 0..15 (uint32): sign in bit 3, RNE magnitude saturating at +-6."""
    sign = _bits(v) >> _u32(31)
    return (sign << _u32(3)) | e2m1_magnitude_code(jnp.abs(v))


def e2m1_magnitude_value(m):
    """Magnitude code 0..7 -> float32 value in (0, .5, 1, 1.5, 2, 3, 4, 6), by building the float's bits."""
    m = m.astype(jnp.uint32)
    e = m >> _u32(1)
    mant = m & _u32(1)
    normal = ((e + _u32(126)) << _u32(23)) | (mant << _u32(22))  # 2^(e-1) * (1 + mant/2)
    sub = mant * _u32(126 << 23)  # code 1 -> 0.5, code 0 -> +0
    return _from_bits(jnp.where(e > _u32(0), normal, sub))


def e2m1_decode(code):
    """E2M1 code 0..15 -> float32 (code 8 decodes to -0.0)."""
    code = code.astype(jnp.uint32)
    mag = _bits(e2m1_magnitude_value(code & _u32(7)))
    return _from_bits(mag | ((code >> _u32(3)) << _u32(31)))


# ---------------------------------------------------------------------------------------------------------
# Small unsigned minifloats (E4M3, E3M3): RNE encode of positive finite floats, decode
# ---------------------------------------------------------------------------------------------------------


def _minifloat_encode(x, man_bits: int, bias: int):
    """Positive float32 -> code of an unsigned minifloat with ``man_bits`` mantissa bits, exponent ``bias``,
    subnormals; round to nearest even. The caller clamps x into the format's range (no saturation here)."""
    b = _bits(x) & _u32(0x7FFFFFFF)
    field = (b >> _u32(23)).astype(jnp.int32)
    exp = jnp.maximum(field, 1) - 127  # unbiased exponent (f32 subnormals: -126)
    sig = (b & _u32(0x7FFFFF)) | jnp.where(field > 0, _u32(1 << 23), _u32(0))
    e_min = 1 - bias
    e_eff = jnp.maximum(exp, e_min)
    shift = jnp.minimum(23 - man_bits + (e_eff - exp), 25).astype(jnp.uint32)
    q = sig >> shift
    rem = sig & ((_u32(1) << shift) - _u32(1))
    half = _u32(1) << (shift - _u32(1))
    up = (rem > half) | ((rem == half) & ((q & _u32(1)) == _u32(1)))
    q = q + up.astype(jnp.uint32)
    # normal: ((e + bias) << man) + (q - 2^man); at e_eff == e_min this is q itself (subnormal or carry).
    base = ((e_eff + bias) << man_bits) - (1 << man_bits)
    return (base.astype(jnp.uint32) + q).astype(jnp.uint32)


def _minifloat_decode(code, man_bits: int, bias: int):
    code = code.astype(jnp.uint32)
    field = code >> _u32(man_bits)
    mant = code & _u32((1 << man_bits) - 1)
    normal = ((field + _u32(127 - bias)) << _u32(23)) | (mant << _u32(23 - man_bits))
    sub = mant.astype(jnp.float32) * np.float32(2.0 ** (1 - bias - man_bits))
    return jnp.where(field > _u32(0), _from_bits(normal), sub)


def e4m3_encode(x):
    """Positive float32 in [2^-9, 448] -> E4M3 code (uint32, 1..126), RNE (float8_e4m3fn bit pattern)."""
    return _minifloat_encode(x, 3, 7)


def e4m3_decode(code):
    """E4M3 code (bits 0..6; bit 7 ignored) -> positive float32."""
    return _minifloat_decode(code.astype(jnp.uint32) & _u32(0x7F), 3, 7)


def e3m3_encode(x):
    """Positive float32 in [2^-5, 28] -> 6-bit E3M3 code (uint32), RNE. Bias 3, subnormals m/8 * 2^-2."""
    return _minifloat_encode(x, 3, 3)


def e3m3_decode(code):
    """E3M3 code (bits 0..5; higher bits ignored) -> positive float32."""
    return _minifloat_decode(code.astype(jnp.uint32) & _u32(0x3F), 3, 3)


# ---------------------------------------------------------------------------------------------------------
# E8M0
# ---------------------------------------------------------------------------------------------------------


def e8m0_encode_round_up(x):
    """Non-negative float32 -> E8M0 code (uint32): the exponent of x rounded *up* to a power of two.

    Same rule as ``jax.nn``'s mxfp4 quantizer (``cast_to_e8m0_with_rounding_up``): round up whenever the
    mantissa is non-zero, except at the top binade and for f32 subnormals <= 2^-127 (which map to code 0)."""
    b = _bits(x) & _u32(0x7FFFFFFF)
    exp = b >> _u32(23)
    mant = b & _u32(0x7FFFFF)
    ru = (mant > _u32(0)) & (exp != _u32(0xFE)) & ~((exp == _u32(0)) & (mant <= _u32(0x400000)))
    return exp + ru.astype(jnp.uint32)


def e8m0_decode(code):
    """E8M0 code -> float32 ``2^(code-127)``; code 0 -> 2^-127 (as in jax.nn), never 0."""
    code = code.astype(jnp.uint32)
    return jnp.where(code == _u32(0), np.float32(2.0**-127), _from_bits(code << _u32(23)))


# ---------------------------------------------------------------------------------------------------------
# Nibble packing
# ---------------------------------------------------------------------------------------------------------


def pack_nibbles(codes):
    """(..., K) codes 0..15 -> (..., K // 2) uint8, element 2i in the low nibble.

    Written with a reshape + shifted sum (no strided slicing) so that it also lowers inside kernels."""
    codes = codes.astype(jnp.uint32)
    pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    parity = jax.lax.broadcasted_iota(jnp.uint32, pairs.shape, pairs.ndim - 1)
    return jnp.sum(pairs << (parity * _u32(4)), axis=-1).astype(jnp.uint8)


def unpack_nibbles(packed):
    """(..., K // 2) uint8 -> (..., K) uint32 codes; inverse of :func:`pack_nibbles`.

    Repeat-and-select (broadcast, reshape, parity select) instead of interleaving, for kernel lowering."""
    p = packed.astype(jnp.uint32)
    shape = (*p.shape, 2)
    rep = jnp.broadcast_to(p[..., None], shape).reshape(*p.shape[:-1], p.shape[-1] * 2)
    parity = jax.lax.broadcasted_iota(jnp.uint32, rep.shape, rep.ndim - 1) & _u32(1)
    return jnp.where(parity == _u32(0), rep & _u32(0xF), rep >> _u32(4))


def repeat_last(a, n: int):
    """(..., m) -> (..., m * n), each entry repeated n times (broadcast + reshape; kernel friendly)."""
    return jnp.broadcast_to(a[..., None], (*a.shape, n)).reshape(*a.shape[:-1], a.shape[-1] * n)
