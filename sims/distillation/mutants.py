"""distillation: the mutants, plausible bugs each of which must make a claim fail on the quick preset
(``workbench audit distillation``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxwb.sims.core.audit import Mutant


def _kernel_factor_2(f):
    def mutated(W, scale):  # the characteristic function's 1/2 dropped: exp(-scale |w -+ w'|^2 / d)
        return f(W, 2.0 * scale)

    return mutated


def _pop_cross_no_sqrt_delta(f):
    def mutated(rf, t):
        U, V = f(rf, t)
        delta = -jnp.expm1(-2.0 * jnp.asarray(t))
        return U, V / jnp.sqrt(delta)

    return mutated


def _filter_off_by_one(f):
    def mutated(lam, steps, lr):
        return f(lam, jnp.asarray(steps) + 1.0, lr)

    return mutated


def _cd_unnormalised(f):
    def mutated(A_student, A_teacher, rf, x, theta, theta_next):  # the 1/(h tan theta)^2 normalisation dropped
        scale = (theta - theta_next) * jnp.tan(theta)
        return f(A_student, A_teacher, rf, x, theta, theta_next) * scale**2

    return mutated


def _tan_at_next(f):
    def mutated(x, A, rf, theta, theta_next):  # Euler with the slope of the end point's angle
        s = (theta - theta_next) * jnp.tan(theta_next) / ((theta - theta_next) * jnp.tan(theta))
        return x + s * (f(x, A, rf, theta, theta_next) - x)

    return mutated


def _student_from_teacher(f):
    def mutated(A_teacher, theta, theta_next, key, **kw):  # initialised at the teacher: the gradient is then 0
        return A_teacher

    return mutated


def _v_statistic(f):
    def mutated(a, b, same):  # the within-sample means include the zero diagonal (the biased V-statistic)
        out = f(a, b, same)
        if same:
            m = a.shape[0]
            return out * (m - 1) / m
        return out

    return mutated


def _ge_nugget_sign(f):
    def mutated(t):
        out = dict(f(t))
        alpha = jnp.exp(-jnp.asarray(t))
        out["v_sq"] = out["v_sq"] + 2.0 * jnp.exp(-1.0) * alpha**2  # e^{-1}(1 - alpha^2) instead of (1 + alpha^2)
        return out

    return mutated


MUTANTS = [
    Mutant(
        "noise_kernel_factor_2",
        "jaxwb.theory.distillation.model:_pair_kernels",
        _kernel_factor_2,
        "the Gaussian characteristic function without its 1/2: exp(-Delta |w -+ w'|^2 / d) in U",
    ),
    Mutant(
        "population_cross_without_sqrt_delta",
        "jaxwb.theory.distillation.model:population_moments",
        _pop_cross_no_sqrt_delta,
        "the population V = E[phi xi^T] missing Stein's factor sqrt(Delta)",
    ),
    Mutant(
        "gd_filter_off_by_one",
        "jaxwb.theory.distillation.dynamics:gd_filter",
        _filter_off_by_one,
        "the closed-form GD iterate one step ahead: (1 - (1 - lr lam)^(k+1)) / lam",
    ),
    Mutant(
        "cd_loss_unnormalised",
        "jaxwb.theory.distillation.distill:consistency_distillation_loss",
        _cd_unnormalised,
        "the consistency-distillation loss without 1/(h tan theta)^2: the effective step shrinks with the grid",
    ),
    Mutant(
        "euler_slope_at_end_point",
        "jaxwb.theory.distillation.sampling:_pf_step",
        _tan_at_next,
        "the probability-flow Euler step with tan(theta_next) instead of tan(theta)",
    ),
    Mutant(
        "student_initialised_at_teacher",
        "jaxwb.sims.distillation.run:distill_time",
        _student_from_teacher,
        "the student starts from the teacher's readout (it then keeps every direction)",
    ),
    Mutant(
        "energy_distance_v_statistic",
        "jaxwb.theory.distillation.sampling:_mean_pairwise",
        _v_statistic,
        "the energy distance's within-sample means over all pairs, diagonal included (biased)",
    ),
    Mutant(
        "ge_nugget_sign",
        "jaxwb.theory.distillation.dynamics:gaussian_equivalent",
        _ge_nugget_sign,
        "the Gaussian-equivalent v_t^2 with e^{-1}(1 - alpha^2) for e^{-1}(1 + alpha^2)",
    ),
    Mutant(
        "copy_threshold_half",
        "jaxwb.theory.distillation.sampling:copy_fraction",
        lambda f: lambda samples, X, threshold=1.0 / 3.0: f(samples, X, 0.5),
        "a copy declared at d1/d2 < 1/2 instead of 1/3",
    ),
]
