"""river_valley: the mutants, plausible bugs each of which must make a claim fail on the quick preset
(``workbench audit river_valley``)."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from jaxwb.sims.core.audit import Mutant


def _hb_momentum_10pct(step):
    def mutated(grad_fn, x, x_prev, *, lr, beta, method):
        return step(grad_fn, x, x_prev, lr=lr, beta=1.1 * beta if method == "hb" else beta, method=method)

    return mutated


def _polyak_lr_10pct(f):
    def mutated(mu, L):
        lr, beta, rate = f(mu, L)
        return 1.1 * lr, beta, rate

    return mutated


def _floor_slope_dropped(loss):
    def mutated(theta, valley):  # h(x) = a sin(kx) held constant in the gradient: no a k cos(kx) chain-rule term
        x, y = theta[0], theta[1:]
        river = 0.5 * valley.mu * (x - valley.x_star) ** 2 + valley.g * x
        off = y - valley.a * jnp.sin(lax.stop_gradient(valley.k * x))
        return river + 0.5 * jnp.sum(valley.lams * off**2)

    return mutated


def _blowup_halved(f):
    def mutated(valley, theta0, **kw):
        return f(valley, theta0, **{**kw, "blowup": 0.5 * kw.get("blowup", 1e6)})

    return mutated


MUTANTS = [
    Mutant(
        "hb_boundary_missing_1+beta",
        "jaxwb.theory.river_valley:hb_threshold",
        lambda f: lambda lam, beta: f(lam, beta) / (1.0 + beta),
        "heavy-ball stability edge without its (1+beta) factor: 2/lam",
    ),
    Mutant(
        "nesterov_factor_off",
        "jaxwb.theory.river_valley:nesterov_threshold",
        lambda f: lambda lam, beta: f(lam, beta) * (1.0 + 2.0 * beta) / (1.0 + beta),
        "Nesterov edge with (1+beta) where (1+2beta) belongs",
    ),
    Mutant(
        "hb_momentum_10pct",
        "jaxwb.theory.river_valley:_momentum_step",
        _hb_momentum_10pct,
        "heavy-ball step applies 1.1 beta (x - x_prev)",
    ),
    Mutant(
        "polyak_lr_10pct",
        "jaxwb.theory.river_valley:hb_optimal_params",
        _polyak_lr_10pct,
        "Polyak's optimal step 4/(sqrt L + sqrt mu)^2 off by 10%",
    ),
    # the three below: missed by the claims before the 2026-12 rework (the high-dimensional distance, the curved
    # river and the finite-horizon edges had no claim)
    Mutant(
        "high_dim_river_mu_half",
        "jaxwb.theory.river_valley:high_dim_valley",
        lambda f: lambda mu, lams, *a, **k: f(0.5 * mu, lams, *a, **k),
        "the high-dimensional valley built with half its river curvature",
    ),
    Mutant(
        "curved_floor_slope_dropped",
        "jaxwb.theory.river_valley:_valley_loss",
        _floor_slope_dropped,
        "the curved floor's slope missing from the gradient (a sin(kx) treated as a constant)",
    ),
    Mutant(
        "divergence_blowup_halved",
        "jaxwb.theory.river_valley:optimize",
        _blowup_halved,
        "optimize's divergence test at half the documented scale 1e6 (1 + max|theta0|)",
    ),
]
