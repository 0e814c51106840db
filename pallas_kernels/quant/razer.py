"""RaZeR (redundant zero remapping) on NVFP4: the FP4 code 0x8 (-0) decodes to a per-block special value.

* ``variant="activation"``: NVFP4's global and E4M3 block scale; the scale byte's sign bit picks the special
  value from {+5, -5}.
* ``variant="weight"``: 6-bit E3M3 block scale (clamped to [2^-5, 28]), global scale amax / (6 * 28), two bits
  pick the special value from {+5, -5, +8, -8}; the block scale depends on the candidate (amax -> 6 or 8).

Per block the candidate with the smallest block error wins; an element takes the special value only when
strictly closer to it than to its (RNE) FP4 rounding. The exact rules, the rounding choice and the "never
worse than NVFP4" guarantee are in ``reference.py``.
``implementation`` as in :mod:`jaxwb.pallas_kernels.quant.nvfp4`.

    razer_quantize(x, *, variant="activation", global_scale=None, implementation=None) -> QuantizedArray
    razer_dequantize(q, *, dtype=jnp.float32, implementation=None) -> array of q.shape
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxwb.pallas_kernels.dispatch import Implementation
from jaxwb.pallas_kernels.quant import blockwise, fp4
from jaxwb.pallas_kernels.quant import reference as ref
from jaxwb.pallas_kernels.quant.blockwise import QuantBlockSizes
from jaxwb.pallas_kernels.quant.fp4 import QuantizedArray
from jaxwb.pallas_kernels.quant.nvfp4 import float_out_dtype, resolve_global_scale

__all__ = ["razer_quantize", "razer_dequantize"]

VARIANTS = ("activation", "weight")


def razer_quantize(
    x: Float[Array, "*batch K"],
    *,
    variant: str = "activation",
    global_scale=None,
    implementation: Implementation = None,
    block_sizes: QuantBlockSizes | None = None,
) -> QuantizedArray:
    """Quantize ``x`` (..., K), K % 16 == 0, with RaZeR; format "razer_activation" or "razer_weight"."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    fp4.check_input(x, 16)
    x = jnp.asarray(x)
    denom = ref.NVFP4_GLOBAL_MAX if variant == "activation" else ref.RAZER_WEIGHT_GLOBAL_MAX
    g = resolve_global_scale(x, global_scale, denom)
    return blockwise.quantize(x, g, fmt=f"razer_{variant}", implementation=implementation, block_sizes=block_sizes)


def razer_dequantize(
    q: QuantizedArray,
    *,
    dtype=jnp.float32,
    implementation: Implementation = None,
    block_sizes: QuantBlockSizes | None = None,
) -> Float[Array, "*batch K"]:
    """``(value * s_block) * global_scale`` with code 0x8 -> the block's special value; shape ``q.shape``."""
    fp4.check_format(q, ("razer_activation", "razer_weight"))
    return blockwise.dequantize(q, dtype=float_out_dtype(dtype), implementation=implementation, block_sizes=block_sizes)
