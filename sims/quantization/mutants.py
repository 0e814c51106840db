"""quantization: the mutants, plausible bugs the claims must catch (``workbench audit quantization``)."""

from __future__ import annotations

import math

from jaxwb.sims.core.audit import Mutant


def _sign4_off_by_one(f):
    """InQuant's unpack sign-extends a negative 4-bit code as nib - 15 instead of nib - 16."""
    import jax.numpy as jnp

    return lambda nib: jnp.where(nib.astype(jnp.int32) >= 8, nib.astype(jnp.int32) - 15, nib.astype(jnp.int32))


def _float16_rounding_dropped(f):
    """reduce_precision to float16 (5 exponent, 10 mantissa bits) a no-op: InQuant computes its codes with the
    unrounded scales but stores the float16 ones (the excess-precision rewrite inquant.py's comment describes)."""

    def reduce_precision(x, exponent_bits, mantissa_bits):
        if (exponent_bits, mantissa_bits) == (5, 10):
            return x
        return f(x, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)

    return reduce_precision


MUTANTS = [
    Mutant(
        "dither_dropped_in_encoder",
        "jaxwb.pallas_kernels.quant.rht:encode_levels",
        lambda f: lambda t, u, bits: f(t, 0.0 * u, bits),
        "the encoder rounds without the dither u while the decoder still subtracts it",
    ),
    Mutant(
        "rht_scale_rounded_up",
        "jaxwb.pallas_kernels.quant.rht:_scale",
        lambda f: lambda scaling, sumsq, yq, qq, d: f(scaling, sumsq, yq, qq, d) * 1.02,
        "the per-vector scale S 2% too large (rounded up to a coarse float)",
    ),
    Mutant(
        "panter_dite_missing_sqrt3",
        "jaxwb.theory.dithered_quant:PANTER_DITE",
        lambda c: math.pi / 2,
        "the bound's constant pi/2 instead of pi sqrt(3)/2 (the Gaussian moment E exp(g^2/3) dropped)",
    ),
    Mutant(
        "inquant_saliency_reversed",
        "jaxwb.pallas_kernels.quant.inquant:select_outliers_and_donors",
        lambda f: lambda saliency, n_outliers: f(-saliency, n_outliers),
        "InQuant promotes the least salient channels to 8 bits",
    ),
    Mutant(
        "inquant_sign_extension_off_by_one",
        "jaxwb.pallas_kernels.quant.inquant:_sign4",
        _sign4_off_by_one,
        "InQuant's unpack reads a negative 4-bit code c as c + 1 (nib - 15 for nibbles >= 8)",
    ),
    Mutant(
        "inquant_codes_from_unrounded_scale",
        "jax.lax:reduce_precision",
        _float16_rounding_dropped,
        "InQuant's codes are computed with the float32 scale while the float16-rounded scale is stored",
    ),
]
