"""The sweepable Monte-Carlo rows: one run of a (lr, beta, gamma, key) row of the mini-batch momentum method or
of coordinate descent (seeds and configurations vmapped by ``jaxwb.sims.core.sweep.sweep``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxwb.theory import interpolation as ip


def mc_row(row, *, problem, batch_size, steps, record_every):
    x0 = jnp.zeros_like(problem.x_star)
    errs, div = ip.run_jit(
        problem, x0, row["lr"], row["beta"], row["gamma"], row["key"], batch_size, steps, record_every
    )
    return errs, div


def cd_row(row, *, problem, batch_size, steps, record_every):
    x0 = jnp.zeros_like(problem.x_star)
    return ip.coordinate_descent_jit(
        problem.A,
        problem.b,
        problem.x_star,
        x0,
        row["lr"],
        row["beta"],
        row["gamma"],
        row["key"],
        batch_size,
        steps,
        record_every,
    )
