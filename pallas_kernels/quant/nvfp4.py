"""NVFP4: E2M1 codes, one E4M3 scale per 16 elements, an FP32 global scale (math: ``reference.py``).

Public ops (blocks along the last axis; ``implementation`` (``jaxwb.pallas_kernels.dispatch``): None = the Triton
kernel on a GPU, the Mosaic TPU kernel on a TPU, the XLA reference on CPU; "xla"; "triton"; "mosaic_tpu";
"interpret" = the kernel's GPU form in interpret mode, bit-exact with the reference on CPU):

    nvfp4_quantize(x, *, global_scale=None, implementation=None, block_sizes=None) -> QuantizedArray
    nvfp4_dequantize(q, *, dtype=jnp.float32, implementation=None, block_sizes=None) -> array of q.shape
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxwb.pallas_kernels import dispatch as dp
from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import blockwise, fp4
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.blockwise import QuantBlockSizes
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray

__all__ = ["nvfp4_quantize", "nvfp4_dequantize"]


def resolve_global_scale(x, global_scale, denom):
    """The float32 per-tensor scale: ``amax(|x|) / denom`` when ``global_scale`` is None, else the caller's
    scalar, checked (a finite float32 >= 2^-126; eager, or under ``jit`` inside ``checked``)."""
    if global_scale is None:
        return ref.global_scale_from_amax(jnp.max(jnp.abs(x)), denom)
    if isinstance(global_scale, jax.core.Tracer):
        g = global_scale.astype(jnp.float32)
        if g.shape != ():
            raise ValueError(f"global_scale must be a scalar, got shape {g.shape}")
        dp.require(
            jnp.isfinite(g) & (g >= np.float32(2.0**-126)), "global_scale must be a finite float32 >= 2^-126, got {}", g
        )
        return g
    if not isinstance(global_scale, jax.core.Tracer):
        v = np.asarray(global_scale, np.float32)
        if v.shape != ():
            raise ValueError(f"global_scale must be a scalar, got shape {v.shape}")
        if not (np.isfinite(v) and v >= np.float32(2.0**-126)):
            raise ValueError(f"global_scale must be a finite float32 >= 2^-126, got {float(v)!r}")
    g = jnp.asarray(global_scale, jnp.float32)
    if g.shape != ():
        raise ValueError(f"global_scale must be a scalar, got shape {g.shape}")
    return g


def float_out_dtype(dtype):
    """``dtype`` as a floating jnp dtype for a dequantized output; another dtype raises ``ValueError``.

    Canonicalized as jax does (``float64`` is ``float32`` unless ``jax_enable_x64``): a kernel's output buffer
    has the dtype its values are computed in (a float64 output ref with float32 values fails inside Pallas)."""
    try:
        dt = jnp.dtype(dtype)
    except TypeError:
        raise ValueError(f"dtype must be a floating-point dtype, got {dtype!r}") from None
    if not jnp.issubdtype(dt, jnp.floating):
        raise ValueError(f"dtype must be a floating-point dtype, got {dt}")
    return jnp.dtype(jax.dtypes.canonicalize_dtype(dt))


def nvfp4_quantize(
    x: Float[Array, "*batch K"],
    *,
    global_scale=None,
    implementation: Implementation = None,
    block_sizes: QuantBlockSizes | None = None,
) -> QuantizedArray:
    """Quantize ``x`` (..., K), K % 16 == 0, to NVFP4.

    Args:
      x: float array; inf/nan raise ValueError when ``x`` is concrete (under jit: ``jaxwb.pallas_kernels.checked``).
      global_scale: FP32 scalar; default ``max(amax(|x|) / (448 * 6), 2^-126)``.
    Returns:
      QuantizedArray(codes uint8 (..., K/2), scales uint8 E4M3 (..., K/16), global_scale f32, format "nvfp4").
    """
    fp4.check_input(x, 16)
    x = jnp.asarray(x)
    g = resolve_global_scale(x, global_scale, ref.NVFP4_GLOBAL_MAX)
    return blockwise.quantize(x, g, fmt="nvfp4", implementation=implementation, block_sizes=block_sizes)


def nvfp4_dequantize(
    q: QuantizedArray,
    *,
    dtype=jnp.float32,
    implementation: Implementation = None,
    block_sizes: QuantBlockSizes | None = None,
) -> Float[Array, "*batch K"]:
    """``(e2m1 * s_block) * global_scale`` as ``dtype``, shape ``q.shape``."""
    fp4.check_format(q, ("nvfp4",))
    return blockwise.dequantize(q, dtype=float_out_dtype(dtype), implementation=implementation, block_sizes=block_sizes)
