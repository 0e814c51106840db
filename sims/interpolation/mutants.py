"""Mutants of the interpolation result: plausible bugs, each must make a claim fail on the quick preset
(``workbench audit interpolation``)."""

from __future__ import annotations

import jax

from jaxwb.sims.core.audit import Mutant


def _gradient_without_weights(f):
    def mutated(problem, e, idx):
        a = problem.A[idx]
        return a.T @ (a @ e) / idx.shape[0]

    return mutated


def _uniform_sampler(f):
    def mutated(problem, batch_size, *, key):
        return jax.random.randint(key, (batch_size,), 0, problem.probs.shape[0])

    return mutated


def _traj_batch_off_by_one(f):
    def mutated(h, U, K, e0, lr, beta, nu, batch_size, steps):
        return f(h, U, K, e0, lr, beta, nu, batch_size + 1, steps)

    return mutated


def _nesterov_factor_dropped(f):
    def mutated(lr, beta, nu, h):
        M, c = f(lr, beta, nu, h)
        # M11 = 1 + beta - lr h - nu beta lr h  ->  drop the Nesterov term nu beta lr h
        return M.at[..., 0, 0].add(nu * beta * lr * h), c

    return mutated


def _divergence_threshold_3x(f):
    def mutated(*args, **kwargs):
        return f(*args, blowup=3.0)

    return mutated


# first: the cheapest (only the exact-recursion function recompiles: the step counts and the Monte Carlo are
# unchanged; the default suite runs it)
MUTANTS = [
    Mutant(
        "exact_recursion_batch_off_by_one",
        "jaxwb.theory.interpolation.mean_square:trajectory_jit",
        _traj_batch_off_by_one,
        "exact E||e_t||^2 recursion divides the noise by B + 1 instead of B",
    ),
    Mutant(
        "gradient_missing_importance_weights",
        "jaxwb.theory.interpolation.iterations:_error_gradient",
        _gradient_without_weights,
        "mini-batch gradient without the weights 1/(n p_i) of norm sampling",
    ),
    Mutant(
        "nesterov_factor_dropped_in_operator",
        "jaxwb.theory.interpolation.mean_square:_unified_mean",
        _nesterov_factor_dropped,
        "mean-square operator's Nesterov block without its -beta lr h term",
    ),
    Mutant(
        "sampler_uniform_instead_of_norm",
        "jaxwb.theory.interpolation.iterations:_sample_batch",
        _uniform_sampler,
        "rows drawn uniformly while the weights assume ||a_i||^2 sampling",
    ),
    # missed by the old claims (nothing read the diverged fraction; the frozen momentum transients at B = 1, 2 move
    # no statistic past its interval), caught by the divergence claim
    Mutant(
        "divergence_threshold_3x",
        "jaxwb.theory.interpolation.iterations:curves_jit",
        _divergence_threshold_3x,
        "a trajectory counts as diverged (and is frozen) above 3 ||e_0||^2 instead of 1e10 ||e_0||^2",
    ),
]
