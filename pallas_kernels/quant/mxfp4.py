"""MXFP4 (OCP microscaling): E2M1 codes, one E8M0 power-of-two scale per 32 elements, no global scale.

The scale is ``amax / 6`` rounded *up* to a power of two (the ``jax.nn`` ``mxfp4`` rule), so no element clips;
see ``reference.py``. ``implementation`` as in :mod:`jaxwb.pallas_kernels.quant.nvfp4`.

    mxfp4_quantize(x, *, implementation=None, block_sizes=None) -> QuantizedArray (global_scale = 1)
    mxfp4_dequantize(q, *, dtype=jnp.float32, implementation=None, block_sizes=None) -> array of q.shape
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import blockwise, fp4
from jaxwb.pallas_kernels.quant.blockwise import QuantBlockSizes
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray
from jaxwb.pallas_kernels.quant.nvfp4 import float_out_dtype

__all__ = ["mxfp4_quantize", "mxfp4_dequantize"]


def mxfp4_quantize(
    x: Float[Array, "*batch K"], *, implementation: Implementation = None, block_sizes: QuantBlockSizes | None = None
) -> QuantizedArray:
    """Quantize ``x`` (..., K), K % 32 == 0, to MXFP4.

    Returns codes uint8 (..., K/2) and E8M0 scale bytes uint8 (..., K/32); ``global_scale`` is 1."""
    fp4.check_input(x, 32)
    x = jnp.asarray(x)
    return blockwise.quantize(x, jnp.float32(1.0), fmt="mxfp4", implementation=implementation, block_sizes=block_sizes)


def mxfp4_dequantize(
    q: QuantizedArray,
    *,
    dtype=jnp.float32,
    implementation: Implementation = None,
    block_sizes: QuantBlockSizes | None = None,
) -> Float[Array, "*batch K"]:
    """``e2m1 * 2^(e-127)`` as ``dtype``, shape ``q.shape``."""
    fp4.check_format(q, ("mxfp4",))
    return blockwise.dequantize(q, dtype=float_out_dtype(dtype), implementation=implementation, block_sizes=block_sizes)
