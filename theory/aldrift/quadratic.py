"""Closed forms of the tempered target for quadratic and separable costs (eq. pT)."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.aldrift.util import as_float


def _check_means(x0, x_star) -> None:
    v.array("x0", x0, ndim=(0, 1))
    v.array("x_star", x_star, ndim=(0, 1))
    try:
        jnp.broadcast_shapes(jnp.shape(x0), jnp.shape(x_star))
    except ValueError as e:
        raise ValueError(f"x_star must have the shape of x0 {jnp.shape(x0)}, got {jnp.shape(x_star)}") from e


def quadratic_tempered(
    x0: Float[ArrayLike, " n"], mu0: float, x_star: Float[ArrayLike, " n"], mu_d: float, T: float
) -> tuple[Float[ArrayLike, " n"], Float[ArrayLike, ""]]:
    """p_T for d = mu_d/2 ||x - x*||^2, L0 = N(x0, I/mu0) (eq. pT): returns (mean (n,), var scalar)."""
    _check_means(x0, x_star)
    v.positive("mu0", mu0)
    v.positive("mu_d", mu_d)
    v.nonnegative("T", T)
    prec = mu0 + T * mu_d
    return (mu0 * as_float(x0) + T * mu_d * as_float(x_star)) / prec, 1.0 / prec


def quadratic_expected_cost(
    x0: Float[ArrayLike, " n"], mu0: float, x_star: Float[ArrayLike, " n"], mu_d: float, T: float
) -> Float[ArrayLike, ""]:
    """E_{p_T}[d] = mu_d/2 (n / (mu0 + T mu_d) + ||mean_T - x*||^2) (eq. pT); x0, x_star shape (n,)."""
    mean, var = quadratic_tempered(x0, mu0, x_star, mu_d, T)
    n = jnp.shape(jnp.atleast_1d(x0))[-1]
    return 0.5 * mu_d * (n * var + jnp.sum((mean - as_float(x_star)) ** 2, axis=-1))


def separable_tempered_moments(
    cost1d, x0: float, mu0: float, tau: float, grid: Float[ArrayLike, " G"]
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Exact per-coordinate mean and E[cost1d] of p_tau ∝ exp(-mu0/2 (x - x0)^2 - tau cost1d(x)) by quadrature
    on the 1-D ``grid`` (G,). A separable cost d(x) = sum_i cost1d(x_i) with an isotropic Gaussian prior makes
    p_tau a product of these 1-D laws, so E[x] and E[d] = sum_i E[cost1d] follow exactly. Returns (mean, Ecost)."""
    v.finite("x0", x0)
    v.positive("mu0", mu0)
    v.nonnegative("tau", tau)
    v.array("grid", grid, ndim=1)
    grid = as_float(grid)
    logw = -0.5 * mu0 * (grid - x0) ** 2 - tau * cost1d(grid)
    p = jnp.exp(logw - jnp.max(logw))
    p = p / jnp.sum(p)
    return jnp.sum(p * grid), jnp.sum(p * cost1d(grid))
