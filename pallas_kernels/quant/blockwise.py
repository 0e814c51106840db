"""Pallas plumbing shared by the block quantizers: one quantize kernel and one dequantize kernel per format.

The GPU form (Triton, and the interpreter, which runs that form on any platform) computes each tile with
:mod:`jaxwb.pallas_kernels.quant.tile_codes`: the rules of :mod:`jaxwb.pallas_kernels.quant.reference` bit for
bit, with fewer instructions per element (even / odd element halves, per-block thresholds, magic-constant
rounding; ``tests/kernels/test_tile_codes.py`` checks them against the reference block functions, the kernel
tests check interpret mode against the reference ops). The TPU form (Mosaic) calls the reference block
functions themselves on 2-D tiles viewed as ``(bm, bk / B, B)``, packing with a reshape + shifted sum.

Tiling: the input is viewed as ``(R, K)`` (all leading axes flattened); the grid is ``(R / bm, K / bk)``
with a ``(bm, bk)`` tile per program, ``bk`` a multiple of the format's block and of 2 (no strided slicing,
no gathers: Triton- and Mosaic-friendly); the scale bytes are written as ``uint8``.
Ragged shapes are padded with zeros to whole tiles and sliced back (a zero block quantizes to code 0 and
never touches real data). Variant ``QuantBlockSizes(edge="mask")``: no padding copy; the grid covers the
array with partial edge tiles whose out-of-range rows and FP4 blocks are computed on whatever the masked
loads give and never stored (every FP4 block is independent and the last axis is a whole number of blocks,
so an edge tile's real blocks are exact). ``num_warps`` sets the Triton warps (default 4, as before).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import fp4, razer_xla, tile_codes
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray

EDGES = ("pad", "mask")


@dataclasses.dataclass(frozen=True)
class QuantBlockSizes:
    """Tile of one Pallas quantize/dequantize program: ``block_rows`` x ``block_cols`` elements (powers of
    two; ``block_cols`` >= 32, a multiple of every format's block). Shrunk to the array when it is smaller;
    ragged shapes are padded (``edge="pad"``, the default) or covered by masked edge tiles (``edge="mask"``).
    ``num_warps``: Triton warps per program (a power of two; ignored on TPU). Checked on construction."""

    block_rows: int = 16
    block_cols: int = 512
    num_warps: int = 4
    edge: str = "pad"

    def __post_init__(self):
        dp.check_block("block_rows", self.block_rows, pow2=True)
        dp.check_block("block_cols", self.block_cols, pow2=True, minimum=32)
        dp.check_block("num_warps", self.num_warps, pow2=True)
        if self.edge not in EDGES:
            raise ValueError(f"edge must be one of {EDGES}, got {self.edge!r}")


def resolve_implementation(implementation: Implementation, op: str) -> tuple[str, str]:
    """The shared resolver (:func:`jaxwb.pallas_kernels.dispatch.resolve`) -> (implementation, platform); the
    block kernels pad any shape. ``op`` (e.g. "razer_activation_quantize"): the key of its hardware
    measurements (:data:`jaxwb.pallas_kernels.dispatch.MEASURED`), which may make ``None`` pick XLA."""
    return dp.resolve(implementation, op=op)


def compiler_params(platform: str | None = None, num_warps: int = 4):
    """Triton params unless lowering for TPU (``platform`` or the default backend)."""
    platform = platform or jax.default_backend()
    if platform == "tpu":
        return None
    from jax.experimental.pallas import triton as plgpu

    return plgpu.CompilerParams(num_warps=num_warps, num_stages=2)


def pow2_at_least(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1): tile sizes clipped to small operands."""
    return 1 << max(0, (int(n) - 1).bit_length())


def _tiles(rows: int, cols: int, block: int, bs: QuantBlockSizes, platform: str | None = None):
    if (platform or jax.default_backend()) == "tpu":
        # Mosaic wants the last two block dims divisible by (8, 128) or equal to the array's: whole rows,
        # and 32 of them (the uint8 sublane tile).
        return 32, cols, -(-rows // 32) * 32, cols
    bm = min(bs.block_rows, pow2_at_least(rows))
    bk = max(block, min(bs.block_cols, pow2_at_least(cols)))
    return bm, bk, -(-rows // bm) * bm, -(-cols // bk) * bk


def _quantize_kernel(x_ref, g_ref, codes_ref, scales_ref, *, block_fn, block):
    bm, bk = x_ref.shape
    x = x_ref[...].astype(jnp.float32).reshape(bm, bk // block, block)
    codes, sc = block_fn(x, g_ref[...])  # g_ref holds fl(1/g)
    codes_ref[...] = fp4.pack_nibbles(codes.reshape(bm, bk))
    scales_ref[...] = sc.astype(jnp.uint8)


def _quantize_kernel_gpu(x_ref, g_ref, codes_ref, scales_ref, *, tile_fn):
    """The GPU form (Triton, and the interpreter): ``tile_fn`` (:mod:`tile_codes`) packs the codes itself."""
    byte, sc = tile_fn(x_ref[...].astype(jnp.float32), g_ref[0, 0])  # g_ref holds fl(1/g)
    codes_ref[...] = byte.astype(jnp.uint8)
    scales_ref[...] = sc.astype(jnp.uint8)


GPU_TILE_FNS = {
    "nvfp4": tile_codes.nvfp4_tile,
    "mxfp4": lambda x, inv_g: tile_codes.mxfp4_tile(x),
    "razer_activation": tile_codes.razer_activation_tile,
    "razer_weight": tile_codes.razer_weight_tile,
}


def _dequantize_kernel_gpu(codes_ref, scales_ref, g_ref, out_ref, *, fmt):
    """The GPU form (Triton, and the interpreter): :func:`tile_codes.dequantize_tile`."""
    vals = tile_codes.dequantize_tile(codes_ref[...], scales_ref[...], g_ref[0, 0], fmt)
    out_ref[...] = vals.astype(out_ref.dtype)


def _dequantize_kernel(codes_ref, scales_ref, g_ref, out_ref, *, fmt, block):
    bm, bk = out_ref.shape
    codes = fp4.unpack_nibbles(codes_ref[...]).reshape(bm, bk // block, block)
    vals = ref.dequantize_blocks(codes, scales_ref[...].astype(jnp.uint32), g_ref[...], fmt)
    out_ref[...] = vals.reshape(bm, bk).astype(out_ref.dtype)


def _g_block(g):
    return jnp.asarray(g, jnp.float32).reshape(1, 1)


@functools.partial(jax.jit, static_argnames=("fmt", "block_sizes", "interpret", "platform"))
def quantize_pallas(
    x,
    g,
    *,
    fmt: str,
    block_sizes: QuantBlockSizes = QuantBlockSizes(),
    interpret: bool = False,
    platform: str | None = None,
) -> QuantizedArray:
    """Quantize ``x`` (..., K) with the Pallas kernel for ``fmt``; global scale ``g`` (MXFP4 ignores it)."""
    block = fp4.BLOCK_SIZE[fmt]
    block_fn = {
        "nvfp4": ref.nvfp4_block_codes,
        "mxfp4": lambda xb, inv_g: ref.mxfp4_block_codes(xb),
        "razer_activation": ref.razer_activation_block_codes,
        "razer_weight": ref.razer_weight_block_codes,
    }[fmt]
    shape = x.shape
    # The codes and scale bytes are integers (piecewise constant in x and g): no tangent reaches the kernel.
    # Without this, autodiff through a caller (e.g. fake_quant's second-order grad) must linearize the
    # pallas_call, which the compiled GPU kernel cannot ("Linearization failed ...", seen on an H200).
    # (The returned global_scale stays g itself, differentiable as on the XLA path.)
    x2 = jax.lax.stop_gradient(x).reshape(-1, shape[-1])
    rows, cols = x2.shape
    bm, bk, rp, kp = _tiles(rows, cols, block, block_sizes, platform)
    masked = block_sizes.edge == "mask" and (platform or jax.default_backend()) != "tpu"
    if masked:  # partial edge tiles, no padding copy (module docstring)
        rp, kp = rows, cols
    elif (rp, kp) != (rows, cols):
        x2 = jnp.pad(x2, ((0, rp - rows), (0, kp - cols)))
    gpu_form = (platform or jax.default_backend()) != "tpu" and fmt in GPU_TILE_FNS
    kernel = (
        functools.partial(_quantize_kernel_gpu, tile_fn=GPU_TILE_FNS[fmt])
        if gpu_form
        else functools.partial(_quantize_kernel, block_fn=block_fn, block=block)
    )
    codes, scales = pl.pallas_call(
        kernel,
        grid=(-(-rp // bm), -(-kp // bk)),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j: (i, j)), pl.BlockSpec((1, 1), lambda i, j: (0, 0))],
        out_specs=[
            pl.BlockSpec((bm, bk // 2), lambda i, j: (i, j)),
            pl.BlockSpec((bm, bk // block), lambda i, j: (i, j)),
        ],
        out_shape=[jax.ShapeDtypeStruct((rp, kp // 2), jnp.uint8), jax.ShapeDtypeStruct((rp, kp // block), jnp.uint8)],
        interpret=interpret,
        compiler_params=None if interpret else compiler_params(platform, block_sizes.num_warps),
        name=f"{fmt}_quantize",
    )(x2, _g_block(ref.reciprocal(jax.lax.stop_gradient(g))))
    codes = codes[:rows, : cols // 2].reshape(*shape[:-1], shape[-1] // 2)
    scales = scales[:rows, : cols // block].reshape(*shape[:-1], shape[-1] // block)
    return QuantizedArray(
        codes=codes,
        scales=scales,
        global_scale=jnp.asarray(g, jnp.float32),
        shape=tuple(shape),
        format=fmt,
        block_size=block,
    )


@functools.partial(jax.jit, static_argnames=("dtype", "block_sizes", "interpret", "platform"))
def dequantize_pallas(
    q: QuantizedArray,
    *,
    dtype=jnp.float32,
    block_sizes: QuantBlockSizes = QuantBlockSizes(),
    interpret: bool = False,
    platform: str | None = None,
):
    """Dequantize any :class:`QuantizedArray` with the Pallas kernel -> array of shape ``q.shape``."""
    block = q.block_size
    shape = q.shape
    codes = q.codes.reshape(-1, shape[-1] // 2)
    scales = q.scales.reshape(-1, shape[-1] // block)
    rows, cols = codes.shape[0], shape[-1]
    bm, bk, rp, kp = _tiles(rows, cols, block, block_sizes, platform)
    if block_sizes.edge == "mask" and (platform or jax.default_backend()) != "tpu":
        rp, kp = rows, cols  # partial edge tiles (module docstring)
    elif (rp, kp) != (rows, cols):
        codes = jnp.pad(codes, ((0, rp - rows), (0, (kp - cols) // 2)))
        # padded scale bytes decode to a finite scale; their codes are 0 so the values are 0 and sliced away
        scales = jnp.pad(scales, ((0, rp - rows), (0, (kp - cols) // block)))
    gpu_form = (platform or jax.default_backend()) != "tpu"
    call = pl.pallas_call(
        functools.partial(_dequantize_kernel_gpu, fmt=q.format)
        if gpu_form
        else functools.partial(_dequantize_kernel, fmt=q.format, block=block),
        grid=(-(-rp // bm), -(-kp // bk)),
        in_specs=[
            pl.BlockSpec((bm, bk // 2), lambda i, j: (i, j)),
            pl.BlockSpec((bm, bk // block), lambda i, j: (i, j)),
            pl.BlockSpec((1, 1), lambda i, j: (0, 0)),
        ],
        out_specs=pl.BlockSpec((bm, bk), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((rp, kp), dtype),
        interpret=interpret,
        compiler_params=None if interpret else compiler_params(platform, block_sizes.num_warps),
        name=f"{q.format}_dequantize",
    )
    out = _scaled_by_global(lambda c, s, g: call(c, s, _g_block(g)), codes, scales, q.global_scale)
    return out[:rows, :cols].reshape(shape)


def _scaled_by_global(kernel, codes, scales, g):
    """``kernel(codes, scales, g)``, differentiable in the global scale g without differentiating the kernel:
    the output decode(codes) * s_b * g is linear in g, so its tangent is ``out * dg / g`` (g >= 2^-126 > 0).
    Autodiff through a compiled pallas_call fails ("Linearization failed ...", seen on an H200 for
    fake_quant's second-order grad); the integer codes and scale bytes carry no tangent."""

    @jax.custom_jvp
    def f(codes, scales, g):
        return kernel(codes, scales, g)

    @f.defjvp
    def f_jvp(primals, tangents):
        codes, scales, g = primals
        out = f(codes, scales, g)
        return out, (out.astype(jnp.float32) * (tangents[2] / g)).astype(out.dtype)

    return f(codes, scales, jnp.asarray(g, jnp.float32))


def _check_block_sizes(block_sizes):
    if block_sizes is not None and not isinstance(block_sizes, QuantBlockSizes):
        raise ValueError(f"block_sizes must be a QuantBlockSizes, got {type(block_sizes).__name__}")


def quantize(x, g, *, fmt: str, implementation, block_sizes: QuantBlockSizes | None = None):
    """Dispatch: "xla" -> reference, "triton" / "mosaic_tpu" -> the kernel for that platform, "interpret" -> the
    kernel's GPU form in interpret mode."""
    _check_block_sizes(block_sizes)
    impl, plat = resolve_implementation(implementation, f"{fmt}_quantize")
    if impl == "xla":
        return _ref_jit(x, g, fmt)
    return quantize_pallas(
        x, g, fmt=fmt, block_sizes=block_sizes or QuantBlockSizes(), interpret=impl == "interpret", platform=plat
    )


@functools.partial(jax.jit, static_argnames=("fmt",))
def _ref_jit(x, g, fmt):
    if fmt == "nvfp4":
        return ref.nvfp4_quantize(x, global_scale=g)
    if fmt == "mxfp4":
        return ref.mxfp4_quantize(x)
    # RaZeR's XLA path: the reference's bits in a layout XLA:CPU compiles well (razer_xla's docstring)
    return razer_xla.razer_quantize(x, variant=fmt.removeprefix("razer_"), global_scale=g)


@functools.partial(jax.jit, static_argnames=("dtype",))
def _ref_dequantize_jit(q, dtype):
    return ref.dequantize(q, dtype)


def dequantize(q: QuantizedArray, *, dtype, implementation, block_sizes: QuantBlockSizes | None = None):
    _check_block_sizes(block_sizes)
    impl, plat = resolve_implementation(implementation, f"{q.format}_dequantize")
    if impl == "xla":
        return _ref_dequantize_jit(q, dtype)
    return dequantize_pallas(
        q, dtype=dtype, block_sizes=block_sizes or QuantBlockSizes(), interpret=impl == "interpret", platform=plat
    )
