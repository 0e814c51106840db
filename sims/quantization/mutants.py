"""quantization: the mutants, plausible bugs the claims must catch (``workbench audit quantization``)."""

from __future__ import annotations

import math

from jaxwb.sims.core.audit import Mutant

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
]
