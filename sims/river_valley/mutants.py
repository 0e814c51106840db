"""river_valley: the mutants, plausible bugs each of which must make a claim fail on the quick preset
(``workbench audit river_valley``)."""

from __future__ import annotations

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
]
