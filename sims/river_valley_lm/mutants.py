"""river_valley_lm: the mutants, plausible bugs each of which some claim must catch
(``workbench audit river_valley_lm``)."""

from __future__ import annotations

from jaxwb.sims.core.audit import Mutant


def _momentum_twice(f):
    return lambda v, g, beta: f(f(v, g, beta), g, beta)


def _momentum_sign_flipped(f):
    return lambda v, g, beta: f(-v, g, beta)


def _momentum_as_ema(f):
    return lambda v, g, beta: f(v, (1.0 - beta) * g, beta)


def _ritz_ascending(f):
    def lanczos(op, dim, *, key, iters, k):
        ev, vec = f(op, dim, key=key, iters=iters, k=iters)
        return ev[::-1][:k], vec[:, ::-1][:, :k]

    return lanczos


MUTANTS = [
    Mutant(
        "momentum_applied_twice",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_twice,
        "heavy-ball velocity accumulated twice per step: v <- beta (beta v + g) + g",
    ),
    Mutant(
        "momentum_sign_flipped",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_sign_flipped,
        "heavy-ball velocity with the momentum term's sign flipped: v <- g - beta v",
    ),
    Mutant(
        "momentum_as_ema",
        "jaxwb.sims.river_valley_lm.dynamics:hb_velocity",
        _momentum_as_ema,
        "velocity as an exponential moving average v <- beta v + (1-beta) g (optax's ema for its trace): the step "
        "along a flat direction is lr, not lr/(1-beta)",
    ),
    Mutant(
        "ritz_pairs_ascending",
        "jaxwb.theory.hessian:lanczos_top",
        _ritz_ascending,
        "Lanczos Ritz pairs kept in eigh's ascending order: the 'top' Hessian directions are the bottom ones",
    ),
]
