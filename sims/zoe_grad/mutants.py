"""zoe_grad: the mutants, plausible bugs the claims must catch (``workbench audit zoe_grad``)."""

from __future__ import annotations

import math

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant


def _two_point_sigma_floor(f):
    def mutated(q_fn, x, sigma, **kw):
        return f(q_fn, x, jnp.maximum(sigma, 0.1), **kw)

    return mutated


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
    # the three below: missed by the claims before the 2026-12 rework (sigma sweep compared two closed forms; the
    # kernel check compared fake_quant with the kernels only; the smoothed quantizer and B had no check)
    Mutant(
        "two_point_sigma_floor",
        "jaxwb.theory.zoe_grad:two_point_estimator",
        _two_point_sigma_floor,
        "the two-point estimator clamps sigma at 0.1 (a 'keep 1/sigma finite' guard): wrong below sigma = 0.1",
    ),
    Mutant(
        "e4m3_scale_decode_one",
        "jaxwb.pallas_kernels.quant.fp4:e4m3_decode",
        lambda f: lambda code: jnp.ones_like(f(code)),
        "the E4M3 block-scale decode returns 1 for every code (a dropped exponent field)",
    ),
    Mutant(
        "smoothed_sigma_10pct",
        "jaxwb.theory.zoe_grad:_smoothed",
        lambda f: lambda x, levels, sigma, law: f(x, levels, 1.1 * sigma, law),
        "the smoothed quantizer Q_sigma evaluated at 1.1 sigma (scale vs standard deviation)",
    ),
    Mutant(
        "bias_bound_20pct_high",
        "jaxwb.theory.zoe_grad:bias_bound",
        lambda f: lambda *a, **k: 1.2 * f(*a, **k),
        "the bias constant B of eq. 9 20% too large (the bias bound still holds, but B is not the stated constant)",
    ),
]
