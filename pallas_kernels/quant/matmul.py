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
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jaxtyping import Array, Float

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import blockwise, fp4
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray

__all__ = ["fp4_matmul", "MatmulBlockSizes"]

MATMUL_FORMATS = ("nvfp4", "mxfp4", "razer_activation", "razer_weight")


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


def _kernel(x_ref, codes_ref, scales_ref, g_ref, o_ref, *, fmt: str, block: int, bk: int):
    bm, k_total = x_ref.shape
    bn = codes_ref.shape[0]
    nk = k_total // bk

    def body(k, acc):
        start = pl.multiple_of(k * bk, bk)
        xk = x_ref[:, pl.ds(start, bk)]
        ck = codes_ref[:, pl.ds(pl.multiple_of(k * (bk // 2), bk // 2), bk // 2)]
        sk = scales_ref[:, pl.ds(pl.multiple_of(k * (bk // block), bk // block), bk // block)]
        sk = sk.astype(jnp.uint32)
        codes = fp4.unpack_nibbles(ck).reshape(bn, bk // block, block)
        w = ref.element_values(codes, sk, fmt) * ref.block_scale_value(sk, fmt)[..., None]
        w = w.reshape(bn, bk).astype(jnp.bfloat16)
        return acc + jax.lax.dot_general(
            xk.astype(jnp.bfloat16), w, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32
        )

    acc = jax.lax.fori_loop(0, nk, body, jnp.zeros((bm, bn), jnp.float32))
    o_ref[...] = (acc * g_ref[...]).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("out_dtype", "block_sizes", "interpret", "platform"))
def fp4_matmul_pallas(
    x,
    w: QuantizedArray,
    *,
    out_dtype=None,
    block_sizes: MatmulBlockSizes = MatmulBlockSizes(),
    interpret: bool = False,
    platform: str | None = None,
):
    """The Pallas kernel (see the module docstring). ``platform`` picks TPU or Triton tiling/params."""
    out_dtype = jnp.dtype(out_dtype or x.dtype)
    n, k = w.shape
    lead = x.shape[:-1]
    x2 = x.reshape(-1, k).astype(jnp.bfloat16)
    m = x2.shape[0]
    block = w.block_size
    tpu = (platform or jax.default_backend()) == "tpu"
    bm = max(16, min(block_sizes.block_m, blockwise._pow2_at_least(m)))
    bn = max(16, min(block_sizes.block_n, blockwise._pow2_at_least(n)))
    if tpu:
        bm, bn = max(bm, 32), max(bn, 128)  # uint8 sublane tile 32; output lanes 128
        bk = kp = k
    else:
        bk = max(block, 16, min(block_sizes.block_k, blockwise._pow2_at_least(k)))
        kp = -(-k // bk) * bk
    mp, np_ = -(-m // bm) * bm, -(-n // bn) * bn
    codes, scales = w.codes, w.scales
    if (mp, kp) != (m, k):
        x2 = jnp.pad(x2, ((0, mp - m), (0, kp - k)))
    if (np_, kp) != (n, k):
        codes = jnp.pad(codes, ((0, np_ - n), (0, (kp - k) // 2)))
        scales = jnp.pad(scales, ((0, np_ - n), (0, (kp - k) // block)))
    out = pl.pallas_call(
        functools.partial(_kernel, fmt=w.format, block=block, bk=bk),
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
        name=f"{w.format}_matmul",
    )(x2, codes, scales, jnp.asarray(w.global_scale, jnp.float32).reshape(1, 1))
    return out[:m, :n].reshape(*lead, n)


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
) -> Float[Array, "*batch N"]:
    """``x @ dequantize(w).T`` for ``x`` (..., K) and an FP4 weight ``w`` of logical shape (N, K) -> (..., N).

    ``out_dtype`` defaults to ``x.dtype``; ``implementation`` as for the quantizers (None: Pallas on GPU/TPU,
    the XLA reference on CPU). Raises ValueError for a non-2-D weight, a K mismatch or a non-float ``x``."""
    fp4.check_format(w, MATMUL_FORMATS, name="w")
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
    prefer_xla = dp.xla_measured_faster("fp4_matmul", rows=math.prod(x.shape[:-1]))
    impl = dp.resolve(implementation, prefer_xla=prefer_xla)[0]
    if impl == "xla":
        return _ref_jit(x, w, out_dtype)
    return fp4_matmul_pallas(
        x, w, out_dtype=out_dtype, block_sizes=block_sizes or MatmulBlockSizes(), interpret=impl == "interpret"
    )
