"""zoe_grad: the mutants, plausible bugs the claims must catch (``workbench audit zoe_grad``)."""

from __future__ import annotations

import math

from jaxwb.sims.core.audit import Mutant

# first: the cheapest (it changes only the kernel check's compiled function; the default suite runs it)
MUTANTS = [
    Mutant(
        "fake_quant_grad_times_scale",
        "jaxwb.pallas_kernels.quant.fake_quant:_surrogate",
        lambda f: lambda z, special, spec: f(z, special, spec) * 1.25,
        "fake_quant's backward off by 25% (a stray chain-rule factor)",
    ),
    Mutant(
        "density_missing_normalisation",
        "jaxwb.theory.zoe_grad:_pdf",
        lambda f: lambda t, law: 1.1 * f(t, law),
        "the perturbation density 10% too large (a dropped normalising constant)",
    ),
    Mutant(
        "boundaries_at_levels",
        "jaxwb.theory.zoe_grad:_boundaries",
        lambda f: lambda levels: levels[..., :-1] + 0.4 * (levels[..., 1:] - levels[..., :-1]),
        "decision boundaries 40% of the way between levels instead of the midpoint",
    ),
    Mutant(
        "logistic_score_without_scale",
        "jaxwb.theory.zoe_grad:_score",
        lambda f: lambda u, law: f(u, law) * (math.sqrt(3) / math.pi if law == "logistic" else 1.0),
        "the logistic score tanh(u/2s)/s without its 1/s",
    ),
    Mutant(
        "fake_quant_scale_doubled",
        "jaxwb.pallas_kernels.quant.fake_quant:_roundtrip",
        lambda f: lambda x, spec: (lambda r: (r[0], 2.0 * r[1], r[2]))(f(x, spec)),
        "the backward's per-element scale doubled (block scale from amax/3 instead of amax/6)",
    ),
]
