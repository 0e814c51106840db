"""Coverage diagnostics (coarse learnability) and importance ESS, sampled and closed form (eq. ESS)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from jaxtyping import Array, ArrayLike, Float

from jaxwb.theory import validate as v
from jaxwb.theory.aldrift.util import as_float, check_log_density


def _check_pair(log_p, log_L) -> None:
    check_log_density("log_p", log_p)
    v.array("log_L", log_L, min_ndim=1)  # finite: L > 0 on the grid, or the ratio is infinite
    if np.ndim(log_p) < 1:
        raise ValueError(f"log_p must have a grid axis (..., G), got shape {np.shape(log_p)}")
    try:
        np.broadcast_shapes(np.shape(log_p), np.shape(log_L))
    except ValueError as e:
        raise ValueError(f"log_L must broadcast with log_p {np.shape(log_p)}, got {np.shape(log_L)}") from e


def log_coverage_sup(log_p: Float[ArrayLike, "*b G"], log_L: Float[ArrayLike, "*b G"]) -> Float[Array, "*b"]:
    """log sup_grid p/L: the largest log ratio over grid values log_p (..., G), log_L (..., G) -> (...).
    log_p may hold -inf (p = 0 there); log_L must be finite (L > 0 on the grid)."""
    _check_pair(log_p, log_L)
    log_p, log_L = as_float(log_p), as_float(log_L)
    return jnp.max(log_p - log_L, axis=-1)


def coverage_tail_mass(
    log_p: Float[ArrayLike, "*b G"], log_L: Float[ArrayLike, "*b G"], dx: float, K: float
) -> Float[Array, "*b"]:
    """Pr_{s~p}[p(s)/L(s) > K] by a Riemann sum on a uniform 1-D grid of spacing dx. (..., G) -> (...)."""
    _check_pair(log_p, log_L)
    v.positive("K", K)
    v.positive("dx", dx)
    log_p, log_L = as_float(log_p), as_float(log_L)
    return jnp.sum(jnp.exp(log_p) * (log_p - log_L > jnp.log(K)), axis=-1) * dx


def gaussian_log_sup_ratio(
    m1: Float[ArrayLike, "*b"], s1: Float[ArrayLike, "*b"], m2: Float[ArrayLike, "*b"], s2: Float[ArrayLike, "*b"]
) -> Float[Array, "*b"]:
    """log sup_x N(x; m1, s1^2) / N(x; m2, s2^2) in 1-D (closed form): finite iff s2 > s1 (or equal means
    and variances). For s2 > s1: log(s2/s1) + (m1 - m2)^2 / (2 (s2^2 - s1^2)); +inf if s2 < s1 (or s2 = s1 with
    different means): the exact value (the ratio is unbounded), not an overflow."""
    v.finite("m1", m1)
    v.positive("s1", s1)
    v.finite("m2", m2)
    v.positive("s2", s2)
    m1, s1, m2, s2 = as_float(m1), as_float(s1), as_float(m2), as_float(s2)
    gap = s2**2 - s1**2
    finite = jnp.log(s2 / s1) + (m1 - m2) ** 2 / (2.0 * jnp.where(gap > 0, gap, 1.0))
    same = (gap == 0) & (m1 == m2)
    return jnp.where(gap > 0, finite, jnp.where(same, 0.0, jnp.inf))


def gaussian_importance_ess(
    mean_p: Float[ArrayLike, "*b n"],
    var_p: Float[ArrayLike, "*b"],
    mean_q: Float[ArrayLike, "*b n"],
    var_q: Float[ArrayLike, "*b"],
    n: int,
    mean_var: Float[ArrayLike, "*b"] = 0.0,
) -> Float[Array, "*b"]:
    """Population importance ESS fraction 1/E_q[(p/q)^2] (eq. ESS) for target p = N(mean_p, var_p I_n) and
    proposal q = N(mean_q, var_q I_n): the limit of ``importance_ess`` over N -> inf proposals. Per coordinate
        E_q[(p/q)^2] = var_q / (sqrt(var_p) sqrt(2 var_q - var_p)) exp((mean_p - mean_q)^2 / (2 var_q - var_p)),
    finite iff var_q > var_p / 2 (the fraction is 0 otherwise). ``mean_var`` > 0 averages the result over a
    random proposal mean mean_q + N(0, mean_var I) (a mean fitted on samples): the exponential factor becomes
    (1 + 2 mean_var/D)^(-1/2) exp(-(mean_p - mean_q)^2 / (D + 2 mean_var)) per coordinate, D = 2 var_q - var_p.
    mean_p, mean_q: (..., n), or (..., 1) / scalars for the same value in every coordinate; returns (...)."""
    v.positive_int("n", n)
    v.positive("var_p", var_p)
    v.positive("var_q", var_q)
    v.nonnegative("mean_var", mean_var)
    v.finite("mean_p", mean_p)
    v.finite("mean_q", mean_q)
    vp, vq, mv = as_float(var_p), as_float(var_q), as_float(mean_var)
    D = 2.0 * vq - vp
    Ds = jnp.where(D > 0, D, 1.0)
    delta2 = jnp.atleast_1d(as_float(mean_p) - as_float(mean_q)) ** 2
    sq = jnp.sum(jnp.broadcast_to(delta2, jnp.broadcast_shapes(delta2.shape, (n,))), axis=-1)
    log_ess = (
        0.5 * n * (jnp.log(vp) + jnp.log(Ds))
        - n * jnp.log(vq)
        - 0.5 * n * jnp.log1p(2.0 * mv / Ds)
        - sq / (Ds + 2.0 * mv)
    )
    return jnp.where(D > 0, jnp.exp(log_ess), 0.0)


def importance_ess(log_w: Float[ArrayLike, "*N"]) -> Float[Array, ""]:
    """Kish effective sample size fraction (sum w)^2 / (N sum w^2) of importance weights given as logs (any
    shape, N = their count); 1 when the proposal is the target, ~1/E_q[(p/q)^2] otherwise. Entries may be -inf
    (weight 0) but not all of them (the fraction is undefined then)."""
    check_log_density("log_w", log_w)
    v.check("log_w", log_w, lambda a: (a > -np.inf).any(), "not all -inf (some weight > 0)")
    lw = jnp.ravel(as_float(log_w))
    return jnp.exp(2.0 * logsumexp(lw) - logsumexp(2.0 * lw)) / lw.size
