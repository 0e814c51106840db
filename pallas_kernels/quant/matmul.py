"""Fused dequantize-matmul (W4A16): ``y = x @ W^T`` with ``W`` an FP4 block-quantized weight, ``x`` bfloat16.

    fp4_matmul(x, w, *, out_dtype=None, implementation=None, block_sizes=None) -> (..., N)

``w`` is a :class:`QuantizedArray` of logical shape ``(N, K)`` (PyTorch ``Linear`` layout: blocks along the
input dimension K) in any format: NVFP4, RaZeR (activation or weight variant) or MXFP4. ``x`` is ``(..., K)``.

Numerics (shared by the reference and the kernel): ``x`` is rounded to bfloat16; the weight tile is decoded
to ``value * s_block`` (exact in bfloat16: at most 3 significant bits times at most 4), multiplied on the
MXU / tensor cores with float32 accumulation, and the per-tensor ``global_scale`` is applied once to the
float32 accumulator. So kernel and reference differ only in the order of the float32 accumulation.

Kernel: grid ``(M / bm, N / bn)``; each program holds an ``(bm, K)`` activation panel and the ``(bn, K)``
packed weight panel and loops over K in chunks of ``bk`` (``lax.fori_loop``; one chunk on TPU, where lane
dimension slices must be whole), decoding each weight chunk with integer ops (nibble unpack, E4M3 / E3M3 /
E8M0 decode, RaZeR special values) right before the dot. The weight is read from HBM once per row panel at
4.5 bits per element: the point of W4A16 is the memory traffic of the weight.

Variants (selectable, default off: the defaults above are unchanged bit for bit):

* ``decode="bitplace"`` (NVFP4 weights, GPU tiling / interpreter): no nibble interleave and a bit-placement
  decode. The activation is permuted once outside the kernel so that each K chunk holds its even columns
  then its odd columns; the kernel then multiplies the low nibbles of the packed bytes (even K) and the high
  nibbles (odd K) as two dots, with no repeat/select/reshape of the codes. Each nibble ``q`` becomes a
  bfloat16 by two logic ops per field (Marlin's decode): ``bits = ((q & 8) << 12) | ((q & 7) << 6)``, i.e.
  sign to bit 15 and the E2M1 exponent/mantissa bits into the low exponent bits and top mantissa bit, which
  is exactly ``e2m1(q) * 2^-126`` (codes +-0.5 become bfloat16 *subnormals*). The factor ``2^126`` is folded
  into the block scale, ``S_b = e4m3(byte) * 2^(126 - F)`` (exact in bfloat16, finite for every byte), and
  ``2^F`` (F = :data:`BITPLACE_FOLD`) into the global scale, so ``w = bits * S_b = e2m1(q) s_b 2^-F``
  exactly (one bfloat16 multiply, no conversion) and ``y = acc' * (g 2^F)`` with ``acc' = acc 2^-F`` exact
  (powers of two). Needs bfloat16 subnormals kept: XLA:CPU (and so the interpreter) flushes them, so there
  codes +-0.5 decode to 0 (the tests pin both behaviours; the formula is tested exhaustively with ml_dtypes).
* ``dequantize_above_m=T``: for ``M > T`` rows the op dequantizes the weight once (chunked over N,
  :data:`DEQUANT_CHUNK_N` rows at a time, to ``e2m1 * s_b`` in bfloat16, exact) and runs an XLA dot with
  float32 accumulation, times ``g``: the fused kernel decodes the weight again for every row panel, which
  costs more than the bytes it saves once M is large (an H200 measured 6x the bf16 time at M = 4096).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jaxtyping import Array, Float

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import blockwise, fp4, tile_codes
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray

__all__ = ["fp4_matmul", "MatmulBlockSizes"]

MATMUL_FORMATS = ("nvfp4", "mxfp4", "razer_activation", "razer_weight")
DECODES = ("interleaved", "bitplace")  # the kernel's weight decode (module docstring, "Variants")
BITPLACE_FORMATS = ("nvfp4",)
BITPLACE_FOLD = 8  # F: 2^(126 - F) folded into the block scale (448 * 2^118 < bf16 max), 2^F into g
DEQUANT_CHUNK_N = 4096  # rows of W dequantized at a time on the large-M path (4096 x 16384 bf16 = 128 MiB)


@dataclasses.dataclass(frozen=True)
class MatmulBlockSizes:
    """Output tile ``block_m x block_n`` per program, K chunk ``block_k`` (powers of two, >= 16 for Triton's
    dot; ``block_k`` a multiple of the format's block size). Checked on construction."""

    block_m: int = 64
    block_n: int = 64
    block_k: int = 128

    def __post_init__(self):
        for name in ("block_m", "block_n", "block_k"):
            dp.check_block(name, getattr(self, name), pow2=True, minimum=16)


def _kernel(x_ref, codes_ref, scales_ref, g_ref, o_ref, *, fmt: str, block: int, bk: int, gpu_form: bool = True):
    bm, k_total = x_ref.shape
    bn = codes_ref.shape[0]
    nk = k_total // bk

    def body(k, acc):
        start = pl.multiple_of(k * bk, bk)
        xk = x_ref[:, pl.ds(start, bk)]
        ck = codes_ref[:, pl.ds(pl.multiple_of(k * (bk // 2), bk // 2), bk // 2)]
        sk = scales_ref[:, pl.ds(pl.multiple_of(k * (bk // block), bk // block), bk // block)]
        if gpu_form:  # the nibbles decoded apart and joined back (tile_codes.dequantize_tile), same values
            w = tile_codes.dequantize_tile(ck, sk, None, fmt).astype(jnp.bfloat16)
        else:
            sk = sk.astype(jnp.uint32)
            codes = fp4.unpack_nibbles(ck).reshape(bn, bk // block, block)
            w = ref.element_values(codes, sk, fmt) * ref.block_scale_value(sk, fmt)[..., None]
            w = w.reshape(bn, bk).astype(jnp.bfloat16)
        return acc + jax.lax.dot_general(
            xk.astype(jnp.bfloat16), w, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32
        )

    acc = jax.lax.fori_loop(0, nk, body, jnp.zeros((bm, bn), jnp.float32))
    o_ref[...] = (acc * g_ref[...]).astype(o_ref.dtype)


def bitplace_bits(p, shift: int):
    """Packed code bytes (uint8/uint16/uint32) -> uint16 bfloat16 bits of ``e2m1(q) * 2^-126`` for the nibble
    ``q = (p >> shift) & 15`` (shift 0: low nibble, 4: high): sign to bit 15, magnitude bits to bits 8..6.
    Two logic ops per field plus one or (the shifts absorb the nibble's position)."""
    p = p.astype(jnp.uint16)
    u = jnp.uint16
    return ((p & u(8 << shift)) << u(12 - shift)) | ((p & u(7 << shift)) << u(6 - shift))


def bitplace_block_scale(byte):
    """E4M3 scale bytes -> bfloat16 ``e4m3(byte) * 2^(126 - F)`` (exact: 4 significant bits, exponent <=
    8 + 118 < 127), the block scale with the bit placement's 2^126 folded in (F = :data:`BITPLACE_FOLD`)."""
    s = fp4.e4m3_decode(byte.astype(jnp.uint32)) * jnp.float32(2.0 ** (126 - BITPLACE_FOLD))
    return s.astype(jnp.bfloat16)


def _bitplace_kernel(x_ref, codes_ref, scales_ref, g_ref, o_ref, *, block: int, bk: int):
    """The ``decode="bitplace"`` kernel: x chunks hold [even K | odd K] (``_even_odd``); two dots per chunk."""
    bm, k_total = x_ref.shape
    bn = codes_ref.shape[0]
    nk, half = k_total // bk, bk // 2

    def body(k, acc):
        start = pl.multiple_of(k * bk, bk)
        xe = x_ref[:, pl.ds(start, half)]
        xo = x_ref[:, pl.ds(pl.multiple_of(start + half, half), half)]
        ck = codes_ref[:, pl.ds(pl.multiple_of(k * half, half), half)]
        sk = scales_ref[:, pl.ds(pl.multiple_of(k * (bk // block), bk // block), bk // block)]
        s = fp4.repeat_last(bitplace_block_scale(sk), block // 2)  # (bn, half): element 2j and 2j+1 in j // 8
        dims = (((1,), (1,)), ((), ()))
        for xh, shift in ((xe, 0), (xo, 4)):
            w = jax.lax.bitcast_convert_type(bitplace_bits(ck, shift), jnp.bfloat16) * s
            acc = acc + jax.lax.dot_general(xh, w, dims, preferred_element_type=jnp.float32)
        return acc

    acc = jax.lax.fori_loop(0, nk, body, jnp.zeros((bm, bn), jnp.float32))
    o_ref[...] = (acc * g_ref[...]).astype(o_ref.dtype)


def _even_odd(x2, bk: int):
    """(M, K) -> (M, K) with every K chunk of ``bk`` columns reordered as [even columns | odd columns]."""
    m, k = x2.shape
    return x2.reshape(m, k // bk, bk // 2, 2).transpose(0, 1, 3, 2).reshape(m, k)


@functools.partial(jax.jit, static_argnames=("out_dtype", "block_sizes", "interpret", "platform", "decode"))
def fp4_matmul_pallas(
    x,
    w: QuantizedArray,
    *,
    out_dtype=None,
    block_sizes: MatmulBlockSizes = MatmulBlockSizes(),
    interpret: bool = False,
    platform: str | None = None,
    decode: str = "interleaved",
):
    """The Pallas kernel (see the module docstring). ``platform`` picks TPU or Triton tiling/params;
    ``decode`` the weight decode (:data:`DECODES`; "bitplace": NVFP4 on the GPU tiling only)."""
    check_decode(decode, w.format)
    bitplace = decode == "bitplace"
    out_dtype = jnp.dtype(out_dtype or x.dtype)
    n, k = w.shape
    lead = x.shape[:-1]
    x2 = x.reshape(-1, k).astype(jnp.bfloat16)
    m = x2.shape[0]
    block = w.block_size
    tpu = (platform or jax.default_backend()) == "tpu"
    bm = max(16, min(block_sizes.block_m, blockwise.pow2_at_least(m)))
    bn = max(16, min(block_sizes.block_n, blockwise.pow2_at_least(n)))
    if tpu and bitplace:
        raise ValueError("decode='bitplace' runs on the GPU tiling only (Triton or the interpreter), not on TPU")
    if tpu:
        bm, bn = max(bm, 32), max(bn, 128)  # uint8 sublane tile 32; output lanes 128
        bk = kp = k
    else:
        bk = max(block, 16, min(block_sizes.block_k, blockwise.pow2_at_least(k)))
        kp = -(-k // bk) * bk
    mp, np_ = -(-m // bm) * bm, -(-n // bn) * bn
    codes, scales = w.codes, w.scales
    if (mp, kp) != (m, k):
        x2 = jnp.pad(x2, ((0, mp - m), (0, kp - k)))
    if (np_, kp) != (n, k):
        codes = jnp.pad(codes, ((0, np_ - n), (0, (kp - k) // 2)))
        scales = jnp.pad(scales, ((0, np_ - n), (0, (kp - k) // block)))
    g = jnp.asarray(w.global_scale, jnp.float32)
    if bitplace:
        bk = max(bk, 32)  # two dots of bk / 2 >= 16 columns
        if kp % bk:
            extra = -(-kp // bk) * bk - kp
            x2, kp = jnp.pad(x2, ((0, 0), (0, extra))), kp + extra
            codes = jnp.pad(codes, ((0, 0), (0, extra // 2)))
            scales = jnp.pad(scales, ((0, 0), (0, extra // block)))
        x2 = _even_odd(x2, bk)
        g = g * jnp.float32(2.0**BITPLACE_FOLD)  # exact: g <= f32 max / 2688
    kernel = (
        functools.partial(_bitplace_kernel, block=block, bk=bk)
        if bitplace
        else functools.partial(_kernel, fmt=w.format, block=block, bk=bk, gpu_form=not tpu)
    )
    out = pl.pallas_call(
        kernel,
        grid=(mp // bm, np_ // bn),
        in_specs=[
            pl.BlockSpec((bm, kp), lambda i, j: (i, 0)),
            pl.BlockSpec((bn, kp // 2), lambda i, j: (j, 0)),
            pl.BlockSpec((bn, kp // block), lambda i, j: (j, 0)),
            pl.BlockSpec((1, 1), lambda i, j: (0, 0)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((mp, np_), out_dtype),
        interpret=interpret,
        compiler_params=None if interpret else blockwise.compiler_params(platform),
        name=f"{w.format}_matmul" + ("_bitplace" if bitplace else ""),
    )(x2, codes, scales, g.reshape(1, 1))
    return out[:m, :n].reshape(*lead, n)


def check_decode(decode, fmt: str) -> None:
    """``decode`` in :data:`DECODES`; "bitplace" only for :data:`BITPLACE_FORMATS`."""
    if decode not in DECODES:
        raise ValueError(f"decode must be one of {DECODES}, got {decode!r}")
    if decode == "bitplace" and fmt not in BITPLACE_FORMATS:
        raise ValueError(f"decode='bitplace' supports w.format in {BITPLACE_FORMATS}, got {fmt!r}")


@functools.partial(jax.jit, static_argnames=("out_dtype", "interpret", "chunk", "platform"))
def dequantize_then_dot(
    x, w: QuantizedArray, *, out_dtype, interpret: bool, chunk: int = DEQUANT_CHUNK_N, platform: str | None = None
):
    """The large-M path: ``(x_bf16 @ W_b^T) * g`` with ``W_b = e2m1 * s_b`` dequantized once by the Pallas
    dequantize kernel (global scale 1: exact in bfloat16) in chunks of ``chunk`` rows of W, each chunk's
    product an XLA dot with float32 accumulation (same numerics as the kernel: exact products, float32
    sums in another order)."""
    n, k = w.shape
    xb = x.reshape(-1, k).astype(jnp.bfloat16)
    unit = dataclasses.replace(w, global_scale=jnp.float32(1.0))
    parts = []
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        part = dataclasses.replace(unit, codes=unit.codes[lo:hi], scales=unit.scales[lo:hi], shape=(hi - lo, k))
        wb = blockwise.dequantize_pallas(part, dtype=jnp.bfloat16, interpret=interpret, platform=platform)
        parts.append(jax.lax.dot_general(xb, wb, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32))
    acc = parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=-1)
    return (acc * jnp.asarray(w.global_scale, jnp.float32)).astype(out_dtype).reshape(*x.shape[:-1], n)


@functools.partial(jax.jit, static_argnames=("out_dtype",))
def _ref_jit(x, w, out_dtype):
    return ref.fp4_matmul(x, w, out_dtype=out_dtype)


def fp4_matmul(
    x: Float[Array, "*batch K"],
    w: QuantizedArray,
    *,
    out_dtype=None,
    implementation: Implementation = None,
    block_sizes: MatmulBlockSizes | None = None,
    decode: str = "interleaved",
    dequantize_above_m: int | None = None,
) -> Float[Array, "*batch N"]:
    """``x @ dequantize(w).T`` for ``x`` (..., K) and an FP4 weight ``w`` of logical shape (N, K) -> (..., N).

    ``out_dtype`` defaults to ``x.dtype``; ``implementation`` as for the quantizers (None: the Triton / Mosaic
    TPU kernel on a GPU / TPU, the XLA reference on CPU). Raises ValueError for a non-2-D weight, a K mismatch
    or a non-float ``x``.
    Kernel variants (module docstring; both off by default): ``decode="bitplace"`` (NVFP4) and
    ``dequantize_above_m=T`` (M > T rows: dequantize once + XLA dot; the XLA path is unchanged)."""
    fp4.check_format(w, MATMUL_FORMATS, name="w")
    check_decode(decode, w.format)
    if dequantize_above_m is not None and (
        isinstance(dequantize_above_m, bool) or not isinstance(dequantize_above_m, int) or dequantize_above_m < 0
    ):
        raise ValueError(f"dequantize_above_m must be None or an integer >= 0, got {dequantize_above_m!r}")
    if len(w.shape) != 2:
        raise ValueError(f"w must be a 2-D (N, K) quantized weight, got shape {w.shape}")
    if not hasattr(x, "dtype"):
        x = jnp.asarray(x)
    dp.check_array("x", x, min_ndim=1)
    if x.shape[-1] != w.shape[1]:
        raise ValueError(f"x.shape[-1] must equal w.shape[1] = {w.shape[1]}, got x.shape = {x.shape}")
    dp.check_finite("x", x, "; the W4A16 product would silently carry them")
    if block_sizes is not None and not isinstance(block_sizes, MatmulBlockSizes):
        raise ValueError(f"block_sizes must be a MatmulBlockSizes, got {type(block_sizes).__name__}")
    from jaxwb.pallas_kernels.quant.nvfp4 import float_out_dtype

    out_dtype = float_out_dtype(out_dtype or x.dtype)
    impl, plat = dp.resolve(
        implementation,
        op="fp4_matmul",
        refusal=lambda b: (
            "decode='bitplace' runs on the GPU tiling only (implementation 'triton' or 'interpret'), not on mosaic_tpu"
            if decode == "bitplace" and b == "mosaic_tpu"
            else None
        ),
        facts=dict(rows=math.prod(x.shape[:-1])),
        inputs=(x,),
    )

    def run(xv, odt):
        if impl == "xla":
            return _ref_jit(xv, w, odt)
        if dequantize_above_m is not None and math.prod(x.shape[:-1]) > dequantize_above_m:
            return dequantize_then_dot(xv, w, out_dtype=odt, interpret=impl == "interpret", platform=plat)
        return fp4_matmul_pallas(
            xv,
            w,
            out_dtype=odt,
            block_sizes=block_sizes or MatmulBlockSizes(),
            interpret=impl == "interpret",
            platform=plat,
            decode=decode,
        )

    out = scaled_when_huge(run, x, w, out_dtype)
    hint = "; pass out_dtype=jnp.float32" if out_dtype == jnp.float16 else ""
    dp.check_finite_output(
        out,
        f"x, w: x @ dequantize(w).T would overflow {out_dtype.name}: {{}} output value(s) are inf/nan (largest "
        f"|x| {{}}){hint}",
        dp.max_abs(x),
    )
    return out


# |e2m1 value * s_b| < 2^WEIGHT_EXPONENT[format]: 6 * 448 = 2688 (NVFP4, RaZeR activation: specials +-5), 8 * 28
# (RaZeR weight); MXFP4's E8M0 scales reach 2^126, so its bound is read from the largest scale byte
WEIGHT_EXPONENT = {"nvfp4": 12, "razer_activation": 12, "razer_weight": 8}


def overflow_shift(amax, k: int, w: QuantizedArray, xp=jnp):
    """The power of two ``m >= 0`` that keeps the float32 accumulator of ``x 2^-m @ (value * s_b)^T`` finite:
    ``|acc| <= K 2^(e_x + 1) 2^e_w < 2^127`` with ``2^e_x <= max|x| < 2^(e_x + 1)`` (``x`` rounded to bfloat16
    stays below ``2^(e_x + 1)``) and ``|value * s_b| < 2^e_w``. 0 for every ordinary input; at most 126."""
    bits = (
        xp.asarray(amax, np.float32).view(np.uint32)
        if xp is np
        else jax.lax.bitcast_convert_type(jnp.asarray(amax, jnp.float32), jnp.uint32)
    )
    e_x = (bits >> 23).astype(xp.int32) - 127
    if w.format == "mxfp4":
        e_w = xp.max(w.scales).astype(xp.int32) - 127 + 3  # values <= 6 < 2^3 times 2^(code - 127)
    else:
        e_w = WEIGHT_EXPONENT[w.format]
    return xp.clip((max(k, 1) - 1).bit_length() + e_x + 1 + e_w - 126, 0, 126)


def scaled_when_huge(run, x, w: QuantizedArray, out_dtype):
    """``run(x, out_dtype)`` safe from accumulator overflow: where ``max|x|`` is large enough for the float32
    accumulator to overflow (:func:`overflow_shift` ``m > 0``), the kernel (or the XLA path) runs on ``x 2^-m``
    and its output is multiplied by ``2^m`` (in float32, then cast to ``out_dtype``): x's bfloat16 rounding,
    the products and their sums all scale exactly by powers of two, so only results that do not fit
    ``out_dtype`` overflow (an output rounded to ``out_dtype`` before the ``2^m`` keeps its precision unless it
    was subnormal there). Both scalings are selects on ``m > 0``: an ordinary x reaches the one kernel call
    unchanged and its output is returned as is, bit for bit (one kernel instance, traced or eager)."""
    k = x.shape[-1]
    ct = jnp.promote_types(x.dtype, jnp.float32)
    m = overflow_shift(jnp.max(jnp.abs(x)).astype(jnp.float32), k, w)
    huge = m > 0
    xv = jnp.asarray(x).astype(ct)
    out = run(jnp.where(huge, xv * dp.pow2(-m).astype(ct), xv), out_dtype)
    return jnp.where(huge, (out.astype(jnp.float32) * dp.pow2(m)).astype(out_dtype), out)
